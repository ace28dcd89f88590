import HubLog
import NIOCore
import Synchronization

/// A statement on the command path waits for PostgreSQL's answer at most ``PostgresEventStore/statementDeadline``
/// (30 s unless the store was opened with another):
/// a connection that neither answers nor closes (a server hung, a network that drops packets
/// without a reset) fails the statement with ``EventLogError/unreachable(_:)`` and is replaced
/// (``PostgresEventStore/lose(_:)``), instead of holding a command, a lease renewal or a shutdown
/// forever. The timer runs on the store's event loop; no task waits on the statement itself.
extension PostgresEventStore {
    /// `future`'s value, or ``EventLogError/unreachable(_:)`` once ``statementDeadline`` has
    /// passed without an answer (the connection is then taken as lost).
    func withinDeadline<T: Sendable>(_ future: EventLoopFuture<T>, _ what: String) async throws -> T {
        let once = Once<T>()
        return try await withCheckedThrowingContinuation { continuation in
            once.set(continuation)
            let timer = future.eventLoop.scheduleTask(in: statementDeadline) {
                let reason =
                    "\(self.location): \(what): no answer from PostgreSQL within \(Double(self.statementDeadline.nanoseconds) / 1e9) s"
                if once.resume(with: .failure(EventLogError.unreachable(reason))) { self.lose(reason) }
            }
            future.whenComplete { result in
                timer.cancel()
                _ = once.resume(with: result.mapError { $0 })
            }
        }
    }
}

/// Resumes a continuation exactly once, whichever of the answer and the timer comes first.
final class Once<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) { self.continuation.withLock { $0 = continuation } }

    /// True when this call resumed it (the first).
    func resume(with result: Result<T, any Error>) -> Bool {
        guard
            let taken = continuation.withLock({ current -> CheckedContinuation<T, any Error>? in
                defer { current = nil }
                return current
            })
        else { return false }
        taken.resume(with: result)
        return true
    }
}
