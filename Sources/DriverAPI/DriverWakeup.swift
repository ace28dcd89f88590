import Dispatch
import Synchronization

/// Lets one task wait until a deadline, until another part of the driver wakes it, or until the
/// task is cancelled, whichever comes first: the timer of a driver's `run(context:)` loop (the next
/// poll, a command's confirmation timeout) without a sleeping task beside it. The wait holds no
/// thread: a dispatch timer resumes it.
public final class DriverWakeup: Sendable {
    private struct State {
        var waiter: CheckedContinuation<Void, Never>?
        /// Woken while no task waited: the next wait returns at once.
        var woken = false
        /// Numbers the waits, so a late timer of an earlier wait wakes no later one.
        var generation = 0
    }
    private let state = Mutex(State())

    /// A wakeup nobody waits on yet.
    public init() {}

    /// Wakes the waiting task now; when none waits, the next `wait(until:)` returns at once.
    public func wake() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            defer { s.waiter = nil }
            if s.waiter == nil { s.woken = true }
            return s.waiter
        }
        waiter?.resume()
    }

    /// Waits until `deadline` (nil: none), `wake()` or the task's cancellation. One task waits at a time.
    /// - Parameter deadline: When to return at the latest, on the continuous clock.
    public func wait(until deadline: ContinuousClock.Instant?) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = ContinuousClock.now
                let generation = state.withLock { s -> Int? in
                    if s.woken || Task.isCancelled || deadline.map({ $0 <= now }) == true {
                        s.woken = false
                        return nil
                    }
                    s.generation += 1
                    s.waiter = continuation
                    return s.generation
                }
                guard let generation else { return continuation.resume() }
                guard let deadline else { return }
                // A timer that fires after the wait ended finds a later generation and does nothing.
                let parts = (deadline - now).components
                let delay = parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in fire(generation) }
            }
        } onCancel: {
            wake()
        }
        state.withLock { $0.woken = $0.woken && !Task.isCancelled }
    }

    private func fire(_ generation: Int) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard s.generation == generation else { return nil }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }
}

/// Suspends until the calling task is cancelled: the end of a `Driver.run(context:)` whose work
/// happens elsewhere (in `execute(_:)`, on event-loop timers). Holds no thread and no timer.
public func untilCancelled() async {
    let wakeup = DriverWakeup()
    while !Task.isCancelled { await wakeup.wait(until: nil) }
}
