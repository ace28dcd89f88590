import NIOCore
import NIOPosix
import Synchronization

/// Timing and limits of a plug connection.
struct KasaClientConfig: Sendable {
    var host: String
    var port: Int
    /// Seconds to wait for a connection or for one reply.
    var timeout: Double
    /// Further attempts after a timeout or a dropped connection.
    var retries: Int
    /// Seconds to wait before a retry.
    var retryBackoff: Double
    var maxFrameSize = KasaFrameDecoder.defaultMaxFrameSize
    /// The TP-Link login for a plug that speaks KLAP over HTTP on `port`; nil = the local protocol.
    var klap: KasaKLAPCredentials?

    var endpoint: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The connection to one plug: opened on demand, re-opened after any error, requests serialised on
/// it (one in flight), retried after timeouts. Refusals and unreachable hosts fail fast. With a
/// TP-Link login (`config.klap`) the same requests go over KLAP instead (``KasaKLAPTransport``).
actor KasaClient {
    let config: KasaClientConfig
    private let group: any EventLoopGroup
    private let klap: KasaKLAPTransport?
    private var connection: KasaConnection?
    private var connecting: Task<KasaConnection, any Error>?
    private var isShutDown = false
    private let writes = KasaWriteCounter()
    /// The open connection's channel and whether requests were cancelled, for ``cancelRequests()``
    /// (called from a cancellation handler, outside the actor).
    private nonisolated let cancelling = Mutex<(channel: (any Channel)?, cancelled: Bool)>((nil, false))

    init(config: KasaClientConfig, group: any EventLoopGroup) {
        self.config = config
        self.group = group
        klap = config.klap.map { KasaKLAPTransport(config: config, credentials: $0, group: group) }
    }

    /// KLAP handshakes begun so far (0 for the local protocol), for the tests.
    var klapHandshakes: Int { get async { await klap?.handshakes ?? 0 } }

    /// Sends a JSON payload and returns the reply payload (with its request's place in the order of
    /// writes), with retries; throws `KasaClientError` (or `CancellationError`).
    func request(_ plain: [UInt8]) async throws -> KasaAnswer {
        var retried = 0
        while true {
            var used: KasaConnection?
            do {
                try Task.checkCancellation()
                if cancelling.withLock({ $0.cancelled }) { throw CancellationError() }
                if let klap {
                    if isShutDown { throw KasaClientError.stopped }
                    let reply = try await klap.request(plain)
                    return KasaAnswer(payload: reply, order: writes.next())
                }
                let connection = try await open()
                used = connection
                return try await connection.request(plain, timeout: .nanoseconds(Int64(config.timeout * 1e9)))
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                var failure = KasaClientError.classify(error, endpoint: config.endpoint, host: config.host)
                if case .timeout = failure { failure = .timeout(seconds: config.timeout) }
                await drop(used)
                if failure.isTransient { await klap?.reset() }
                if isShutDown { throw KasaClientError.stopped }
                guard failure.isTransient else { throw failure }
                guard retried < config.retries else {
                    if case .timeout = failure { throw KasaClientError.noAnswer(seconds: config.timeout, retries: retried) }
                    throw failure
                }
                retried += 1
                if case .timeout = failure, config.retryBackoff > 0 {
                    try await Task.sleep(nanoseconds: UInt64(config.retryBackoff * 1e9))
                }
            }
        }
    }

    private func open() async throws -> KasaConnection {
        if isShutDown { throw KasaClientError.stopped }
        if let connection, connection.isActive { return connection }
        if let connecting { return try await connecting.value }
        let config = config, group = group, writes = writes
        // One connect shared by the requests that wait for it (the poll, a switch from the hub's
        // worker); its handle is let go as soon as it ends (`defer` below), never kept finished.
        let task = Task {
            try await KasaConnection.connect(
                host: config.host, port: config.port, group: group,
                timeout: .nanoseconds(Int64(config.timeout * 1e9)),
                maxFrameSize: config.maxFrameSize, writes: writes)
        }
        connecting = task
        defer { connecting = nil }
        let opened = try await task.value
        if isShutDown {
            await opened.close()
            throw KasaClientError.stopped
        }
        connection = opened
        let cancelled = cancelling.withLock { c -> Bool in
            c.channel = opened.channel
            return c.cancelled
        }
        if cancelled { opened.channel.close(promise: nil) }
        return opened
    }

    /// Fails the request in progress at once and every later one (`CancellationError`): the driver's
    /// task was cancelled, and a request must not wait out its timeout and retries.
    nonisolated func cancelRequests() {
        let channel = cancelling.withLock { c -> (any Channel)? in
            c.cancelled = true
            return c.channel
        }
        channel?.close(promise: nil)
    }

    private func drop(_ used: KasaConnection?) async {
        guard let used else { return }
        if connection === used { connection = nil }
        await used.close()
    }

    /// Closes the connection; later requests fail with `.stopped`.
    func shutDown() async {
        isShutDown = true
        connecting?.cancel()
        if let connection {
            self.connection = nil
            await connection.close()
        }
    }
}
