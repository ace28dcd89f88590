// A device that stores its own activations (the seed's TCP plug) can disagree with the log:
// someone edited the plug from its phone app, or its SD card was swapped. The hub records the
// difference as a fact and reconciles it by the operator's policy.

/// What the hub does when a device's activations differ from the log's.
public enum DivergencePolicy: UInt8, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// The log is the truth: the log's activations are written back to the device (default).
    case restore = 0
    /// The device is the truth: `ActivationChanged` events bring the log in line with the device.
    case adopt = 1
    /// Record the difference and change nothing.
    case report = 2

    /// The wire name: "restore", "adopt" or "report".
    public var name: String {
        switch self {
        case .restore: return "restore"
        case .adopt: return "adopt"
        case .report: return "report"
        }
    }

    /// Parses the wire name; nil for anything else.
    public init?(name: String) {
        guard let p = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = p
    }
}

/// The device holds other activations than the log says it should.
public struct ActivationsDiverged: Sendable, Equatable, Codable {
    /// The device id.
    public var device: String
    /// What the log says the device holds.
    public var expected: [Activation]
    /// What the device reported.
    public var found: [Activation]
    /// What the hub did about it. `adopt` falls back to `report` when the device's list cannot be
    /// represented in the log (duplicate or invalid names).
    public var resolution: DivergencePolicy

    /// Creates the event.
    public init(device: String, expected: [Activation], found: [Activation], resolution: DivergencePolicy) {
        self.device = device; self.expected = expected; self.found = found; self.resolution = resolution
    }
}

extension Activation {
    /// The same timer as `other`, allowing for the device having rolled a repeating start forward by
    /// whole periods (the plug does that as windows pass).
    public func sameSchedule(as other: Activation) -> Bool {
        guard name == other.name, lengthMinutes == other.lengthMinutes, periodMinutes == other.periodMinutes else { return false }
        if start == other.start { return true }
        guard periodMinutes > 0 else { return false }
        let step = Int64(periodMinutes) * 60
        return (start - other.start) % step == 0
    }
}

/// Whether two lists hold the same timers (by name, order ignored, roll-forward allowed).
public func sameActivations(_ a: [Activation], _ b: [Activation]) -> Bool {
    guard a.count == b.count else { return false }
    var rest = b
    for x in a {
        guard let i = rest.firstIndex(where: { x.sameSchedule(as: $0) }) else { return false }
        rest.remove(at: i)
    }
    return true
}

extension ByteWriter {
    mutating func activations(_ list: [Activation]) {
        u16(UInt16(clamping: list.count))
        for a in list.prefix(Int(UInt16.max)) {
            string(a.name); i64(a.start); u16(a.lengthMinutes); u16(a.periodMinutes)
        }
    }
}

extension ByteReader {
    mutating func activations(_ field: StaticString) throws(DecodingFailure) -> [Activation] {
        let count = Int(try u16(field))
        var out: [Activation] = []
        out.reserveCapacity(min(count, 64))
        for _ in 0..<count {
            out.append(
                Activation(
                    name: try string(field), start: try i64(field),
                    lengthMinutes: try u16(field), periodMinutes: try u16(field)))
        }
        return out
    }
}

extension Activation {
    @usableFromInline var jsonValue: JSONValue {
        .object([
            ("name", .string(name)), ("start", .string(ISO8601.format(seconds: start))),
            ("length_minutes", .number(Double(lengthMinutes))), ("period_minutes", .number(Double(periodMinutes)))
        ])
    }
}

extension JSONFieldReader {
    func activations(_ field: String) throws(DecodingFailure) -> [Activation] {
        guard case .array(let items) = try value(field) else { throw failure(field, "expected a list of activations") }
        var out: [Activation] = []
        for (i, item) in items.enumerated() {
            guard case .object = item else { throw failure("\(field)[\(i)]", "expected an object") }
            let r = JSONFieldReader(body: item, type: type, schemaVersion: schemaVersion, prefix: prefix + "\(field)[\(i)].")
            let startMicros = try r.time("start")
            guard startMicros % Civil.microsPerSecond == 0 else { throw r.failure("start", "must be whole seconds") }
            out.append(
                Activation(
                    name: try r.string("name"), start: startMicros / Civil.microsPerSecond,
                    lengthMinutes: try r.u16("length_minutes"), periodMinutes: try r.u16("period_minutes")))
        }
        return out
    }
}

/// The events for a device's read-back list: nothing when it matches the log (roll-forward
/// allowed) or repeats a difference already recorded under `report`; otherwise `ActivationsDiverged`,
/// followed under `adopt` by the `ActivationChanged` events that make the log match the device.
func reconcileActivations(
    device: String, found: [Activation], policy: DivergencePolicy, state: HubState,
    limits: DomainLimits
) -> [HubEvent] {
    let expected = state.activations[device]
    if sameActivations(expected, found) { return [] }
    if policy == .report, let open = state.activations.unresolved[device], sameActivations(open.found, found) { return [] }
    var resolution = policy
    if policy == .adopt && !adoptable(found, limits: limits) { resolution = .report }
    var events: [HubEvent] = [
        .activationsDiverged(
            ActivationsDiverged(
                device: device, expected: expected, found: found,
                resolution: resolution))
    ]
    guard resolution == .adopt else { return events }
    for old in expected where !found.contains(where: { $0.name == old.name }) {
        events.append(
            .activationChanged(
                ActivationChanged(
                    device: device, change: .removed, name: old.name, start: old.start,
                    lengthMinutes: old.lengthMinutes, periodMinutes: old.periodMinutes)))
    }
    for new in found {
        let old = expected.first { $0.name == new.name }
        if let old, old.sameSchedule(as: new) { continue }
        events.append(
            .activationChanged(
                ActivationChanged(
                    device: device, change: old == nil ? .added : .updated, name: new.name,
                    start: new.start, lengthMinutes: new.lengthMinutes,
                    periodMinutes: new.periodMinutes)))
    }
    return events
}

/// A device list the log can hold: unique printable-ASCII names within the limits, lengths of at
/// least a minute, starts within u32 seconds, no more than the slot limit.
private func adoptable(_ list: [Activation], limits: DomainLimits) -> Bool {
    guard list.count <= limits.maxActivationsPerDevice, Set(list.map(\.name)).count == list.count else { return false }
    return list.allSatisfy { a in
        !a.name.isEmpty && a.name.count <= limits.maxActivationNameLength
            && a.name.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
            && a.lengthMinutes >= 1 && a.start >= 0 && a.start <= Int64(UInt32.max)
    }
}
