import NIOCore
import NIOPosix

/// Tells a plug whose firmware left the local protocol: Kasa firmware of 2021 and later on several
/// models closes TCP 9999 and speaks KLAP over HTTP on port 80 (python-kasa, docs/source/topics.md,
/// "Protocols and Transports"). When 9999 refuses the connection, one probe of the HTTP port says
/// whether something answers HTTP there.
enum KasaKLAPProbe {
    /// The reason to report for `failure`: a refused connection becomes `.klap` when the host
    /// answers HTTP on `probePort` (probed once per call, within the request timeout).
    static func explain(
        _ failure: KasaClientError, config: KasaClientConfig, probePort: Int, group: any EventLoopGroup
    ) async -> KasaClientError {
        guard case .refused(let endpoint) = failure, config.klap == nil, probePort != config.port else { return failure }
        let http = await answersHTTP(host: config.host, port: probePort, timeout: config.timeout, group: group)
        return http ? .klap(endpoint: endpoint, localPort: config.port, httpPort: probePort) : failure
    }

    /// Whether `host:port` accepts a connection and answers `GET /` with an HTTP status line within `timeout` seconds.
    static func answersHTTP(host: String, port: Int, timeout: Double, group: any EventLoopGroup) async -> Bool {
        let loop = group.next()
        let answer = loop.makePromise(of: Bool.self)
        let wait = TimeAmount.nanoseconds(Int64(timeout * 1e9))
        let timer = loop.scheduleTask(in: wait) { answer.succeed(false) }
        defer { timer.cancel() }
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(wait)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(KasaHTTPProbeHandler(answer: answer))
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            answer.succeed(false)
            return false
        }
        let request = "GET / HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n"
        channel.writeAndFlush(ByteBuffer(string: request), promise: nil)
        let http = await withTaskCancellationHandler {
            (try? await answer.futureResult.get()) ?? false
        } onCancel: {
            answer.succeed(false)
        }
        try? await channel.close()
        return http
    }
}

/// Reads the first bytes of the answer: `HTTP/` is an HTTP server.
final class KasaHTTPProbeHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let answer: EventLoopPromise<Bool>
    private var head: [UInt8] = []
    private static let status = Array("HTTP/".utf8)

    init(answer: EventLoopPromise<Bool>) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        head += buffer.readableBytesView.prefix(Self.status.count - head.count)
        if head.count == Self.status.count { answer.succeed(head == Self.status) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        answer.succeed(false)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        answer.succeed(false)
        context.close(promise: nil)
    }
}
