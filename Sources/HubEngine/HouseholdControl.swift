import Foundation
import HubDomain
import HubLog

/// Carries out one multi-device command (a group's switch, a scene, "all off"): records it as one
/// `MultiSwitchRequested`, switches each device (command id `<command id>/<device>` when the
/// command has one, so a repeated command switches nobody twice), and waits for every device's
/// outcome: `confirmed`, `failed` (with the reason), `unavailable` (not sent: the device is
/// offline) or `pending` (no answer within the confirm timeout).
struct HouseholdControl: Sendable {
    let hub: Hub
    let confirmTimeout: Duration

    init(hub: Hub, confirmTimeout: Duration) {
        self.hub = hub
        self.confirmTimeout = confirmTimeout
    }

    /// What became of one device of a multi-device command.
    public struct DeviceOutcome: Sendable, Equatable {
        /// The device id.
        public var device: String
        /// The state it was asked for.
        public var state: SwitchState
        /// `confirmed`, `failed`, `unavailable` (offline: not sent) or `pending` (no answer within the confirm timeout).
        public var outcome: String
        /// Why it failed or was not sent; nil otherwise.
        public var reason: String?

        var json: JSONValue {
            .object(
                [("device", .string(device)), ("state", .string(state.name.uppercased())), ("outcome", .string(outcome))]
                    + (reason.map { [("reason", JSONValue.string($0))] } ?? []))
        }
    }

    /// True for the commands `HouseholdControl` carries out (a group's switch, a scene); false for every other.
    public static func isMultiDevice(_ command: HubCommand) -> Bool {
        switch command {
        case .switchGroup, .applyScene: return true
        default: return false
        }
    }

    /// The answer (its data lists every member's outcome), or the rejection. With a zero confirm
    /// timeout (no drivers run, as in `hub exec`) members that were sent a switch stay `pending`.
    func run(_ command: HubCommand, commandId: String?, actor: String) async throws -> CommandAnswer {
        let started = currentMicros()
        let outcome = try await hub.execute(command, commandId: commandId, actor: actor, now: started)
        let events: [HubEvent], result: AppendResult?
        switch outcome {
        case let .accepted(e, r, _): events = e; result = r
        case let .rejected(rejection, result, duplicate): return .refused(rejection, seq: result?.lastSequence, duplicate: duplicate)
        }
        guard case .multiSwitchRequested(let request)? = events.first else { return .ok(.null) }
        var outcomes: [DeviceOutcome] = []
        var waiting: [Int] = []
        for target in request.targets {
            var o = DeviceOutcome(device: target.device, state: target.state, outcome: "pending")
            if let device = await hub.device(target.device), device.available == false {
                o.outcome = "unavailable"
                o.reason = device.availabilityReason
            } else {
                let id = commandId.map { "\($0)/\(target.device)" }
                let switched: CommandOutcome
                do {
                    switched = try await hub.execute(
                        .switchDevice(id: target.device, target: target.state == .on ? .on : .off),
                        commandId: id, actor: actor, now: currentMicros())
                } catch EventLogError.storageFull(let path, let operation, let code) {
                    // The disk filled up after the command itself was logged: this member is not
                    // switched, and says why (the same command id switches it once space is back).
                    let rejection = CommandService.notRecorded(EventLogError.storageFull(path: path, operation: operation, errno: code))
                    switched = .rejected(rejection, result: nil, duplicate: false)
                }
                if case let .rejected(rejection, _, _) = switched {
                    o.outcome = "failed"
                    o.reason = rejection.message
                } else {
                    waiting.append(outcomes.count)
                }
            }
            outcomes.append(o)
        }
        let deadline = ContinuousClock.now + confirmTimeout + .milliseconds(500)
        while !waiting.isEmpty, confirmTimeout > .zero, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            var still: [Int] = []
            for i in waiting {
                guard let device = await hub.device(outcomes[i].device) else { continue }
                if device.pending != nil { still.append(i); continue }
                if device.switchState.state == outcomes[i].state {
                    outcomes[i].outcome = "confirmed"
                } else if let failure = device.lastFailure, failure.at >= started {
                    outcomes[i].outcome = "failed"
                    outcomes[i].reason = failure.reason
                } else {
                    still.append(i)
                }
            }
            waiting = still
        }
        let seq: JSONValue = result.map { .number(Double($0.lastSequence)) } ?? .null
        let confirmed = Double(outcomes.filter { $0.outcome == "confirmed" }.count)
        let devices: [JSONValue] = outcomes.map(\.json)
        let fields: [(String, JSONValue)] = [
            ("seq", seq), ("origin", .string(request.origin)), ("devices", .array(devices)),
            ("confirmed", .number(confirmed)), ("total", .number(Double(outcomes.count)))
        ]
        return .ok(.object(fields))
    }
}
