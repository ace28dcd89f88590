import HTTPTypes
import HubEngine
import NIOCore
import NIOHTTPTypes

/// How long a client may take, per connection, on the decoded HTTP parts (one handler per
/// connection, after hummingbird's HTTP/1.1 decoder):
///
/// - **idle**: from the connection's start, and from the end of each response, a complete
///   request head must arrive within ``HTTPSettings/idleTimeout``. That cuts a connection kept
///   open doing nothing and one sending its head a byte at a time alike (the decoder hands on no
///   part before the head is whole).
/// - **body**: once a head has arrived, the body must end within ``HTTPSettings/bodyTimeout``.
/// - While the hub answers (a live-update stream included) nothing is timed.
///
/// A cut closes the connection and counts `hub_http_connections_cut_total{reason}`. A response
/// that says `Connection: close` (a refusal before the body was read: 413, 421) closes the
/// connection once written, so a body declared but never sent is not waited for.
///
/// Hummingbird's own `idleTimeout` keeps a single deadline and reports nothing; this one tells the
/// two waits apart and counts what it cuts.
final class ConnectionDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    enum Phase { case waiting, readingBody, answering }

    let idle: TimeAmount
    let body: TimeAmount
    let cut: @Sendable (_ reason: String) -> Void
    private var phase = Phase.waiting
    private var timer: Scheduled<Void>?
    private var closeAfterResponse = false

    init(idle: Duration, body: Duration, cut: @escaping @Sendable (_ reason: String) -> Void) {
        self.idle = Self.amount(idle)
        self.body = Self.amount(body)
        self.cut = cut
    }

    static func amount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { wait(context, .waiting) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if timer == nil { wait(context, .waiting) }
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: wait(context, .readingBody)
        case .body: break
        case .end: wait(context, .answering)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.headerFields[.connection]?.lowercased() == "close" { closeAfterResponse = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            if closeAfterResponse {
                let written = promise ?? context.eventLoop.makePromise()
                let channel = context.channel
                written.futureResult.whenComplete { _ in channel.close(promise: nil) }
                context.writeAndFlush(data, promise: written)
                return
            }
            // The next request's head may already be in (pipelining): its own deadline runs.
            if phase == .answering { wait(context, .waiting) }
            context.write(data, promise: promise)
        }
    }

    /// Enters `phase` and starts its deadline (none while answering).
    private func wait(_ context: ChannelHandlerContext, _ phase: Phase) {
        self.phase = phase
        timer?.cancel()
        timer = nil
        let (delay, reason): (TimeAmount, String)
        switch phase {
        case .waiting: (delay, reason) = (idle, "idle")
        case .readingBody: (delay, reason) = (body, "body")
        case .answering: return
        }
        let loop = context.eventLoop.assumeIsolatedUnsafeUnchecked()
        timer = loop.scheduleTask(in: delay) { [self] in
            timer = nil
            cut(reason)
            context.close(promise: nil)
        }
    }
}

@available(*, unavailable)
extension ConnectionDeadlines: Sendable {}
