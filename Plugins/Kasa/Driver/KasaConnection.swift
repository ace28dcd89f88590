import NIOCore
import NIOPosix
import Synchronization

/// Why a request to a plug failed, in words a person can read (used as the availability reason).
public enum KasaClientError: Error, Equatable, CustomStringConvertible {
    /// The plug refused the TCP connection.
    case refused(endpoint: String)
    /// The plug (or its network) could not be reached; `what` says which step failed.
    case unreachable(endpoint: String, what: String)
    /// The host name did not resolve.
    case unresolved(host: String)
    /// One request got no (complete) answer within `seconds`.
    case timeout(seconds: Double)
    /// No answer after the retries.
    case noAnswer(seconds: Double, retries: Int)
    /// The plug closed the connection.
    case closed
    /// The reply broke the wire protocol (framing or payload).
    case protocolError(KasaProtocolError)
    /// Another I/O error, in the channel's words.
    case io(String)
    /// The plug answered, with a non-zero `err_code` for `path` ("system.get_sysinfo").
    case device(path: String, code: Int, message: String)
    /// The reply was JSON but not the answer expected (a field missing or of the wrong type).
    case badReply(String)
    /// The driver was stopped while the request waited.
    case stopped
    /// The plug refused `localPort` and answers HTTP on `httpPort`: its firmware speaks KLAP.
    case klap(endpoint: String, localPort: Int, httpPort: Int)
    /// A KLAP plug did not accept the TP-Link login of the credentials file at `step`
    /// (`"handshake1"`: its proof did not match the login's hash).
    case klapLogin(endpoint: String, step: String)

    /// The sentence used as the availability reason, e.g. "connection refused by 10.0.0.5:9999".
    public var description: String {
        switch self {
        case .refused(let endpoint): "connection refused by \(endpoint)"
        case .unreachable(let endpoint, let what): "\(what) unreachable (\(endpoint))"
        case .unresolved(let host): "cannot resolve host \(host)"
        case .timeout(let s): "no answer within \(KasaClientError.seconds(s))"
        case .noAnswer(let s, let retries):
            "no answer within \(KasaClientError.seconds(s)) (\(retries) \(retries == 1 ? "retry" : "retries"))"
        case .closed: "connection closed by the plug"
        case .protocolError(.frameTooLarge(let size, let limit)): "plug sent a frame of \(size) bytes (limit \(limit))"
        case .protocolError(let e): e.description
        case .io(let text): "connection error: \(text)"
        case .device(let path, let code, let message):
            "\(path) refused: \(message.isEmpty ? "error" : message) (err_code \(code))"
        case .badReply(let text): "unexpected reply: \(text)"
        case .stopped: "driver stopped"
        case .klap(let endpoint, let local, let http):
            "connection refused by \(endpoint): this firmware speaks KLAP (HTTP port \(http)), not the local protocol on \(local); "
                + "turn on Third-Party Compatibility in the Kasa app, or give the TP-Link login in a credentials_file"
        case .klapLogin(let endpoint, let step):
            "\(endpoint) did not accept the TP-Link login of the credentials file (KLAP \(step)): "
                + "check the e-mail and password (both case-sensitive) the Kasa app signs in with"
        }
    }

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }

    /// Whether another attempt may help (a timeout or a dropped connection); refusals, unreachable
    /// hosts and protocol violations fail fast.
    var isTransient: Bool {
        switch self {
        case .timeout, .closed, .io: true
        default: false
        }
    }

    /// Maps NIO and socket errors to a readable reason.
    static func classify(_ error: any Error, endpoint: String, host: String) -> KasaClientError {
        if let e = error as? KasaClientError { return e }
        if let e = error as? KasaProtocolError { return .protocolError(e) }
        if let e = error as? NIOConnectionError {
            let errors = e.connectionErrors.map { classify($0.error, endpoint: endpoint, host: host) }
            if let failFast = errors.first(where: { !$0.isTransient }) { return failFast }
            if let first = errors.first { return first }
            return .unresolved(host: host)
        }
        if let e = error as? IOError {
            switch e.errnoCode {
            case ECONNREFUSED: return .refused(endpoint: endpoint)
            case EHOSTUNREACH: return .unreachable(endpoint: endpoint, what: "host")
            case ENETUNREACH: return .unreachable(endpoint: endpoint, what: "network")
            case ECONNRESET, EPIPE: return .closed
            default: return .io(e.description)
            }
        }
        if let e = error as? ChannelError {
            switch e {
            case .connectTimeout: return .timeout(seconds: 0)
            case .ioOnClosedChannel, .alreadyClosed, .eof, .outputClosed: return .closed
            default: return .io("\(e)")
            }
        }
        return .io("\(error)")
    }
}

/// One request waiting for the plug's reply.
struct KasaPendingRequest: Sendable {
    let frame: [UInt8]
    let timeout: TimeAmount
    let promise: EventLoopPromise<KasaAnswer>
}

/// A reply payload and the place of its request among every request written to the plug.
struct KasaAnswer: Sendable {
    let payload: [UInt8]
    /// Counts the client's writes (on any connection): a larger number answers a request written
    /// later, and a plug answers in order, so it tells the later state of the plug.
    let order: UInt64
}

/// Numbers the requests as they are written, across the connections of one client.
final class KasaWriteCounter: Sendable {
    private let last = Atomic<UInt64>(0)
    func next() -> UInt64 { last.add(1, ordering: .relaxed).newValue }
}

/// Sends queued requests one at a time (one in flight) and matches each reply frame to the request
/// in flight. A timeout, a protocol error or a closed socket fails everything and closes the channel.
final class KasaClientHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = KasaPendingRequest
    typealias OutboundOut = ByteBuffer

    private var decoder: KasaFrameDecoder
    private let writes: KasaWriteCounter
    /// Requests sent and not yet answered (one at a time as the client sends them; room for more).
    private var waiting = CircularBuffer<KasaPendingRequest>(initialCapacity: 2)
    private var inFlight: (request: KasaPendingRequest, timer: Scheduled<Void>, order: UInt64)?
    private var failure: KasaClientError?

    init(maxFrameSize: Int, writes: KasaWriteCounter) {
        decoder = KasaFrameDecoder(maxFrameSize: maxFrameSize)
        self.writes = writes
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        promise?.succeed(())
        if let failure {
            request.promise.fail(failure)
            return
        }
        waiting.append(request)
        sendNext(context: context)
    }

    private func sendNext(context: ChannelHandlerContext) {
        guard inFlight == nil, failure == nil, let request = waiting.popFirst() else { return }
        let order = writes.next()
        let seconds = Double(request.timeout.nanoseconds) / 1e9
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: request.timeout) { [self] in
            guard let current = inFlight, current.order == order else { return }
            fail(context: context, .timeout(seconds: seconds))
        }
        inFlight = (request, timer, order)
        var buffer = context.channel.allocator.buffer(capacity: request.frame.count)
        buffer.writeBytes(request.frame)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard failure == nil else { return }
        let buffer = unwrapInboundIn(data)
        decoder.append(buffer.readableBytesView)
        do {
            while let payload = try decoder.next() {
                guard let current = inFlight else { continue }  // unsolicited frame: dropped
                current.timer.cancel()
                inFlight = nil
                current.request.promise.succeed(KasaAnswer(payload: payload, order: current.order))
                sendNext(context: context)
            }
        } catch {
            fail(context: context, .protocolError(error))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(context: context, .closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(context: context, KasaClientError.classify(error, endpoint: "", host: ""))
    }

    private func fail(context: ChannelHandlerContext, _ error: KasaClientError) {
        guard failure == nil else { return }
        failure = error
        if let current = inFlight {
            current.timer.cancel()
            inFlight = nil
            current.request.promise.fail(error)
        }
        while let request = waiting.popFirst() { request.promise.fail(error) }
        decoder = KasaFrameDecoder(maxFrameSize: decoder.maxFrameSize)  // release buffered bytes
        context.close(promise: nil)
    }
}

/// One TCP connection to a plug.
final class KasaConnection: Sendable {
    let channel: any Channel

    private init(channel: any Channel) { self.channel = channel }

    static func connect(
        host: String, port: Int, group: any EventLoopGroup, timeout: TimeAmount,
        maxFrameSize: Int, writes: KasaWriteCounter
    ) async throws -> KasaConnection {
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            // NIO keeps each connection's receive buffer between reads: start it at 512 bytes, not
            // 2 KiB (a sysinfo reply is ~700 bytes; the buffer grows for longer replies).
            .channelOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65_536))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(KasaClientHandler(maxFrameSize: maxFrameSize, writes: writes))
                }
            }
            .connect(host: host, port: port).get()
        return KasaConnection(channel: channel)
    }

    /// Sends one JSON payload and returns the decrypted reply payload.
    func request(_ plain: [UInt8], timeout: TimeAmount) async throws -> KasaAnswer {
        let promise = channel.eventLoop.makePromise(of: KasaAnswer.self)
        let request = KasaPendingRequest(frame: KasaCipher.frame(plain), timeout: timeout, promise: promise)
        channel.writeAndFlush(request).whenFailure { error in
            promise.fail(KasaClientError.classify(error, endpoint: "", host: ""))
        }
        // A cancelled caller stops waiting at once; the plug's answer, when it comes, is dropped
        // (a strip's connection stays open for its other outlets).
        return try await withTaskCancellationHandler {
            try await promise.futureResult.get()
        } onCancel: {
            promise.fail(CancellationError())
        }
    }

    var isActive: Bool { channel.isActive }

    func close() async {
        try? await channel.close()
    }
}
