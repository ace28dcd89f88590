// MQTTClient: a small async wrapper around libmosquitto's threaded client.
//
// - One libmosquitto instance per client and one network thread running mosquitto_loop_forever,
//   which does all I/O and reconnects with back-off by itself. We start that thread ourselves
//   (instead of mosquitto_loop_start) so that we learn when, and why, the loop ends for good.
// - Incoming messages and connection events are delivered through AsyncStreams. The messages are
//   bounded without loss: while `inboundBuffer` of them wait for the consumer, the network thread
//   waits for it (InboundWindow.swift), and the broker holds the rest back.
// - Subscriptions are remembered and re-sent from the connect callback after every (re)connect.
// - Refused credentials, TLS and protocol errors end libmosquitto's loop for good: the client emits
//   `.failed`, finishes both streams, and every waiter throws. Build a new client to retry.

import CMosquitto
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// mosquitto_lib_init is not thread safe: run it exactly once per process (Swift globals are
/// initialised lazily and atomically).
private let mosquittoLibraryInitialised: Int32 = mosquitto_lib_init()

/// The libmosquitto handle. Every C call made by the public API happens under this lock, so that
/// stop()/deinit cannot destroy the handle while another task is using it. Callbacks never take it.
private struct Handle: @unchecked Sendable {  // only touched under the Mutex (and in init, before publication)
    var mosq: OpaquePointer?
    var started = false
    /// The network thread, until joined.
    var thread: pthread_t?
}

/// One connection to an MQTT broker through libmosquitto, with its own network thread; reconnects by itself until stopped.
public final class MQTTClient: Sendable {
    /// Every incoming message, in arrival order. Single consumer. Note: cancelling the task that is
    /// iterating it finishes it — keep one long-lived consumer task. While `options.inboundBuffer`
    /// messages wait to be taken, the network thread waits (see ``MQTTMessages``).
    public let messages: MQTTMessages
    /// `.connected` / `.disconnected` on every change, `.failed` once when the client dies.
    public let connectionEvents: AsyncStream<MQTTConnectionEvent>
    /// The options it was made with (applied before the first connect).
    public let options: MQTTOptions

    let core: MQTTClientCore
    private let handle: Mutex<Handle>
    /// Asked right before each message is handed to libmosquitto (``setPublishGate(_:)``).
    private let gate = Mutex<(@Sendable () -> Bool)?>(nil)
    private let withheldCount = Atomic<UInt64>(0)

    /// Makes the libmosquitto instance and applies `options`; connects only on `start()`. Throws `MQTTError` for options libmosquitto refuses.
    public init(options: MQTTOptions) throws {
        _ = mosquittoLibraryInitialised
        self.options = options
        // Unbounded as a stream: the window bounds it (the network thread waits for room).
        let (messages, messageSink) = AsyncStream<MQTTMessage>.makeStream(bufferingPolicy: .unbounded)
        let (events, eventSink) = AsyncStream<MQTTConnectionEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let window = InboundWindow(capacity: options.inboundBuffer)
        // Finished (stop, failure) or its consumer cancelled: the network thread must not wait for it.
        messageSink.onTermination = { _ in window.close() }
        self.messages = MQTTMessages(stream: messages, window: window)
        self.connectionEvents = events
        let core = MQTTClientCore(options: options, messageSink: messageSink, inbound: window, eventSink: eventSink)
        self.core = core

        func invalid(_ detail: String) -> MQTTError { core.error(.invalidArgument, detail) }
        guard !options.clientId.isEmpty || options.cleanSession else {
            throw invalid("a persistent session (cleanSession false) needs a client id")
        }
        guard options.keepAlive >= 5, options.keepAlive <= 65535 else {
            throw invalid("keepAlive must be between 5 and 65535 seconds (got \(options.keepAlive))")
        }
        guard (1...65535).contains(options.port) else { throw invalid("port \(options.port) is out of range") }
        if let will = options.will, !(0...2).contains(will.qos) { throw invalid("will QoS must be 0, 1 or 2") }

        // libmosquitto's `obj` holds a +1 retain on the core, released right after mosquitto_destroy.
        let token = Unmanaged.passRetained(core).toOpaque()
        guard
            let mosq = mosquitto_new(
                options.clientId.isEmpty ? nil : options.clientId,
                options.cleanSession, token)
        else {
            Unmanaged<MQTTClientCore>.fromOpaque(token).release()
            throw core.error(.library, "mosquitto_new failed: \(String(cString: strerror(errno)))")
        }
        self.handle = Mutex(Handle(mosq: mosq))

        do {
            try Self.configure(mosq, options: options, core: core)
        } catch {
            mosquitto_destroy(mosq)
            handle.withLock { $0.mosq = nil }
            Unmanaged<MQTTClientCore>.fromOpaque(token).release()
            throw error
        }
    }

    /// Sets how long the network loop waits before reconnecting, from its next disconnect on
    /// (libmosquitto counts its back-off from the last successful connect, so a connection that
    /// dies right after each CONNACK is retried at the shortest delay unless the caller widens it).
    public func setReconnectDelay(_ delay: MQTTOptions.ReconnectDelay) {
        handle.withLock { h in
            guard let mosq = h.mosq else { return }
            let (minSeconds, maxSeconds) = Self.seconds(delay)
            _ = mosquitto_reconnect_delay_set(mosq, minSeconds, maxSeconds, delay.exponential)
        }
    }

    static func seconds(_ delay: MQTTOptions.ReconnectDelay) -> (UInt32, UInt32) {
        let minSeconds = max(1, UInt32(delay.min.secondsDouble.rounded(.up)))
        return (minSeconds, max(minSeconds, UInt32(min(delay.max.secondsDouble.rounded(.up), 86_400))))
    }

    private static func configure(_ mosq: OpaquePointer, options: MQTTOptions, core: MQTTClientCore) throws {
        func check(_ rc: Int32, _ what: String, kind: MQTTError.Kind = .invalidArgument) throws {
            if rc != 0 {
                throw core.error(kind, "\(what): \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        let version: Int32 = options.protocolVersion == .v5 ? Int32(MQTT_PROTOCOL_V5) : Int32(MQTT_PROTOCOL_V311)
        try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, version), "protocol version")
        // Small packets (a PUBACK, then an answer) must not wait for the broker's delayed ACK (Nagle).
        try check(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")

        mosquitto_connect_v5_callback_set(mosq, mqttOnConnect)
        mosquitto_disconnect_v5_callback_set(mosq, mqttOnDisconnect)
        mosquitto_publish_v5_callback_set(mosq, mqttOnPublish)
        mosquitto_subscribe_v5_callback_set(mosq, mqttOnSubscribe)
        mosquitto_message_v5_callback_set(mosq, mqttOnMessage)
        mosquitto_log_callback_set(mosq, mqttOnLog)

        if options.username != nil || options.password != nil {
            try check(mosquitto_username_pw_set(mosq, options.username, options.password), "username/password")
        }
        if let will = options.will {
            let rc = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set(
                    mosq, will.topic, Int32(bytes.count), bytes.baseAddress,
                    Int32(will.qos), will.retain)
            }
            try check(rc, "last will on \(will.topic)")
        }
        if let tls = options.tls {
            if tls.caFile == nil && tls.caPath == nil {
                try check(mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "TLS: use OS certificates", kind: .tls)
            }
            try check(
                mosquitto_tls_set(mosq, tls.caFile, tls.caPath, tls.certFile, tls.keyFile, nil),
                "TLS settings (CA file, certificate, key)", kind: .tls)
            if tls.insecure {
                try check(mosquitto_tls_insecure_set(mosq, true), "TLS insecure mode", kind: .tls)
            }
        }
        let delay = options.reconnectDelay
        let (minSeconds, maxSeconds) = seconds(delay)
        try check(mosquitto_reconnect_delay_set(mosq, minSeconds, maxSeconds, delay.exponential), "reconnect delay")

        if options.protocolVersion == .v5 && !options.cleanSession {
            // MQTT 5 ends a session at disconnect unless CONNECT carries a Session Expiry Interval.
            // libmosquitto only accepts CONNECT properties through the *blocking*
            // mosquitto_connect_bind_v5, which stores a copy of them (and re-sends it on every
            // reconnect, also for mosquitto_connect_async) before it validates the other arguments.
            // We call it with an invalid keepalive (1 s < 5 s minimum): it stores the properties and
            // returns MOSQ_ERR_INVAL without touching the network. start() then connects
            // asynchronously with the stored properties.
            var props: OpaquePointer?
            defer { mosquitto_property_free_all(&props) }
            try check(
                mosquitto_property_add_int32(
                    &props, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue),
                    options.sessionExpiryInterval), "session expiry")
            let rc = mosquitto_connect_bind_v5(mosq, options.host, Int32(options.port), 1, nil, props)
            if rc != Int32(MOSQ_ERR_INVAL.rawValue) {
                throw core.error(
                    .library,
                    "unexpected answer from libmosquitto while storing CONNECT properties: \(String(cString: mosquitto_strerror(rc)))")
            }
        }
    }

    deinit {
        // Not stopped: tear down without DISCONNECT (the broker publishes our will, if any).
        hardShutdown(reason: "client released without stop()")
    }

    /// True while the broker has accepted the connection (between CONNACK and the next disconnect).
    public var isConnected: Bool { core.isConnected }

    /// How many messages this client received from the broker and published (sent, or queued by
    /// libmosquitto while disconnected) since it was made. Cheap: two relaxed atomic loads.
    public var traffic: MQTTTraffic {
        MQTTTraffic(
            received: core.received.load(ordering: .relaxed), published: core.published.load(ordering: .relaxed),
            dropped: core.dropped.load(ordering: .relaxed))
    }

    /// Connects in the background (mosquitto_connect_async, then a thread running
    /// mosquitto_loop_forever). Returns at once, also when the broker is down: the loop keeps retrying
    /// with back-off. (A host *name* is resolved synchronously here; use an address to never block.)
    ///
    /// Why not mosquitto_loop_start: in libmosquitto 2.0.11, when connect_async fails synchronously
    /// (nothing listening on a local port, DNS failure) the handle stays in its "new" state and the
    /// loop_start thread waits for that state to change forever, never retrying. And when its loop
    /// ends for good (e.g. a TLS handshake failure) it does so silently, without any callback.
    /// Running loop_forever on our own thread fixes both: it retries from any state, and we see it return.
    public func start() throws {
        try handle.withLock { h in
            guard let mosq = h.mosq else { throw core.error(.stopped, "start() after stop()") }
            guard !h.started else { return }
            // Calls from other threads (publish, subscribe) must wake the loop, not write themselves.
            _ = mosquitto_threaded_set(mosq, true)
            let rc = mosquitto_connect_async(mosq, options.host, Int32(options.port), Int32(options.keepAlive))
            if rc == Int32(MOSQ_ERR_INVAL.rawValue) || rc == Int32(MOSQ_ERR_NOT_SUPPORTED.rawValue) {
                throw core.error(.invalidArgument, "cannot connect: \(String(cString: mosquitto_strerror(rc)))")
            }
            if rc != 0 {
                // Broker down, DNS failure, ...: loop_forever retries after the reconnect delay.
                let problem = Self.describe(rc)
                core.state.withLock { $0.lastProblem = problem }
            }
            let context = Unmanaged.passRetained(
                LoopThreadContext(
                    mosq: mosq, core: core, timeoutMilliseconds: Int32(min(options.keepAlive, 60) * 1000),
                    threadName: Self.threadName(clientId: options.clientId))
            ).toOpaque()
            var thread = pthread_t()
            let created = pthread_create(&thread, nil, mqttLoopThreadMain, context)
            if created != 0 {
                Unmanaged<LoopThreadContext>.fromOpaque(context).release()
                throw core.error(.library, "cannot start the network thread: \(String(cString: strerror(created)))")
            }
            h.thread = thread
            h.started = true
        }
    }

    /// The network thread's name in `top -H`, `ps -L` and profiles: `mqtt:` and as much of the
    /// client id as fits the 15 bytes Linux keeps (whole characters only).
    public static func threadName(clientId: String) -> String {
        var name = "mqtt:"
        for character in clientId {
            guard name.utf8.count + character.utf8.count <= 15 else { break }
            name.append(character)
        }
        return name
    }

    private static func describe(_ rc: Int32) -> String {
        rc == Int32(MOSQ_ERR_ERRNO.rawValue) ? String(cString: strerror(errno)) : String(cString: mosquitto_strerror(rc))
    }

    /// Returns once connected and the subscriptions sent on connecting are acknowledged by the broker
    /// (so a message published to them from now on is delivered); throws MQTTError for refused
    /// credentials, TLS failure, unreachable broker or timeout. Never hangs longer than `timeout`.
    public func waitUntilConnected(timeout: Duration) async throws {
        try await core.waitUntilConnected(timeout: timeout)
    }

    /// Remembered and re-sent after every reconnect. Allowed before start().
    ///
    /// - Parameters:
    ///   - filter: The topic filter.
    ///   - qos: 0, 1 or 2.
    ///   - retainAsPublished: MQTT 5: whether live messages on this subscription keep the retain
    ///     flag they were published with (true), or carry it only when the broker sends a stored
    ///     retained message on subscribing (false). Nil: ``MQTTOptions/retainAsPublished``.
    /// - Throws: `MQTTError` for a bad QoS or filter, after ``stop()``, or when the request cannot be sent.
    public func subscribe(_ filter: String, qos: Int, retainAsPublished: Bool? = nil) throws {
        guard (0...2).contains(qos) else { throw core.error(.invalidArgument, "QoS must be 0, 1 or 2 (got \(qos))") }
        guard mosquitto_sub_topic_check(filter) == 0 else {
            throw core.error(.invalidArgument, "invalid topic filter \"\(filter)\"")
        }
        let options = core.subscribeOptions(retainAsPublished: retainAsPublished)
        core.state.withLock { s in
            if let i = s.subscriptions.firstIndex(where: { $0.filter == filter }) {
                s.subscriptions[i].qos = Int32(qos)
                s.subscriptions[i].options = options
            } else {
                s.subscriptions.append((filter, Int32(qos), options))
            }
        }
        guard core.isConnected else { return }  // on_connect will send it
        try handle.withLock { h in
            guard let mosq = h.mosq else { throw core.error(.stopped, "subscribe after stop()") }
            let rc = mosquitto_subscribe_v5(mosq, nil, filter, Int32(qos), options, nil)
            if rc != 0 && rc != Int32(MOSQ_ERR_NO_CONN.rawValue) {
                throw core.error(.library, "subscribe \(filter): \(String(cString: mosquitto_strerror(rc)))")
            }
        }
    }

    /// Forgets the subscription (it is not re-sent on reconnect) and unsubscribes when connected; throws `MQTTError` when the request cannot be sent.
    public func unsubscribe(_ filter: String) throws {
        core.state.withLock { s in s.subscriptions.removeAll { $0.filter == filter } }
        guard core.isConnected else { return }
        try handle.withLock { h in
            guard let mosq = h.mosq else { throw core.error(.stopped, "unsubscribe after stop()") }
            let rc = mosquitto_unsubscribe_v5(mosq, nil, filter, nil)
            if rc != 0 && rc != Int32(MOSQ_ERR_NO_CONN.rawValue) {
                throw core.error(.library, "unsubscribe \(filter): \(String(cString: mosquitto_strerror(rc)))")
            }
        }
    }

    /// Sets the question every publish asks at the moment it would be handed to libmosquitto:
    /// false holds the message back (``MQTTError/Kind/withheld``; nothing is sent, nothing queued).
    /// A hot standby's active hub gates on its lease, read on the monotonic clock, so a process
    /// that was paused past its lease sends nothing the instant it runs again. ``stop(finalMessage:ackTimeout:)``'s
    /// final message and ``publishPastGate(_:_:retain:)`` pass it.
    public func setPublishGate(_ gate: (@Sendable () -> Bool)?) { self.gate.withLock { $0 = gate } }

    /// How many publishes the gate held back since the client was made.
    public var withheldPublishes: UInt64 { withheldCount.load(ordering: .relaxed) }

    /// A QoS 1 publish the gate does not hold back: the hub's own last word (`offline` when it
    /// steps down with no other instance active), never state or answers.
    public func publishPastGate(_ topic: String, _ payload: [UInt8], retain: Bool) throws {
        _ = try publish(
            topic, payload, qos: 1, retain: retain, responseTopic: nil, correlationData: nil, userProperties: [], register: false,
            pastGate: true)
    }

    /// Queues a message and returns its message id. QoS 1/2 messages are kept by libmosquitto while
    /// disconnected and sent after reconnect; QoS 0 throws `.notConnected` while disconnected.
    /// `userProperties` (MQTT 5 only; ignored with 3.1.1) go with the message, in order.
    @discardableResult
    public func publish(
        _ topic: String, _ payload: [UInt8], qos: Int = 0, retain: Bool = false,
        responseTopic: String? = nil, correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = []
    ) throws -> Int32 {
        try publish(
            topic, payload, qos: qos, retain: retain, responseTopic: responseTopic, correlationData: correlationData,
            userProperties: userProperties, register: false
        ).mid
    }

    /// Publishes now, and tells `whenAcknowledged` once what became of the message: success when the
    /// broker acknowledged it (QoS 1/2: PUBACK/PUBCOMP; QoS 0: written to the socket), across
    /// reconnects; `.publishRejected` for an MQTT 5 failure reason code; `.stopped` (or why the
    /// client died) if it stops first. No task waits for it: `whenAcknowledged` runs on the client's
    /// network thread or on the thread that stops the client: it must be quick and must not call
    /// into this client.
    /// - Throws: as ``publish(_:_:qos:retain:responseTopic:correlationData:)``; `whenAcknowledged`
    ///   is then never called.
    public func publish(
        _ topic: String, _ payload: [UInt8], qos: Int, retain: Bool = false,
        whenAcknowledged: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) throws {
        _ = try publish(
            topic, payload, qos: qos, retain: retain, responseTopic: nil, correlationData: nil, userProperties: [], register: true,
            completion: whenAcknowledged)
    }

    /// `register`: the message id is registered for `PublishAcknowledgements.wait` (or with its
    /// `completion`) in the same critical section as the publish (so its acknowledgement cannot be missed).
    private func publish(
        _ topic: String, _ payload: [UInt8], qos: Int, retain: Bool, responseTopic: String?,
        correlationData: [UInt8]?, userProperties: [MQTTUserProperty], register: Bool,
        completion: PublishAcknowledgements.Completion? = nil, pastGate: Bool = false
    ) throws -> (mid: Int32, token: UInt64) {
        guard (0...2).contains(qos) else { throw core.error(.invalidArgument, "QoS must be 0, 1 or 2 (got \(qos))") }
        if let correlationData, correlationData.count > Int(UInt16.max) {
            throw core.error(.invalidArgument, "correlation data is longer than 65535 bytes")
        }
        let gate = pastGate ? nil : self.gate.withLock { $0 }
        return try handle.withLock { h in
            guard let mosq = h.mosq else { throw core.error(.stopped, "publish after stop()") }
            // Asked last, just before the message is handed over: a pause before this line is seen.
            if let gate, !gate() {
                withheldCount.add(1, ordering: .relaxed)
                throw core.error(.withheld, "\(topic): this hub may not speak now (its lease is not confirmed)")
            }
            // Every QoS 1/2 message takes its place in the line of its message id, so that an
            // acknowledgement is told to the message it belongs to (see `PublishAcknowledgements`).
            if register || qos > 0 {
                return try core.acks.publishRegistered(tracked: register, completion: completion) {
                    try publish(
                        mosq, topic, payload, qos: qos, retain: retain, responseTopic: responseTopic, correlationData: correlationData,
                        userProperties: userProperties)
                }
            }
            return (
                try publish(
                    mosq, topic, payload, qos: qos, retain: retain, responseTopic: responseTopic, correlationData: correlationData,
                    userProperties: userProperties),
                0
            )
        }
    }

    /// mosquitto_publish_v5, under the handle lock.
    private func publish(
        _ mosq: OpaquePointer, _ topic: String, _ payload: [UInt8], qos: Int, retain: Bool,
        responseTopic: String?, correlationData: [UInt8]?, userProperties: [MQTTUserProperty]
    ) throws -> Int32 {
        var props: OpaquePointer?
        defer { mosquitto_property_free_all(&props) }
        if options.protocolVersion == .v5 {
            if let responseTopic {
                let rc = mosquitto_property_add_string(&props, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), responseTopic)
                if rc != 0 { throw core.error(.invalidArgument, "response topic: \(String(cString: mosquitto_strerror(rc)))") }
            }
            if let correlationData {
                let rc = correlationData.withUnsafeBytes { bytes in
                    mosquitto_property_add_binary(
                        &props, Int32(MQTT_PROP_CORRELATION_DATA.rawValue),
                        bytes.baseAddress, UInt16(bytes.count))
                }
                if rc != 0 { throw core.error(.invalidArgument, "correlation data: \(String(cString: mosquitto_strerror(rc)))") }
            }
            for property in userProperties {
                let rc = mosquitto_property_add_string_pair(&props, Int32(MQTT_PROP_USER_PROPERTY.rawValue), property.name, property.value)
                if rc != 0 {
                    throw core.error(.invalidArgument, "user property \(property.name): \(String(cString: mosquitto_strerror(rc)))")
                }
            }
        }
        var mid: Int32 = 0
        let rc = payload.withUnsafeBytes { bytes in
            mosquitto_publish_v5(
                mosq, &mid, topic, Int32(bytes.count), bytes.baseAddress,
                Int32(qos), retain, props)
        }
        switch rc {
        case 0:
            core.published.add(1, ordering: .relaxed)
            return mid
        case Int32(MOSQ_ERR_NO_CONN.rawValue) where qos > 0:
            core.published.add(1, ordering: .relaxed)
            return mid  // queued by libmosquitto, sent after reconnect
        case Int32(MOSQ_ERR_NO_CONN.rawValue):
            throw core.error(.notConnected, "QoS 0 message to \(topic) dropped")
        case Int32(MOSQ_ERR_INVAL.rawValue), Int32(MOSQ_ERR_MALFORMED_UTF8.rawValue):
            throw core.error(.invalidArgument, "cannot publish to \"\(topic)\": \(String(cString: mosquitto_strerror(rc)))")
        case Int32(MOSQ_ERR_PAYLOAD_SIZE.rawValue), Int32(MOSQ_ERR_OVERSIZE_PACKET.rawValue):
            throw core.error(.invalidArgument, "payload of \(payload.count) bytes for \(topic) is too large")
        default:
            throw core.error(.library, "publish to \(topic): \(String(cString: mosquitto_strerror(rc)))")
        }
    }

    /// Publishes and returns when the broker acknowledged it (QoS 1/2: PUBACK/PUBCOMP; QoS 0: when
    /// written to the socket). QoS 1/2 wait across reconnects unless `timeout` is given.
    /// With MQTT 5 a failure reason code (e.g. ACL "not authorized") throws `.publishRejected`.
    public func publishAndWait(
        _ topic: String, _ payload: [UInt8], qos: Int = 0, retain: Bool = false,
        responseTopic: String? = nil, correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = [],
        timeout: Duration? = nil
    ) async throws {
        try await publishTracked(
            topic, payload, qos: qos, retain: retain, responseTopic: responseTopic,
            correlationData: correlationData, userProperties: userProperties
        ).acknowledged(timeout: timeout)
    }

    /// Publishes now (so that messages published one after another go out in that order) and
    /// returns a handle to wait for the broker's acknowledgement later. Wait on every handle:
    /// its registration is only forgotten once waited for.
    public func publishTracked(
        _ topic: String, _ payload: [UInt8], qos: Int = 0, retain: Bool = false,
        responseTopic: String? = nil, correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = []
    ) throws -> PublishTicket {
        let (mid, token) = try publish(
            topic, payload, qos: qos, retain: retain, responseTopic: responseTopic,
            correlationData: correlationData, userProperties: userProperties, register: true)
        return PublishTicket(core: core, mid: mid, token: token)
    }

    /// Clean shutdown: publish `finalMessage` at QoS 1 and wait (at most `ackTimeout`) for its
    /// acknowledgement, send DISCONNECT (no will), stop the network thread and free libmosquitto.
    /// Idempotent. Both streams finish.
    public func stop(
        finalMessage: (topic: String, payload: [UInt8], retain: Bool)? = nil,
        ackTimeout: Duration = .seconds(3)
    ) async {
        let alreadyStopping = core.state.withLock { s -> Bool in
            defer { s.stopping = true }
            return s.stopping
        }
        if alreadyStopping { return }
        // The network thread must not wait for a consumer now: it sends the final message and the
        // DISCONNECT. What still arrives is handed on, beyond the bound (the thread ends soon).
        core.inbound.close()
        if let finalMessage, core.isConnected {
            do {
                let (mid, token) = try publish(
                    finalMessage.topic, finalMessage.payload, qos: 1, retain: finalMessage.retain, responseTopic: nil,
                    correlationData: nil, userProperties: [], register: true, pastGate: true)
                try? await PublishTicket(core: core, mid: mid, token: token).acknowledged(timeout: ackTimeout)
            } catch {}
        }
        let wasConnected = core.isConnected
        handle.withLock { h in
            if let mosq = h.mosq { _ = mosquitto_disconnect(mosq) }
        }
        if wasConnected {
            // The loop thread writes DISCONNECT, then leaves loop_forever by itself.
            let deadline = ContinuousClock.now + .seconds(2)
            while !core.state.withLock({ $0.loopExited }) && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
        // Not connected: the thread may sleep in its reconnect back-off (up to the max delay), so
        // it is cancelled (it is outside our callbacks then).
        teardown(reason: "stopped by the client")
    }

    /// Drops the connection without DISCONNECT, as if the process had died: the broker publishes
    /// the will. For tests and emergencies; prefer stop().
    public func abort() {
        hardShutdown(reason: "aborted")
    }

    private func hardShutdown(reason: String) {
        core.state.withLock { $0.stopping = true }
        teardown(reason: reason)
    }

    private func teardown(reason: String) {
        core.inbound.close()  // a network thread waiting for room would never be joined
        let destroyed = handle.withLock { h -> Bool in
            guard let mosq = h.mosq else { return false }
            if let thread = h.thread {
                if !core.state.withLock({ $0.loopExited }) {
                    // What mosquitto_loop_stop(force: true) does: cancel (the loop only blocks in
                    // select/connect/nanosleep, all cancellation points), then join. The message
                    // callback disables cancellation while it waits for room or hands a message on.
                    pthread_cancel(thread)
                }
                pthread_join(thread, nil)
                h.thread = nil
            }
            mosquitto_destroy(mosq)  // closes the socket; no DISCONNECT is sent from here
            h.mosq = nil
            return true
        }
        guard destroyed else { return }
        // libmosquitto is gone: release the retain that its `obj` pointer stood for.
        Unmanaged.passUnretained(core).release()
        core.finish(reason: reason)
    }
}

/// One published message whose acknowledgement can be awaited (see `MQTTClient.publishTracked`).
public struct PublishTicket: Sendable {
    let core: MQTTClientCore
    /// The message id libmosquitto gave the publish.
    public let mid: Int32
    let token: UInt64

    /// Returns when the broker acknowledged the message (QoS 1/2: PUBACK/PUBCOMP; QoS 0: written
    /// to the socket); across reconnects unless `timeout` is given. Throws `.publishRejected` for
    /// an MQTT 5 failure reason code, `.stopped` if the client stops first.
    public func acknowledged(timeout: Duration? = nil) async throws {
        let core = self.core, mid = self.mid
        try await core.acks.wait(
            mid: mid, token: token, timeout: timeout,
            timeoutError: { core.error(.timeout, "no acknowledgement for message \(mid) within \(timeout?.secondsDouble ?? 0) s") },
            failure: core.publishFailure)
    }
}
