import Synchronization

/// Passes reports to the hub until closed; `close()` returns only when no report is in progress,
/// so nothing is reported after `Driver.run(context:)` returns. For drivers that report from
/// `execute(_:)` (which the hub calls from its own tasks) as well as from `run(context:)`.
public final class DriverReportGate: Sendable {
    private struct State {
        var context: (any DriverContext)?
        var closed = false
        var inFlight = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// Reports made before the gate opened, waiting for it to open (or close).
        var early: [CheckedContinuation<(any DriverContext)?, Never>] = []
    }
    private let state = Mutex(State())

    /// A gate not opened yet: reports wait until `open(_:)` (the hub may call `execute(_:)` just
    /// before `run(context:)` begins), and are dropped once it is closed.
    public init() {}

    /// Starts passing reports to `context` (call at the start of `Driver.run(context:)`).
    /// - Parameter context: The hub side to report to.
    public func open(_ context: any DriverContext) {
        let early = state.withLock { s -> [CheckedContinuation<(any DriverContext)?, Never>] in
            guard !s.closed else { return [] }
            s.context = context
            defer { s.early = [] }
            return s.early
        }
        for waiter in early { waiter.resume(returning: context) }
    }

    /// The context once the gate is open (waiting for it to open), nil once it is closed: for a
    /// driver's `execute(_:)` that needs what `run(context:)` was given (its MQTT handle).
    public func openedContext() async -> (any DriverContext)? {
        await withCheckedContinuation { (continuation: CheckedContinuation<(any DriverContext)?, Never>) in
            let now = state.withLock { s -> (any DriverContext)?? in
                if s.closed { return .some(nil) }
                if let c = s.context { return .some(c) }
                s.early.append(continuation)
                return .none
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// Reports through the context (waiting for the gate to open), or drops the observation once
    /// the gate is closed.
    /// - Parameter observation: What the device said.
    public func report(_ observation: Observation) async {
        guard
            await openedContext() != nil,
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

    /// Closes the gate for good; returns when no report is in progress (call as `Driver.run(context:)` ends).
    public func close() async {
        let early = state.withLock { s -> [CheckedContinuation<(any DriverContext)?, Never>] in
            s.closed = true
            s.context = nil
            defer { s.early = [] }
            return s.early
        }
        for waiter in early { waiter.resume(returning: nil) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.inFlight == 0 { return true }
                s.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
