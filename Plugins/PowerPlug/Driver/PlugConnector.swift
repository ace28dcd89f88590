import NIOCore
import NIOPosix
import Synchronization

/// Opens the driver's connection: framing and silence watch in the pipeline, wrapped for async reads.
/// Writes go straight to the channel (in the caller's order), so the async channel has no outbound side.
enum PlugConnector {
    static func connect(settings: PowerPlugDriver.Settings, group: any EventLoopGroup) async throws -> NIOAsyncChannel<PlugMessage, Never> {
        let connectTimeout = TimeAmount.nanoseconds(Int64(settings.connectTimeout * 1e9))
        let slots = settings.slots
        let readTimeout = TimeAmount.nanoseconds(Int64(settings.readTimeout * 1e9))
        let host = settings.host
        let port = settings.port
        return try await cancellable(
            operation: {
                let bootstrap = ClientBootstrap(group: group)
                    .connectTimeout(connectTimeout)
                    .channelOption(.socketOption(.tcp_nodelay), value: 1)
                    .channelOption(.socketOption(.so_keepalive), value: 1)
                    // NIO keeps each connection's receive buffer between reads: 3-byte statuses and
                    // 291-byte lists need 512 bytes, not the default 2 KiB (it grows if ever needed).
                    .channelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65_536))
                return try await bootstrap.connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(PlugMessageDecoder(slots: slots, readTimeout: readTimeout))
                        return try NIOAsyncChannel<PlugMessage, Never>(wrappingChannelSynchronously: channel)
                    }
                }
            },
            discard: { channel in channel.channel.close(promise: nil) })
    }

    /// Runs `operation` in its own task but returns (with `CancellationError`) as soon as the caller is
    /// cancelled; a result that arrives later is handed to `discard`. NIO's connect does not observe
    /// task cancellation, and `stop()` must not wait for a connect timeout.
    static func cancellable<T: Sendable>(
        operation: @escaping @Sendable () async throws -> T,
        discard: @escaping @Sendable (T) -> Void
    ) async throws -> T {
        let race = Race<T>()
        let inner = Task { try await operation() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                race.wait(continuation)
                Task {
                    let result = await inner.result
                    if !race.finish(with: result), case .success(let value) = result { discard(value) }
                }
            }
        } onCancel: {
            inner.cancel()
            race.finish(with: .failure(CancellationError()))
        }
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
