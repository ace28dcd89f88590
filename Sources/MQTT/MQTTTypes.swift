// Public value types of the MQTT client: options, messages, events, errors.

/// How to reach and talk to the broker. Everything here is applied before the first connect.
public struct MQTTOptions: Sendable {
    /// The MQTT protocol version spoken.
    public enum ProtocolVersion: Sendable, Equatable {
        /// MQTT 5: response topic / correlation data, PUBACK reason codes, session expiry.
        case v5
        /// MQTT 3.1.1: the properties are simply absent.
        case v311
    }

    /// TLS settings (`mosquitto_tls_set` / `mosquitto_tls_insecure_set`).
    public struct TLSOptions: Sendable {
        /// PEM file with the CA certificate(s) that signed the broker's certificate.
        public var caFile: String?
        /// Directory of hashed CA certificates (alternative to `caFile`).
        /// When both are nil the operating system's CA store is used.
        public var caPath: String?
        /// Client certificate and key, for brokers that require client certificates.
        public var certFile: String?
        /// The client certificate's private key (PEM), with `certFile`.
        public var keyFile: String?
        /// Skip the host name check of the broker's certificate (testing only).
        public var insecure: Bool

        /// TLS settings; all nil uses the system's CA store.
        public init(
            caFile: String? = nil, caPath: String? = nil, certFile: String? = nil,
            keyFile: String? = nil, insecure: Bool = false
        ) {
            self.caFile = caFile
            self.caPath = caPath
            self.certFile = certFile
            self.keyFile = keyFile
            self.insecure = insecure
        }
    }

    /// Last will: published by the broker when the connection ends without a DISCONNECT.
    public struct Will: Sendable, Equatable {
        /// The topic the will is published on.
        public var topic: String
        /// The will's payload.
        public var payload: [UInt8]
        /// The will's QoS (0, 1 or 2).
        public var qos: Int
        /// Whether the broker retains the will.
        public var retain: Bool

        /// A will, retained at QoS 1 unless told otherwise.
        public init(topic: String, payload: [UInt8], qos: Int = 1, retain: Bool = true) {
            self.topic = topic
            self.payload = payload
            self.qos = qos
            self.retain = retain
        }
    }

    /// Automatic reconnect back-off of libmosquitto's threaded loop.
    /// libmosquitto counts in whole seconds: `min` is rounded up to at least 1 s.
    /// With `exponential`, the n-th consecutive retry waits min * n², capped at `max`.
    public struct ReconnectDelay: Sendable, Equatable {
        /// The first retry's wait (at least 1 s).
        public var min: Duration
        /// The longest wait between retries.
        public var max: Duration
        /// Grow the wait quadratically with consecutive retries (min * n²) rather than keep it at `min`.
        public var exponential: Bool

        /// Back-off from 1 s to 30 s, exponential.
        public init(min: Duration = .seconds(1), max: Duration = .seconds(30), exponential: Bool = true) {
            self.min = min
            self.max = max
            self.exponential = exponential
        }
    }

    /// The broker's host name or address.
    public var host: String
    /// The broker's TCP port.
    public var port: Int
    /// The client id, unique per broker: a second client with the same id takes the session over.
    public var clientId: String
    /// The user name, nil to connect without one.
    public var username: String?
    /// The password, with `username`.
    public var password: String?
    /// Seconds; libmosquitto requires at least 5.
    public var keepAlive: Int
    /// false (default) = persistent session: QoS 1/2 messages for our subscriptions that arrive while
    /// we are away are delivered after we reconnect with the same client id.
    public var cleanSession: Bool
    /// MQTT 5 only, used when `cleanSession` is false: how long the broker keeps the session after
    /// we disconnect (seconds; `UInt32.max` = forever). MQTT 3.1.1 persistent sessions never expire
    /// (unless the broker's `persistent_client_expiration` says otherwise).
    public var sessionExpiryInterval: UInt32
    /// MQTT 5 (default) or 3.1.1.
    public var protocolVersion: ProtocolVersion
    /// TLS to the broker, nil for plain TCP.
    public var tls: TLSOptions?
    /// The last will, nil for none.
    public var will: Will?
    /// How reconnects back off.
    public var reconnectDelay: ReconnectDelay
    /// MQTT 5: ask the broker to keep the retain flag on live deliveries ("retain as published"), so
    /// a receiver can tell a retained publish from a plain one even while subscribed. The default of
    /// every subscription (``MQTTClient/subscribe(_:qos:retainAsPublished:)`` may say otherwise for
    /// one). Off by default.
    public var retainAsPublished = false
    /// Incoming messages `messages` holds at most while its consumer is behind. When it is full, the
    /// arriving message blocks the network thread (back-pressure to the broker) until the consumer
    /// takes one: libmosquitto reads nothing more meanwhile, so the broker's TCP flow control (and
    /// its own queue for this client) holds the rest back, and nothing is dropped. While it waits no
    /// keep-alive ping is sent either: a consumer behind by the whole buffer for longer than 1.5 times
    /// `keepAlive` makes the broker close the connection (its unacknowledged messages are delivered
    /// again after the reconnect). A message is dropped, and counted in ``MQTTClient/traffic``
    /// (`dropped`), only when nobody takes messages any more: the consuming task was cancelled, the
    /// client stopped, or every iterator of `messages` was released (see ``MQTTMessages``).
    public var inboundBuffer = 100_000

    /// Options for one client; the defaults are a local broker on 1883, MQTT 5, persistent session, keep-alive 30 s.
    public init(
        host: String = "127.0.0.1", port: Int = 1883, clientId: String,
        username: String? = nil, password: String? = nil,
        keepAlive: Int = 30, cleanSession: Bool = false,
        sessionExpiryInterval: UInt32 = UInt32.max,
        protocolVersion: ProtocolVersion = .v5,
        tls: TLSOptions? = nil, will: Will? = nil,
        reconnectDelay: ReconnectDelay = ReconnectDelay()
    ) {
        self.host = host
        self.port = port
        self.clientId = clientId
        self.username = username
        self.password = password
        self.keepAlive = keepAlive
        self.cleanSession = cleanSession
        self.sessionExpiryInterval = sessionExpiryInterval
        self.protocolVersion = protocolVersion
        self.tls = tls
        self.will = will
        self.reconnectDelay = reconnectDelay
    }
}

/// One incoming message, copied out of libmosquitto's buffers. The payload is raw bytes.
public struct MQTTMessage: Sendable, Equatable {
    /// The topic it was published on.
    public var topic: String
    /// The payload bytes, as published.
    public var payload: [UInt8]
    /// The QoS it was delivered with (0, 1 or 2).
    public var qos: Int
    /// True when the broker delivered a stored retained message (i.e. because we just subscribed),
    /// false for live traffic (on a subscription with retain as published, a live message keeps the
    /// flag it was published with). The hub ignores retained messages on command topics.
    public var retain: Bool
    /// MQTT 5 request/response properties; always nil with MQTT 3.1.1.
    public var responseTopic: String?
    /// MQTT 5 correlation data, echoed in the response; nil with MQTT 3.1.1 or when absent.
    public var correlationData: [UInt8]?
    /// MQTT 5 user properties, in the order sent (a name may repeat); always empty with MQTT 3.1.1.
    public var userProperties: [MQTTUserProperty]
    /// When libmosquitto handed the message to the client (monotonic), set in the message callback;
    /// nil for a message made by hand. For QoS 1 the library has already queued the PUBACK by then
    /// (libmosquitto 2.0 acknowledges before it calls the application), so this is where the window
    /// between "the broker thinks it is delivered" and "the hub has logged it" starts.
    /// Not part of equality: two deliveries of the same message are the same message.
    public var receivedAt: ContinuousClock.Instant?

    /// A message; `receivedAt` nil for one made by hand.
    public init(
        topic: String, payload: [UInt8], qos: Int = 0, retain: Bool = false,
        responseTopic: String? = nil, correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = [],
        receivedAt: ContinuousClock.Instant? = nil
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
        self.userProperties = userProperties
        self.receivedAt = receivedAt
    }

    /// Equal when every field but `receivedAt` is equal.
    public static func == (a: MQTTMessage, b: MQTTMessage) -> Bool {
        a.topic == b.topic && a.payload == b.payload && a.qos == b.qos && a.retain == b.retain
            && a.responseTopic == b.responseTopic && a.correlationData == b.correlationData && a.userProperties == b.userProperties
    }

    /// The value of the first user property called `name`; nil when there is none.
    public func userProperty(_ name: String) -> String? { userProperties.first { $0.name == name }?.value }
}

/// One MQTT 5 user property: a UTF-8 name and value pair a publisher attached to a message.
public struct MQTTUserProperty: Sendable, Equatable {
    /// The property's name (`cause`).
    public var name: String
    /// The property's value.
    public var value: String
    /// A property `name` = `value`.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A change of the client's connection, in `MQTTClient.connectionEvents`.
public enum MQTTConnectionEvent: Sendable, Equatable {
    /// CONNACK accepted. `sessionPresent`: the broker resumed our persistent session.
    /// Remembered subscriptions have already been re-sent when this is emitted.
    case connected(sessionPresent: Bool)
    /// The connection dropped (or we stopped); libmosquitto reconnects by itself unless we stopped.
    case disconnected(reason: String)
    /// The client is dead for good (refused credentials, TLS or protocol error). Both streams finish
    /// right after this event; build a new `MQTTClient` to try again.
    case failed(String)
}

/// An MQTT failure as a sentence naming the broker and the cause.
public struct MQTTError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong, for callers that act on it (a retry, a message).
    public enum Kind: Sendable, Equatable {
        /// CONNACK "not authorized" (MQTT 3.1.1 code 5 / MQTT 5 code 135).
        case notAuthorized
        /// CONNACK "bad user name or password" (MQTT 3.1.1 code 4 / MQTT 5 code 134).
        case badCredentials
        /// Any other CONNACK refusal (identifier rejected, banned, server unavailable, ...).
        case connectionRefused
        /// The TLS handshake or certificate check failed.
        case tls
        /// No TCP connection could be made (refused, host unknown, network down).
        case unreachable
        /// An operation did not finish within its time limit.
        case timeout
        /// A QoS 0 publish (or other operation) that needs a live connection.
        case notConnected
        /// The broker or the library reported a protocol violation.
        case protocolError
        /// The library refused an option or a request (a bad topic, QoS or size).
        case invalidArgument
        /// MQTT 5 PUBACK/PUBREC with a failure reason code (e.g. not authorized by the ACL).
        case publishRejected
        /// The client was stopped (or aborted) while the operation was waiting.
        case stopped
        /// The client's publish gate (``MQTTClient/setPublishGate(_:)``) held the message back: nothing was sent.
        case withheld
        /// Other libmosquitto error.
        case library
    }

    /// What went wrong.
    public let kind: Kind
    /// The broker's host, for the message.
    public let host: String
    /// The broker's port, for the message.
    public let port: Int
    /// The cause in libmosquitto's or the broker's words.
    public let detail: String

    /// Creates an error.
    public init(kind: Kind, host: String, port: Int, detail: String) {
        self.kind = kind
        self.host = host
        self.port = port
        self.detail = detail
    }

    /// A sentence naming the broker, the cause and, for refusals and TLS, what to check.
    public var description: String {
        let broker = "MQTT broker \(host):\(port)"
        switch kind {
        case .notAuthorized:
            return "\(broker) refused the connection: not authorized (\(detail)); check the MQTT username, password and the broker's ACL"
        case .badCredentials:
            return "\(broker) refused the connection: bad user name or password (\(detail))"
        case .connectionRefused:
            return "\(broker) refused the connection: \(detail)"
        case .tls:
            return "TLS failure with \(broker): \(detail); check the CA file, the certificates and the host name"
        case .unreachable:
            return "\(broker) is unreachable: \(detail)"
        case .timeout:
            return "\(broker): \(detail)"
        case .notConnected:
            return "not connected to \(broker): \(detail)"
        case .protocolError:
            return "MQTT protocol error with \(broker): \(detail)"
        case .invalidArgument:
            return "invalid MQTT request for \(broker): \(detail)"
        case .publishRejected:
            return "\(broker) rejected the publish: \(detail)"
        case .stopped:
            return "MQTT client for \(broker) was stopped: \(detail)"
        case .withheld:
            return "withheld from \(broker): \(detail)"
        case .library:
            return "MQTT client error with \(broker): \(detail)"
        }
    }
}

/// A client's message counts since it was made (``MQTTClient/traffic``).
public struct MQTTTraffic: Sendable, Equatable {
    /// Messages received from the broker.
    public var received: UInt64
    /// Messages published (sent, or queued while disconnected).
    public var published: UInt64
    /// Messages received that nobody took: `messages` was finished (its consuming task cancelled,
    /// the client stopped) or no iterator of it was alive while its buffer (`MQTTOptions.inboundBuffer`) was full.
    public var dropped: UInt64

    /// Counts.
    public init(received: UInt64, published: UInt64, dropped: UInt64 = 0) {
        self.received = received
        self.published = published
        self.dropped = dropped
    }
}
