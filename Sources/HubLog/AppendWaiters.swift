/// The tasks waiting in a store's ``EventStore/waitForAppend(after:)``, kept in the store's locked
/// state.
///
/// Nothing here resumes a task. What is taken out comes back as ``Wakeups``, which the store resumes
/// after it has let go of its lock. Resuming a task takes the task's own status lock, and the
/// runtime holds that lock while it runs the task's cancellation handler, which takes the store's
/// lock to remove its waiter. A store that resumed under its lock could wait for ever on a thread
/// that waited for it (a hub stopping while the log moved never finished stopping).
public struct AppendWaiters: Sendable {
    /// A task waiting for the log to pass a sequence.
    public typealias Waiter = CheckedContinuation<Void, any Error>

    private var waiting: [Int: (after: UInt64, waiter: Waiter)] = [:]
    private var lastId = 0

    /// No waiters.
    public init() {}

    /// A number for the next waiter (taken before it suspends, so its cancellation handler knows it).
    public mutating func newId() -> Int {
        lastId += 1
        return lastId
    }

    /// Under the store's lock: the answer for `waiter` at once (a record after `sequence` is there;
    /// the store refuses waits, for `refusal`; the task is cancelled), or nil after adding it.
    ///
    /// - Parameters:
    ///   - lastSequence: The store's last committed sequence.
    ///   - refusal: Why the store takes no waiters (closed, its writer stopped), if it does not.
    public mutating func enter(
        _ id: Int, after sequence: UInt64, lastSequence: UInt64, refusal: (any Error)?,
        _ waiter: Waiter
    ) -> Result<Void, any Error>? {
        if lastSequence > sequence { return .success(()) }
        if let refusal { return .failure(refusal) }
        if Task.isCancelled { return .failure(CancellationError()) }
        waiting[id] = (sequence, waiter)
        return nil
    }

    /// The waiter `id`, if it still waits (its task was cancelled).
    public mutating func remove(_ id: Int) -> Waiter? {
        waiting.removeValue(forKey: id)?.waiter
    }

    /// The waiters the log's new last sequence satisfies.
    public mutating func takeReached(_ lastSequence: UInt64) -> Wakeups {
        var reached: [Waiter] = []
        for (id, entry) in waiting where entry.after < lastSequence {
            waiting.removeValue(forKey: id)
            reached.append(entry.waiter)
        }
        return Wakeups(waiters: reached)
    }

    /// Every waiter (the store closed or stopped).
    public mutating func takeAll() -> Wakeups {
        defer { waiting.removeAll() }
        return Wakeups(waiters: waiting.values.map(\.waiter))
    }

    /// A store's `waitForAppend`, around its lock.
    ///
    /// - Parameters:
    ///   - register: Under the store's lock: ``enter(_:after:lastSequence:refusal:_:)``.
    ///   - cancelled: Under the store's lock: removes the waiter (``remove(_:)``).
    public static func suspend(register: (Waiter) -> Result<Void, any Error>?, cancelled: @Sendable () -> Waiter?) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: Waiter) in
                if let immediate = register(waiter) { waiter.resume(with: immediate) }
            }
        } onCancel: {
            cancelled()?.resume(throwing: CancellationError())
        }
    }
}

/// Waiters taken out of ``AppendWaiters``, to resume once the store's lock is let go.
public struct Wakeups: Sendable {
    fileprivate let waiters: [AppendWaiters.Waiter]

    /// Nothing to wake.
    public static let none = Wakeups(waiters: [])

    /// Resumes every waiter taken; call once the store's lock is let go.
    public func resume() {
        for waiter in waiters { waiter.resume() }
    }

    /// Resumes every waiter taken by throwing `error` (the store closed or failed); call outside the lock.
    public func fail(_ error: any Error) {
        for waiter in waiters { waiter.resume(throwing: error) }
    }
}
