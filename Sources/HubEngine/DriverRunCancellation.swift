import Synchronization

/// Cancels one driver's `run(context:)` from outside its task: a task group cannot cancel one of
/// its children, so the child registers itself here while it runs the driver. `cancel()` takes the
/// same lock the child takes before it ends (``end()``), so it never reaches a task that has ended,
/// and no handle to the task is kept after it ends.
final class DriverRunCancellation: Sendable {
    /// The running child; only used under the lock, while the child is between `begin` and `end`.
    private struct RunningTask: @unchecked Sendable {
        let task: UnsafeCurrentTask
    }
    private struct State {
        var task: RunningTask?
        var cancelled = false
    }
    private let state = Mutex(State())

    /// Called by the child as it begins (before the driver runs): cancelled already, it cancels itself.
    func begin() {
        withUnsafeCurrentTask { current in
            guard let current else { return }
            let task = RunningTask(task: current)
            state.withLock { s in
                if s.cancelled { task.task.cancel() } else { s.task = task }
            }
        }
    }

    /// Called by the child before it ends: forgets the task.
    func end() {
        state.withLock { $0.task = nil }
    }

    /// Cancels the driver's task if it runs, or the child as soon as it begins.
    func cancel() {
        state.withLock { s in
            s.cancelled = true
            s.task?.task.cancel()
            s.task = nil
        }
    }
}
