// The context object handed to libmosquitto as `obj`: connection state, remembered subscriptions,
// waiters, and the stream continuations. Callbacks (MosquittoCallbacks.swift) call into it on the
// library's thread; the public API calls into it from any task. All state sits behind one Mutex that
// is never held while calling into libmosquitto (the loop thread may be waiting for us in a callback).

import CMosquitto
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct CoreState {
    var connected = false
    /// Connected, and the subscriptions sent on connecting are acknowledged (the SUBACK of the last
    /// one: the broker answers a connection's packets in order). Until then a message published to
    /// one of them may still be dropped by the broker, so waiters are not told "connected" yet.
    var awaitingSubscribeAck: Int32?
    /// mosquitto_loop_forever returned: the network thread is done.
    var loopExited = false
    /// stop()/abort() was requested: disconnects are ours, not failures.
    var stopping = false
    /// Streams finished (after a failure or a stop); nothing more is emitted.
    var finished = false
    var failure: MQTTError?
    /// Why the last connection attempt / connection went wrong (for timeout messages).
    var lastProblem: String?
    /// Last error/warning line libmosquitto logged.
    var lastLog: String?
    /// Remembered subscriptions, in the order they were made.
    /// `options`: the MQTT 5 subscription options (retain as published, or none).
    var subscriptions: [(filter: String, qos: Int32, options: Int32)] = []
    var nextWaiterID: UInt64 = 0
    var connectWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
}

final class MQTTClientCore: Sendable {
    let host: String
    let port: Int
    let protocolVersion: MQTTOptions.ProtocolVersion
    let messageSink: AsyncStream<MQTTMessage>.Continuation
    /// The bound of `messages`: the network thread waits in it while the consumer is behind.
    let inbound: InboundWindow
    let eventSink: AsyncStream<MQTTConnectionEvent>.Continuation
    let state = Mutex(CoreState())
    /// Publishes whose acknowledgement someone awaits (publishAndWait, publishTracked).
    let acks = PublishAcknowledgements()
    /// The subscriptions' retain-as-published default (``MQTTOptions/retainAsPublished``).
    let retainAsPublished: Bool
    let protocolIsV5: Bool

    /// The MQTT 5 subscription options for one subscription (0 with MQTT 3.1.1, which has none).
    func subscribeOptions(retainAsPublished: Bool?) -> Int32 {
        protocolIsV5 && (retainAsPublished ?? self.retainAsPublished) ? Int32(MQTT_SUB_OPT_RETAIN_AS_PUBLISHED.rawValue) : 0
    }
    /// Messages received from the broker and handed on (``MQTTClient/traffic``).
    let received = Atomic<UInt64>(0)
    /// Messages sent or queued to send (``MQTTClient/traffic``).
    let published = Atomic<UInt64>(0)
    /// Messages `messages` could not take: its consumer gone (``MQTTClient/traffic``).
    let dropped = Atomic<UInt64>(0)

    init(
        options: MQTTOptions,
        messageSink: AsyncStream<MQTTMessage>.Continuation,
        inbound: InboundWindow,
        eventSink: AsyncStream<MQTTConnectionEvent>.Continuation
    ) {
        self.host = options.host
        self.port = options.port
        self.protocolVersion = options.protocolVersion
        self.retainAsPublished = options.retainAsPublished
        self.protocolIsV5 = options.protocolVersion == .v5
        self.messageSink = messageSink
        self.inbound = inbound
        self.eventSink = eventSink
    }

    func error(_ kind: MQTTError.Kind, _ detail: String) -> MQTTError {
        MQTTError(kind: kind, host: host, port: port, detail: detail)
    }

    var isConnected: Bool { state.withLock { $0.connected } }

    // MARK: - Callbacks (library thread)

    func handleConnect(mosq: OpaquePointer, rc: Int32, flags: Int32) {
        if rc == 0 {
            let (subscriptions, stopping) = state.withLock { s in
                s.connected = true
                s.lastProblem = nil
                s.awaitingSubscribeAck = nil
                return (s.subscriptions, s.stopping)
            }
            // Re-subscribe after every (re)connect: a clean session has none, and even a resumed
            // session is cheap to re-confirm. The waiters are told once the last one is acknowledged
            // (`handleSubscribed`, called on this same thread, so never before this returns).
            var lastSent: Int32?
            if !stopping {
                for sub in subscriptions {
                    var mid: Int32 = 0
                    if mosquitto_subscribe_v5(mosq, &mid, sub.filter, sub.qos, sub.options, nil) == 0 { lastSent = mid }
                }
            }
            let waiters = state.withLock { s in
                s.awaitingSubscribeAck = lastSent
                return lastSent == nil ? takeAllWaiters(&s) : []
            }
            eventSink.yield(.connected(sessionPresent: flags & 1 != 0))
            for waiter in waiters { waiter.resume() }
            return
        }
        // Refused. MQTT 3.1.1 codes are 1...5, MQTT 5 reason codes are >= 128.
        let text: String
        let kind: MQTTError.Kind
        if protocolVersion == .v311 {
            text = String(cString: mosquitto_connack_string(rc))
            switch rc {
            case 4: kind = .badCredentials
            case 5: kind = .notAuthorized
            case 1: kind = .protocolError
            default: kind = .connectionRefused
            }
            if rc == 3 {
                // "Server unavailable" is transient; with MQTT 3.1.1 libmosquitto retries by itself.
                state.withLock { $0.lastProblem = "broker answered: \(text)" }
                return
            }
        } else {
            text = String(cString: mosquitto_reason_string(rc))
            switch rc {
            case 134: kind = .badCredentials
            case 135: kind = .notAuthorized
            case 129, 130, 132: kind = .protocolError
            default: kind = .connectionRefused
            }
            // Every MQTT 5 refusal ends libmosquitto's loop for good (MOSQ_ERR_PROTOCOL).
        }
        if state.withLock({ $0.stopping }) { return }
        // Make sure the loop thread stops instead of retrying with the same bad credentials.
        _ = mosquitto_disconnect(mosq)
        fail(error(kind, "broker answered CONNACK \(rc): \(text)"))
    }

    /// libmosquitto's loop_forever returns (the thread ends for good) after these.
    static let fatalLoopErrors: Set<Int32> = [
        MOSQ_ERR_NOMEM.rawValue, MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_INVAL.rawValue,
        MOSQ_ERR_NOT_FOUND.rawValue, MOSQ_ERR_TLS.rawValue, MOSQ_ERR_PAYLOAD_SIZE.rawValue,
        MOSQ_ERR_NOT_SUPPORTED.rawValue, MOSQ_ERR_AUTH.rawValue, MOSQ_ERR_ACL_DENIED.rawValue,
        MOSQ_ERR_UNKNOWN.rawValue, MOSQ_ERR_EAI.rawValue, MOSQ_ERR_PROXY.rawValue
    ].map { Int32($0) }.reduce(into: Set<Int32>()) { $0.insert($1) }

    func handleDisconnect(mosq: OpaquePointer, rc: Int32) {
        let savedErrno = errno
        let (wasConnected, stopping, dead, lastLog) = state.withLock { s in
            let was = s.connected
            s.connected = false
            return (was, s.stopping, s.failure != nil || s.finished, s.lastLog)
        }
        if dead { return }
        if stopping {
            if wasConnected { eventSink.yield(.disconnected(reason: "stopped by the client")) }
            return
        }
        let reason = describeDisconnect(rc, savedErrno: savedErrno)
        if rc < 128 && Self.fatalLoopErrors.contains(rc) {
            let kind: MQTTError.Kind
            switch rc {
            case Int32(MOSQ_ERR_TLS.rawValue): kind = .tls
            case Int32(MOSQ_ERR_PROTOCOL.rawValue): kind = .protocolError
            case Int32(MOSQ_ERR_EAI.rawValue): kind = .unreachable
            case Int32(MOSQ_ERR_AUTH.rawValue): kind = .notAuthorized
            default: kind = .library
            }
            var detail = reason
            if let lastLog, !lastLog.isEmpty { detail += " (\(lastLog))" }
            fail(error(kind, detail))
            return
        }
        state.withLock { $0.lastProblem = reason }
        if wasConnected { eventSink.yield(.disconnected(reason: reason)) }
    }

    /// mosquitto_loop_forever returned on the network thread. Unless we asked for it (stop) or a
    /// failure was already reported (refused CONNACK), this is the loop dying for good -- e.g. a TLS
    /// handshake failure, which libmosquitto reports through no callback at all.
    func handleLoopExit(rc: Int32) {
        let savedErrno = errno
        let (expected, lastLog) = state.withLock { s in
            s.loopExited = true
            s.connected = false
            return (s.stopping || s.failure != nil || s.finished, s.lastLog)
        }
        if expected { return }
        let kind: MQTTError.Kind
        switch rc {
        case Int32(MOSQ_ERR_TLS.rawValue): kind = .tls
        case Int32(MOSQ_ERR_PROTOCOL.rawValue), Int32(MOSQ_ERR_MALFORMED_PACKET.rawValue): kind = .protocolError
        case Int32(MOSQ_ERR_EAI.rawValue): kind = .unreachable
        case Int32(MOSQ_ERR_AUTH.rawValue): kind = .notAuthorized
        default: kind = (lastLog ?? "").contains("OpenSSL") ? .tls : .library
        }
        var detail = "the network loop ended: \(describeDisconnect(rc, savedErrno: savedErrno))"
        if let lastLog, !lastLog.isEmpty { detail += " (\(lastLog))" }
        fail(error(kind, detail))
    }

    func describeDisconnect(_ rc: Int32, savedErrno: Int32) -> String {
        if rc == 0 { return "disconnected" }
        if rc >= 128 {
            return "broker sent DISCONNECT: \(String(cString: mosquitto_reason_string(rc)))"
        }
        if rc == Int32(MOSQ_ERR_ERRNO.rawValue) {
            return String(cString: strerror(savedErrno))
        }
        return String(cString: mosquitto_strerror(rc))
    }

    /// A SUBACK arrived: when it answers the last subscription sent on connecting, the connection is
    /// ready and its waiters are told.
    func handleSubscribed(mid: Int32) {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            guard s.connected, s.awaitingSubscribeAck == mid else { return [] }
            s.awaitingSubscribeAck = nil
            return takeAllWaiters(&s)
        }
        for waiter in waiters { waiter.resume() }
    }

    func handlePublished(mid: Int32, reasonCode: Int32) {
        acks.acknowledged(mid: mid, reasonCode: reasonCode, failure: publishFailure)
    }

    /// MQTT 5 PUBACK/PUBREC reason codes >= 128 are failures (e.g. 135 not authorized by the ACL).
    func publishFailure(_ reasonCode: Int32) -> MQTTError? {
        guard reasonCode >= 128 else { return nil }
        return error(.publishRejected, "reason \(reasonCode): \(String(cString: mosquitto_reason_string(reasonCode)))")
    }

    /// Hands the message on, waiting while `inboundBuffer` messages wait for the consumer (back-pressure
    /// to the broker). Drops it (counted) only when nobody takes messages any more.
    func handleMessage(_ message: MQTTMessage) {
        // The wait is a cancellation point, and teardown cancels a thread that has not left its loop:
        // it must not end this thread inside Swift code (holding locks). A cancel that comes now is
        // acted upon at libmosquitto's next cancellation point, after we return.
        var cancelState: Int32 = 0
        pthread_setcancelstate(Int32(PTHREAD_CANCEL_DISABLE), &cancelState)
        defer { pthread_setcancelstate(cancelState, nil) }
        guard inbound.admit() else {
            dropped.add(1, ordering: .relaxed)
            return
        }
        if case .enqueued = messageSink.yield(message) { return }
        // Finished (stopped, failed, or its consuming task cancelled): nobody will take it.
        inbound.returned()
        dropped.add(1, ordering: .relaxed)
    }

    func handleLog(_ text: String) {
        state.withLock { $0.lastLog = text }
    }

    // MARK: - Failure / shutdown

    /// The client is dead: emit `.failed`, fail every waiter, finish both streams.
    func fail(_ failure: MQTTError) {
        let taken = state.withLock { s -> [CheckedContinuation<Void, any Error>]? in
            if s.failure != nil || s.finished { return nil }
            s.failure = failure
            s.connected = false
            s.finished = true
            return takeAllWaiters(&s)
        }
        guard let taken else { return }
        acks.close(with: failure)
        inbound.close()
        eventSink.yield(.failed(failure.description))
        eventSink.finish()
        messageSink.finish()
        for waiter in taken { waiter.resume(throwing: failure) }
    }

    /// After stop()/abort(): fail pending waiters and finish the streams.
    func finish(reason: String) {
        let (taken, wasConnected) = state.withLock { s -> ([CheckedContinuation<Void, any Error>], Bool) in
            if s.finished { return ([], false) }
            s.finished = true
            let was = s.connected
            s.connected = false
            return (takeAllWaiters(&s), was)
        }
        let stopped = error(.stopped, reason)
        acks.close(with: stopped)
        inbound.close()
        if wasConnected { eventSink.yield(.disconnected(reason: reason)) }
        eventSink.finish()
        messageSink.finish()
        for waiter in taken { waiter.resume(throwing: stopped) }
    }

    private func takeAllWaiters(_ s: inout CoreState) -> [CheckedContinuation<Void, any Error>] {
        let all = Array(s.connectWaiters.values)
        s.connectWaiters = [:]
        return all
    }

    // MARK: - Waiting (any task)

    private func newWaiterID(_ s: inout CoreState) -> UInt64 {
        s.nextWaiterID &+= 1
        return s.nextWaiterID
    }

    func waitUntilConnected(timeout: Duration) async throws {
        let id = state.withLock { newWaiterID(&$0) }
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.timeOutConnectWaiter(id, after: timeout)
        }
        defer { timer.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { s in
                    if s.connected && s.awaitingSubscribeAck == nil { return .success(()) }
                    if let failure = s.failure { return .failure(failure) }
                    if s.finished || s.stopping {
                        return .failure(error(.stopped, "the client was stopped before it connected"))
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    s.connectWaiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { $0.connectWaiters.removeValue(forKey: id) }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func timeOutConnectWaiter(_ id: UInt64, after timeout: Duration) {
        let (waiter, problem) = state.withLock { s in
            (s.connectWaiters.removeValue(forKey: id), s.lastProblem ?? s.lastLog)
        }
        guard let waiter else { return }
        let seconds = timeout.secondsDouble
        let shown = seconds == seconds.rounded() ? "\(Int(seconds))" : "\(seconds)"
        if let problem, !problem.isEmpty {
            let lower = problem.lowercased()
            let unreachable = [
                "refused", "unreachable", "no route", "timed out", "name or service",
                "lookup", "network"
            ].contains { lower.contains($0) }
            waiter.resume(
                throwing: error(
                    unreachable ? .unreachable : .timeout,
                    "not connected after \(shown) s; last error: \(problem)"))
        } else {
            waiter.resume(throwing: error(.timeout, "not connected after \(shown) s (no answer from the broker)"))
        }
    }
}

extension Duration {
    var secondsDouble: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }
}
