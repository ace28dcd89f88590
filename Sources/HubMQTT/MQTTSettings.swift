/// How the MQTT surface connects: the broker, the client's identity and credentials, TLS, and the
/// topics it serves under (the configuration's `[mqtt]` table, `HubConfig.MQTT`).
public struct MQTTSettings: Sendable, Equatable {
    public var enabled = true
    public var host = "127.0.0.1"
    public var port = 1883
    public var clientId = "hub"
    public var username: String?
    public var password: String?
    public var baseTopic = "hub"
    public var discoveryPrefix = "homeassistant"
    public var keepAlive = 30
    public var caFile: String?
    public var certFile: String?
    public var keyFile: String?
    public var tlsInsecure = false
    /// The broker user Home Assistant connects as, when its discovery configs should name the
    /// attributed command topics `<base>/from/<client>/...` (`mqtt.attribution_client`); nil: the plain ones.
    public var attributionClient: String?
    public init() {}
}

/// What a base topic or a discovery prefix may be: not empty, no wildcard, no empty level, no NUL.
public enum MQTTNames {
    public static func isValidBase(_ topic: String) -> Bool {
        !topic.isEmpty && !topic.contains("+") && !topic.contains("#") && !topic.hasPrefix("/") && !topic.hasSuffix("/")
            && !topic.contains("//") && !topic.unicodeScalars.contains { $0.value == 0 }
    }
}
