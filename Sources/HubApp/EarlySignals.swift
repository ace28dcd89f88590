import Foundation
import HubEngine
import HubHTTP
import HubMQTT
import Synchronization
import UnixSignals

/// Keeps a shutdown signal that arrives while `hub run` starts, before the service group has
/// installed its handlers, and hands it to the group once it runs.
///
/// Without it, a SIGTERM in that window ends the process by the default action (no snapshot, the
/// log left open). ``catch(_:)`` installs a handler that only records the signal; the group's
/// `UnixSignalsSequence` (libdispatch signal sources) replaces it when the group starts, so
/// signals from then on go to the group directly; ``redeliver()``, called once the group runs,
/// raises a recorded signal again for the group to take.
public enum EarlySignals {
    /// The signal caught before the group ran (0: none). Lock-free, so safe in a signal handler.
    private static let caught = Atomic<Int32>(0)

    /// Records `signals` instead of letting them end the process. Call it first thing.
    public static func `catch`(_ signals: [UnixSignal]) {
        caught.store(0, ordering: .relaxed)  // initialised here, never first in the handler
        for signal in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in EarlySignals.caught.store(number, ordering: .relaxed) }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signal.rawValue, &action, nil)
        }
    }

    /// Whether a signal was caught and not redelivered yet (a standby waiting for the lease asks).
    public static var pending: Bool { caught.load(ordering: .relaxed) != 0 }

    /// Raises the signal caught before the group ran, if any: the group's handlers take it now.
    ///
    /// - Returns: The signal raised again, or nil.
    @discardableResult
    public static func redeliver() -> Int32? {
        let signal = caught.exchange(0, ordering: .relaxed)
        guard signal != 0 else { return nil }
        kill(getpid(), signal)
        return signal
    }
}
