/// How the MQTT surface connects: the broker, the client's identity and credentials, TLS, and the
/// topics it serves under (the configuration's `[mqtt]` table, `HubConfig.MQTT`).
public struct MQTTSettings: Sendable, Equatable {
    /// False runs the hub without a broker (`"mqtt": false`).
    public var enabled = true
    /// The broker's host name or address.
    public var host = "127.0.0.1"
    /// The broker's TCP port.
    public var port = 1883
    /// The MQTT client id (a standby hub adds its instance's name).
    public var clientId = "hub"
    /// The user name, nil to connect without one.
    public var username: String?
    /// The password, with `username`.
    public var password: String?
    /// The topic every hub topic starts with.
    public var baseTopic = "hub"
    /// Home Assistant's discovery prefix.
    public var discoveryPrefix = "homeassistant"
    /// MQTT keep-alive, seconds (at least 5).
    public var keepAlive = 30
    /// The CA certificate file (PEM) that signed the broker's; TLS is on when any of the TLS files is set.
    public var caFile: String?
    /// The client certificate file (PEM), for brokers that require one.
    public var certFile: String?
    /// The client certificate's key file (PEM).
    public var keyFile: String?
    /// Skip the check of the broker certificate's host name (testing only).
    public var tlsInsecure = false
    /// The broker user Home Assistant connects as, when its discovery configs should name the
    /// attributed command topics `<base>/from/<client>/...` (`mqtt.attribution_client`); nil: the plain ones.
    public var attributionClient: String?
    /// The defaults: a local broker on 1883 as `hub`, under `hub/`, no TLS.
    public init() {}
}

/// What a base topic or a discovery prefix may be: not empty, no wildcard, no empty level, no NUL.
public enum MQTTNames {
    /// Whether `topic` may be a base topic or discovery prefix: not empty, no `+` or `#`, no empty level, no NUL.
    public static func isValidBase(_ topic: String) -> Bool {
        !topic.isEmpty && !topic.contains("+") && !topic.contains("#") && !topic.hasPrefix("/") && !topic.hasSuffix("/")
            && !topic.contains("//") && !topic.unicodeScalars.contains { $0.value == 0 }
    }
}
