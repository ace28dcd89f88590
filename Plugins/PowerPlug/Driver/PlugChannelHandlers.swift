import NIOCore

/// Why a driver session ended from inside the pipeline.
enum PlugSessionError: Error, CustomStringConvertible {
    case protocolError(PowerPlugProtocolError)
    case silence(seconds: Double)
    case unansweredLists(Int)

    var description: String {
        switch self {
        case .protocolError(.unknownMessageType(let byte, _)):
            return "plug sent an unknown message type \(hex(byte))"
        case .protocolError(let error):
            return "plug broke the protocol: \(error)"
        case .silence(let seconds):
            return "no status from the plug for \(formatSeconds(seconds))"
        case .unansweredLists(let count):
            return "the plug left \(count) list requests unanswered"
        }
    }
}

func formatSeconds(_ seconds: Double) -> String {
    if seconds == seconds.rounded() { return "\(Int(seconds)) s" }
    return "\(seconds) s"
}

/// Frames the plug's byte stream into `PlugMessage`s and watches for silence: when no status has
/// arrived for `readTimeout`, it raises `PlugSessionError.silence` and closes the channel. A protocol
/// error is raised the same way. Time during which the driver itself holds reads back (a slow hub:
/// back-pressure) does not count as the plug's silence. Runs on the channel's event loop only.
final class PlugMessageDecoder: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = PlugMessage
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var framer: PowerPlugFramer<PlugMessageFormat>
    private let readTimeout: TimeAmount
    private var lastStatus = NIODeadline.now()
    private var timer: Scheduled<Void>?
    private var failed = false
    /// A read is outstanding (the socket may deliver); false while back-pressure holds reads.
    private var reading = true
    private var pausedSince = NIODeadline.now()

    init(slots: Int, readTimeout: TimeAmount) {
        framer = PowerPlugFramer(format: PlugMessageFormat(slots: slots))
        self.readTimeout = readTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { startTimer(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        startTimer(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func read(context: ChannelHandlerContext) {
        if !reading {
            reading = true
            lastStatus = lastStatus + (.now() - pausedSince)  // time not listening is not silence
        }
        context.read()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        pausedSince = .now()
        context.fireChannelReadComplete()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let buffer = unwrapInboundIn(data)
        do {
            try buffer.withUnsafeReadableBytes { bytes in
                try framer.feed(bytes) { message in
                    if case .status = message { lastStatus = .now() }
                    context.fireChannelRead(wrapInboundOut(message))
                }
            }
        } catch let error as PowerPlugProtocolError {
            fail(context: context, .protocolError(error))
        } catch {
            fail(context: context, .protocolError(.bufferOverflow(limit: framer.capacity)))
        }
    }

    private func fail(context: ChannelHandlerContext, _ error: PlugSessionError) {
        guard !failed else { return }
        failed = true
        timer?.cancel()
        timer = nil
        context.fireErrorCaught(error)
        context.close(promise: nil)
    }

    private func startTimer(context: ChannelHandlerContext) {
        guard timer == nil, !failed else { return }
        lastStatus = .now()
        scheduleCheck(context: context, at: lastStatus + readTimeout)
    }

    private func scheduleCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            guard !handler.failed else { return }
            let due = handler.lastStatus + handler.readTimeout
            if !handler.reading {
                handler.scheduleCheck(context: context, at: .now() + handler.readTimeout)
            } else if NIODeadline.now() >= due {
                let seconds = Double(handler.readTimeout.nanoseconds) / 1e9
                handler.fail(context: context, .silence(seconds: seconds))
            } else {
                handler.scheduleCheck(context: context, at: due)
            }
        }
    }
}
