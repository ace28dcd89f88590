import NIOCore
import NIOPosix
import Synchronization

/// Opens the driver's connection: framing, silence watch and the connection's ``PlugInbox`` in the
/// pipeline. Writes go straight to the channel (in the caller's order).
enum PlugConnector {
    /// Connects; returns as soon as the caller is cancelled (with `CancellationError`; a connection
    /// made later is closed), since NIO's connect does not observe task cancellation and stopping a
    /// driver must not wait for a connect timeout. No task is made: the connect's future resumes
    /// the caller, whose task keeps only this small frame (the bootstrap is set up synchronously).
    static func connect(settings: PowerPlugDriver.Settings, group: any EventLoopGroup) async throws -> (any Channel, PlugInbox) {
        let (connecting, inbox) = start(settings: settings, group: group)
        let race = Race<any Channel>()
        let channel = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<any Channel, any Error>) in
                race.wait(continuation)
                connecting.whenComplete { result in
                    if !race.finish(with: result), case .success(let channel) = result { channel.close(promise: nil) }
                }
            }
        } onCancel: {
            race.finish(with: .failure(CancellationError()))
        }
        return (channel, inbox)
    }

    private static func start(settings: PowerPlugDriver.Settings, group: any EventLoopGroup) -> (EventLoopFuture<any Channel>, PlugInbox) {
        let slots = settings.slots
        let readTimeout = TimeAmount.nanoseconds(Int64(settings.readTimeout * 1e9))
        let inbox = PlugInbox()
        let connecting = ClientBootstrap(group: group)
            .connectTimeout(.nanoseconds(Int64(settings.connectTimeout * 1e9)))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.socketOption(.so_keepalive), value: 1)
            // NIO keeps each connection's receive buffer between reads: 3-byte statuses and
            // 291-byte lists need 512 bytes, not the default 2 KiB (it grows if ever needed).
            .channelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65_536))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(PlugMessageDecoder(slots: slots, readTimeout: readTimeout))
                    try channel.pipeline.syncOperations.addHandler(PlugInboxHandler(inbox))
                }
            }
            .connect(host: settings.host, port: settings.port)
        return (connecting, inbox)
    }
}

/// The first of "result arrived" and "caller cancelled" resumes the waiter; the other is told it lost.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var waiter: CheckedContinuation<T, any Error>?
        var early: Result<T, any Error>?
        var done = false
    }
    private let state = Mutex(State())

    func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { s in
            if let early = s.early { return early }
            s.waiter = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Returns false when someone finished first.
    @discardableResult
    func finish(with result: Result<T, any Error>) -> Bool {
        let waiter: CheckedContinuation<T, any Error>?? = state.withLock { s in
            guard !s.done else { return .none }
            s.done = true
            if let w = s.waiter { s.waiter = nil; return .some(w) }
            s.early = result
            return .some(nil)
        }
        switch waiter {
        case .none: return false
        case .some(let w): w?.resume(with: result); return true
        }
    }
}
