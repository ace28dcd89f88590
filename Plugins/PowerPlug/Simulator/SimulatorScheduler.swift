import DriverAPI
import PowerPlug

/// What the simulated plug holds and how it reacts, without any I/O: its slots, its mode and load,
/// its answers to commands and its own scheduler. The simulator guards one of these with a lock.
struct PlugDeviceState: Sendable, Equatable {
    /// Every slot; nil = empty.
    var slots: [DeviceActivation?]
    var manual = false
    var on = false

    init(slotCount: Int) {
        slots = Array(repeating: nil, count: slotCount)
    }

    var status: PlugMessage { .status(manual: manual, on: on) }

    /// Used slots in slot order.
    var used: [DeviceActivation] { slots.compactMap { $0 } }

    /// The result of one command: the messages to send (each in one write) and whether the stored
    /// activations or the mode changed (and must be saved).
    struct Outcome: Equatable {
        var replies: [PlugMessage]
        var changed: Bool
    }

    /// Carries out a client command. The status always follows (it is the confirmation).
    mutating func apply(_ command: PlugCommand, now: Int64) -> Outcome {
        var replies: [PlugMessage] = []
        var changed = false
        switch command {
        case .list:
            replies.append(.activations(slots))
        case .update(let index, let record):
            if Int(index) < slots.count {
                slots[Int(index)] = record
                changed = true
            }
        case .delete(let index):
            if Int(index) < slots.count {
                slots.remove(at: Int(index))
                slots.append(nil)
                changed = true
            }
        case .setSwitch(let newOn):
            if newOn {
                manual = true
                on = true
            } else {
                manual = false
                on = false
                rollForward(now: now)
            }
            changed = true
        }
        replies.append(status)
        return Outcome(replies: replies, changed: changed)
    }

    /// Puts every repeating activation whose window already passed on its next window (at boot and
    /// when leaving manual mode).
    mutating func rollForward(now: Int64) {
        for i in slots.indices {
            if let a = slots[i] { slots[i] = PowerPlugProtocol.rolledForward(a, now: now) }
        }
    }

    /// Replaces the stored list (used slots packed from 0), as the phone app or an SD card swap would.
    mutating func replace(with list: [DeviceActivation]) {
        let kept = list.prefix(slots.count)
        slots = kept.map { Optional($0) } + Array(repeating: nil, count: slots.count - kept.count)
    }

    /// One check of the plug's own scheduler (skipped in manual mode): the load is on while some used
    /// slot has `start <= now <= start + 60*length`; a repeating slot whose window has passed moves on by
    /// its period. Returns whether the load changed; `startsMoved` tells whether any start moved.
    mutating func check(now: Int64) -> (loadChanged: Bool, startsMoved: Bool) {
        guard !manual else { return (false, false) }
        var load = false
        var moved = false
        for i in slots.indices {
            guard var a = slots[i] else { continue }
            var end = a.start + Int64(a.lengthMinutes) * 60
            if now > end && a.periodMinutes > 0 {
                a.start += Int64(a.periodMinutes) * 60
                end = a.start + Int64(a.lengthMinutes) * 60
                slots[i] = a
                moved = true
            }
            if a.start <= now && now <= end { load = true }
        }
        let changed = load != on
        on = load
        return (changed, moved)
    }
}
