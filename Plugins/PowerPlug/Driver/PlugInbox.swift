import NIOCore
import Synchronization

/// One connection's decoded messages on their way to the driver's task: the end of the channel's
/// pipeline puts them in, the session takes them out with ``next()``, in order, then the error or
/// close that ended the connection.
///
/// It stands where an `NIOAsyncChannel` would, for memory: a plug's session task lives as long as
/// its connection and keeps the memory of its deepest calls until it ends, and waiting here is one
/// shallow frame. **Bound:** while ``highWater`` messages wait, the pipeline's reads are held (the
/// socket is not read, so the plug's TCP window fills: back-pressure, nothing dropped); the first
/// ``next()`` that empties the inbox lets them go on.
final class PlugInbox: Sendable {
    /// Messages held at most before reads are held back.
    static let highWater = 16

    private struct State {
        var messages: [PlugMessage] = []
        var head = 0
        /// How the connection ended: nil while open; `.success` for a close, `.failure` for an error.
        var end: Result<Void, any Error>?
        var waiter: UnsafeContinuation<PlugMessage?, any Error>?
        /// A read was held back while the inbox was full (to be issued once it drains).
        var readHeld = false
        var count: Int { messages.count - head }

        mutating func pop() -> PlugMessage? {
            guard head < messages.count else { return nil }
            let message = messages[head]
            head += 1
            if head == messages.count {
                // Drained: the buffer goes (the session usually takes each message straight from
                // the pipeline, and an idle connection holds no buffer of its own).
                messages = []
                head = 0
            }
            return message
        }
    }
    private let state = Mutex(State())

    /// An inbox for one connection (its handler, ``PlugInboxHandler``, goes at the pipeline's end).
    init() {}

    /// Issues a read on the channel (set once the channel exists).
    private let channel = Mutex<(any Channel)?>(nil)

    /// The next message, waiting for one; nil once the connection closed and every message was
    /// taken. Throws the error that ended the connection, or `CancellationError` when the task is
    /// cancelled (the connection is closed then).
    func next() async throws -> PlugMessage? {
        let (message, resume) = state.withLock { s -> (PlugMessage?, Bool) in
            let message = s.pop()
            return (message, message != nil && s.count == 0 && s.readHeld)
        }
        if let message {
            if resume { resumeReading() }
            return message
        }
        return try await waitForNext()
    }

    @inline(never)
    private func waitForNext() async throws -> PlugMessage? {
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (waiter: UnsafeContinuation<PlugMessage?, any Error>) in
                let (now, resume) = state.withLock { s -> (Result<PlugMessage?, any Error>?, Bool) in
                    if let message = s.pop() { return (.success(message), s.count == 0 && s.readHeld) }
                    if let end = s.end { return (end.map { nil }, false) }
                    if Task.isCancelled { return (.failure(CancellationError()), false) }
                    s.waiter = waiter
                    return (nil, false)
                }
                if resume { resumeReading() }
                if let now { waiter.resume(with: now) }
            }
        } onCancel: {
            finish(.failure(CancellationError()))
            channel.withLock { $0 }?.close(promise: nil)
        }
    }

    private func resumeReading() {
        let issue = state.withLock { s -> Bool in
            defer { s.readHeld = false }
            return s.readHeld
        }
        if issue { channel.withLock { $0 }?.read() }
    }

    // MARK: The pipeline's side (on the channel's event loop)

    fileprivate func attach(_ channel: any Channel) {
        self.channel.withLock { $0 = channel }
    }

    fileprivate func detach() {
        channel.withLock { $0 = nil }
    }

    fileprivate func put(_ message: PlugMessage) {
        let waiter = state.withLock { s -> UnsafeContinuation<PlugMessage?, any Error>? in
            guard s.end == nil else { return nil }
            if let waiter = s.waiter {
                s.waiter = nil
                return waiter
            }
            s.messages.append(message)
            return nil
        }
        waiter?.resume(returning: message)
    }

    /// True when the pipeline may read now; false when the inbox is full (the read is held).
    fileprivate func mayRead() -> Bool {
        state.withLock { s in
            if s.count >= Self.highWater, s.end == nil {
                s.readHeld = true
                return false
            }
            return true
        }
    }

    /// The connection ended (the first end counts): a waiting ``next()`` returns nil or throws.
    fileprivate func finish(_ end: Result<Void, any Error>) {
        let waiter = state.withLock { s -> UnsafeContinuation<PlugMessage?, any Error>? in
            if s.end == nil { s.end = end }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume(with: end.map { nil })
    }
}

/// The end of a plug connection's pipeline: hands each message to the connection's ``PlugInbox``,
/// holds reads while it is full, and tells it how the connection ended.
final class PlugInboxHandler: ChannelDuplexHandler {
    typealias InboundIn = PlugMessage
    typealias OutboundIn = Never

    private let inbox: PlugInbox

    init(_ inbox: PlugInbox) {
        self.inbox = inbox
    }

    func handlerAdded(context: ChannelHandlerContext) {
        inbox.attach(context.channel)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        inbox.put(unwrapInboundIn(data))
    }

    func read(context: ChannelHandlerContext) {
        if inbox.mayRead() { context.read() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        inbox.finish(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        inbox.finish(.success(()))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        inbox.detach()
    }
}
