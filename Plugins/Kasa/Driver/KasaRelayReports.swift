import DriverAPI
import Synchronization

/// The relay states the driver reports, in the order the plug said them.
///
/// Each state comes from an answer numbered by the order its request was written (`KasaAnswer`);
/// the plug answers in order, so a larger number is the later state. An answer older than one
/// already taken in is stale and dropped, and states are reported one at a time, so the hub sees
/// them in the plug's order whichever task (the poll, a switch, a read-back) took them in.
///
/// A confirmation (the `err_code 0` answer to `set_relay_state`) is always reported, even when the
/// relay did not change, as it closes the hub's pending command; a stale confirmation still is when
/// the newer answer says the same. Any other state is reported only when it differs from the last
/// one reported.
final class KasaRelayReports: Sendable {
    private struct State {
        /// The newest answer taken in: its order and the relay it said.
        var newest: (order: UInt64, on: Bool)?
        /// The last state handed to the gate (nil = none yet).
        var reported: Bool?
        /// The state to report next, and whether it must be reported even if unchanged.
        var waiting: (on: Bool, confirms: Bool)?
        /// A task is reporting; it reports `waiting` too before it stops.
        var reporting = false
    }

    private let state = Mutex(State())
    private let gate: DriverReportGate

    init(gate: DriverReportGate) { self.gate = gate }

    /// The last relay state reported (nil = none yet).
    var lastReported: Bool? { state.withLock { $0.reported } }

    /// Takes in the relay state `on` said by the answer numbered `order`, and reports it unless it
    /// is stale or says nothing new. Returns once it is reported, or handed to the report in progress.
    func take(_ on: Bool, order: UInt64, confirms: Bool) async {
        let start = state.withLock { s -> Bool in
            if s.newest.map({ order > $0.order }) ?? true {
                let carried = s.waiting.map { $0.confirms && $0.on == on } ?? false
                s.newest = (order, on)
                s.waiting = (on, confirms || carried)
            } else if confirms, s.newest?.on == on {
                s.waiting = (on, true)
            } else {
                return false
            }
            guard !s.reporting else { return false }
            s.reporting = true
            return true
        }
        guard start else { return }
        while let next = state.withLock({ s -> Bool?? in
            guard let w = s.waiting else { s.reporting = false; return nil }
            s.waiting = nil
            guard w.confirms || s.reported != w.on else { return .some(nil) }
            s.reported = w.on
            return .some(w.on)
        }) {
            if let on = next { await gate.report(.switchState(on: on, manual: nil)) }
        }
    }
}
