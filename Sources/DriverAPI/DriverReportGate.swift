import Synchronization

/// Passes reports to the hub until closed; `close()` returns only when no report is in progress,
/// so nothing is reported after `stop()` returns. For drivers whose reads run in their own tasks.
public final class DriverReportGate: Sendable {
    private struct State {
        var context: (any DriverContext)?
        var closed = false
        var inFlight = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// A closed-until-opened gate: reports are dropped until `open(_:)`.
    public init() {}

    /// Starts passing reports to `context` (call from `Driver.start(context:)`).
    /// - Parameter context: The hub side to report to.
    public func open(_ context: any DriverContext) {
        state.withLock { $0.context = context }
    }

    /// Reports through the context, or drops the observation when the gate is not open or closed.
    /// - Parameter observation: What the device said.
    public func report(_ observation: Observation) async {
        guard
            let context = state.withLock({ s -> (any DriverContext)? in
                guard !s.closed, let c = s.context else { return nil }
                s.inFlight += 1
                return c
            })
        else { return }
        await context.report(observation)
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.inFlight -= 1
            guard s.inFlight == 0 else { return [] }
            defer { s.waiters = [] }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Closes the gate for good; returns when no report is in progress (call from `Driver.stop()`).
    public func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                s.closed = true
                s.context = nil
                if s.inFlight == 0 { return true }
                s.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
