import HubDomain
import HubSchedule

/// The state as JSON, the same on every surface (the MQTT state topics, the HTTP API, the console's
/// live updates): pure functions of the read models.
///
/// Numbers are plain JSON numbers: kWh rounded to 3 decimals, W and V to 1, A to 3. Times are ISO-8601 UTC.
/// Animal payloads carry no owner data: personal data stays off the broker.
public enum StateJSON {
    /// `<base>/device/<id>/state`. The view's `energy` is the device's ledger account (nil: no energy
    /// reading yet), `dayKey` the UTC day (`YYYY-MM-DD`) for `energy_today` (nil: `energy_today` is null).
    public static func device(_ view: Hub.DeviceView, dayKey: String?, now: Int64? = nil) -> JSONValue {
        let record = view.record, energy = view.energy
        let divergence: JSONValue =
            view.divergence.map { d in
                .object([("found", .array(d.found.map(activation))), ("expected", .array(d.expected.map(activation)))])
            } ?? .null
        let pending: JSONValue =
            record.pending.map { p in
                .object([
                    ("state", .string(onOff(p.state))), ("since", .string(ISO8601.format(micros: p.since))),
                    ("command_id", p.commandId.map { .string($0) } ?? .null)
                ])
            } ?? .null
        let failure: JSONValue =
            record.lastFailure.map { f in
                .object([("state", .string(onOff(f.state))), ("reason", .string(f.reason)), ("at", .string(ISO8601.format(micros: f.at)))])
            } ?? .null
        let energyToday: JSONValue
        if let energy, let dayKey { energyToday = kWh(energy.wh(on: dayKey)) } else { energyToday = .null }
        return .object([
            ("id", .string(record.id)),
            ("name", .string(record.name)),
            ("driver", .string(record.driver)),
            // The strip this device is an outlet of: its id, name and the outlet's number (null: none).
            (
                "strip",
                record.outlet.map { o in
                    .object([("id", .string(o.strip)), ("name", .string(o.stripName)), ("outlet", .number(Double(o.number)))])
                } ?? .null
            ),
            ("switch", record.switchState.state.map { .string(onOff($0)) } ?? .null),
            ("mode", .string(record.mode.name)),
            ("pending", pending),
            ("last_failure", failure),
            ("availability", .string(availability(record))),
            ("availability_reason", .string(record.availabilityReason)),
            ("power", reading(record.lastReadings.power, decimals: 1)),
            ("voltage", reading(record.lastReadings.voltage, decimals: 1)),
            ("current", reading(record.lastReadings.current, decimals: 3)),
            ("energy", energy.map { kWh($0.lifetimeWh) } ?? .null),
            ("energy_today", energyToday),
            ("activations", .array(view.activations.map(activation))),
            ("activations_diverged", divergence),
            (
                "activation_conflicts",
                now.map { conflicts(ScheduleMath.conflicts(in: view.activations, from: $0 / 1_000_000)) } ?? .array([])
            ),
            ("removed", .bool(record.removed))
        ])
    }

    static func activation(_ a: Activation) -> JSONValue {
        .object([
            ("name", .string(a.name)), ("start", .string(ISO8601.format(seconds: a.start))),
            ("length", .number(Double(a.lengthMinutes))), ("period", .number(Double(a.periodMinutes))),
            ("repeat", a.daily?.jsonValue ?? .null)
        ])
    }

    /// `online`, `offline` or `unknown` (no report yet).
    public static func availability(_ record: DeviceRecord) -> String {
        switch record.available {
        case true?: return "online"
        case false?: return "offline"
        case nil: return "unknown"
        }
    }

    /// `<base>/animal/<id>/state`. No owner name, address or phone.
    /// `live`: where and when a bridge last heard the beacon (not logged; newer than the log's last fact).
    public static func animal(_ record: AnimalRecord, live: (room: String, at: Int64)? = nil) -> JSONValue {
        let lastSeen = max(record.lastSeenAt ?? Int64.min, live?.at ?? Int64.min)
        return .object([
            ("id", .string(record.id)),
            ("name", .string(record.admission.name)),
            ("species", .string(record.admission.species)),
            ("status", .string(record.status.rawValue)),
            ("room", record.lastRoom.map { .string($0) } ?? .null),
            ("last_seen", lastSeen == Int64.min ? .null : .string(ISO8601.format(micros: lastSeen))),
            ("present", .bool(record.isAdmitted && lastSeen != Int64.min && record.unseenSince == nil)),
            ("beacon", .string(record.beacon)),
            ("heart_rate", record.heartRate.map { .number($0.value) } ?? .null),
            ("temperature", record.temperature.map { .number($0.value) } ?? .null),
            ("admitted_at", .string(ISO8601.format(micros: record.admittedAt))),
            ("discharged_at", record.dischargedAt.map { .string(ISO8601.format(micros: $0)) } ?? .null)
        ])
    }

    // MARK: Helpers

    /// `ON` / `OFF`, as on the switch topics.
    public static func onOff(_ state: SwitchState) -> String { state == .on ? "ON" : "OFF" }

    /// Wh -> kWh, 3 decimals.
    public static func kWh(_ wh: Double) -> JSONValue { rounded(wh / 1000, 3) }

    static func reading(_ r: ReadingValue?, decimals: Int) -> JSONValue {
        guard let r else { return .null }
        return rounded(r.value, decimals)
    }

    /// `value` rounded to `decimals` places (half away from zero), as a JSON number; non-finite -> null.
    public static func rounded(_ value: Double, _ decimals: Int) -> JSONValue {
        guard value.isFinite else { return .null }
        guard abs(value) < 1e12 else { return .number(value) }  // nothing after the point to round
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let r = (value * scale).rounded() / scale
        return .number(r == 0 ? 0 : r)  // no "-0"
    }
}

// MARK: Groups, scenes, conflicts

extension StateJSON {
    /// `<base>/group/<id>/state`: members, how many are on, and the group's switch (ON when any member is on).
    public static func group(_ group: GroupRecord, devices: DevicesModel) -> JSONValue {
        let members = group.members.compactMap { id in devices[id].flatMap { $0.removed ? nil : $0 } }
        let on = members.filter { $0.switchState == .on }.count
        return .object([
            ("id", .string(group.id)),
            ("name", .string(group.name)),
            ("members", .array(group.members.map { .string($0) })),
            ("switch", .string(on > 0 ? "ON" : "OFF")),
            ("on", .number(Double(on))),
            ("total", .number(Double(members.count)))
        ])
    }

    /// A scene's state object: id, name and its targets.
    public static func scene(_ scene: SceneRecord) -> JSONValue {
        .object([
            ("id", .string(scene.id)),
            ("name", .string(scene.name)),
            ("states", .object(scene.targets.map { ($0.device, .string($0.state.name.uppercased())) }))
        ])
    }

    /// `[{"first","second","at"}]`: activations of one device whose windows overlap in the next 14 days.
    public static func conflicts(_ list: [ActivationConflict]) -> JSONValue {
        .array(
            list.map { c in
                .object([("first", .string(c.first)), ("second", .string(c.second)), ("at", .string(ISO8601.format(seconds: c.at)))])
            })
    }
}
