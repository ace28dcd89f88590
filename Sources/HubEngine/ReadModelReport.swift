import HubDomain

/// Read models as a person or a program reads them: JSON, or aligned text tables.
public enum ReadModelReport {
    static func time(_ micros: Int64?) -> JSONValue { micros.map { .string(ISO8601.format(micros: $0)) } ?? .null }
    static func number(_ value: Double?) -> JSONValue { value.map { .number($0) } ?? .null }
    static func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }

    /// The owner contact data as `hub replay --json` shows it: opened with the vault's key,
    /// `"erased"` once erased (an `OwnerDataErased` logged), `"key missing: ..."` when the key is not
    /// in the data directory without an erasure (a log copied without its `keys/`), `"unreadable:
    /// ..."` (why) when the key or the value cannot be read.
    static func owner(_ animal: AnimalRecord, vault: OwnerDataVault?) -> JSONValue {
        let a = animal.admission
        guard a.ownerName != nil || a.ownerAddress != nil || a.ownerPhone != nil else { return .null }
        guard let vault else { return .string("sealed") }
        if animal.ownerErased { return .string("erased") }
        switch vault.owner(of: a) {
        case .opened(let name, let address, let phone)?:
            return .object([("name", text(name)), ("address", text(address)), ("phone", text(phone))])
        case .unreadable(let why)?: return .string("unreadable: " + why)
        case .keyMissing?: return .string("key missing: \(vault.keyPath(a.animal)) is not in this data directory")
        case nil: return .null
        }
    }

    /// The read models as one JSON object; owner data is opened with `vault` when given, else shown sealed.
    public static func json(_ state: HubState, asOf: String, vault: OwnerDataVault? = nil) -> JSONValue {
        let devices = state.devices.all.sorted { $0.id < $1.id }
        return .object([
            ("as_of", .string(asOf)),
            ("last_sequence", .number(Double(state.lastSequence))),
            (
                "devices",
                .array(
                    devices.map { device in
                        .object([
                            ("id", .string(device.id)), ("name", .string(device.name)), ("driver", .string(device.driver)),
                            ("removed", .bool(device.removed)),
                            ("switch", .string(device.switchState.rawValue)), ("mode", .string(device.mode.name)),
                            (
                                "pending",
                                device.pending.map {
                                    .object([
                                        ("state", .string($0.state.name)), ("since", time($0.since)),
                                        ("command_id", text($0.commandId))
                                    ])
                                } ?? .null
                            ),
                            ("available", device.available.map { .bool($0) } ?? .null),
                            ("availability_reason", .string(device.availabilityReason)),
                            (
                                "readings",
                                .object(
                                    Quantity.allCases.compactMap { q in
                                        device.lastReading(q).map {
                                            (
                                                q.rawValue,
                                                .object([
                                                    ("value", .number($0.value)), ("unit", .string(q.unit)),
                                                    ("measured_at", time($0.measuredAt))
                                                ])
                                            )
                                        }
                                    })
                            )
                        ])
                    })
            ),
            (
                "energy",
                .array(
                    state.energy.accounts.keys.sorted().map { id in
                        let account = state.energy.accounts[id]!
                        return .object([
                            ("device", .string(id)), ("lifetime_kwh", .number(account.lifetimeKWh)),
                            ("counter_wh", number(account.lastCounterWh)), ("resets", .number(Double(account.resets))),
                            ("daily_kwh", .object(account.dailyWh.keys.sorted().map { ($0, .number(account.dailyWh[$0]! / 1000)) }))
                        ])
                    })
            ),
            (
                "activations",
                .object(
                    state.activations.byDevice.keys.sorted().map { id in
                        (
                            id,
                            .array(
                                state.activations[id].map { a in
                                    .object([
                                        ("name", .string(a.name)), ("start", .string(ISO8601.format(seconds: a.start))),
                                        ("length_minutes", .number(Double(a.lengthMinutes))),
                                        ("period_minutes", .number(Double(a.periodMinutes)))
                                    ])
                                })
                        )
                    })
            ),
            (
                "animals",
                .array(
                    state.animals.byId.values.sorted { $0.id < $1.id }.map { animal in
                        .object([
                            ("id", .string(animal.id)), ("name", .string(animal.admission.name)),
                            ("species", .string(animal.admission.species)),
                            ("status", .string(animal.isAdmitted ? "admitted" : "discharged")),
                            ("admitted_at", time(animal.admittedAt)), ("discharged_at", time(animal.dischargedAt)),
                            ("beacon", .string(animal.beacon)), ("room", text(animal.lastRoom)), ("last_seen", time(animal.lastSeenAt)),
                            ("heart_rate", number(animal.heartRate?.value)), ("temperature", number(animal.temperature?.value)),
                            ("owner", owner(animal, vault: vault))
                        ])
                    })
            ),
            (
                "audit",
                .object([
                    ("events", .number(Double(state.audit.totalEvents))),
                    (
                        "by_actor",
                        .object(state.audit.countsByActor.keys.sorted().map { ($0, .number(Double(state.audit.countsByActor[$0]!))) })
                    ),
                    (
                        "last_change",
                        .object(
                            state.audit.lastByStream.sorted { $0.key < $1.key }.map { stream, c in
                                return (
                                    stream,
                                    .object([
                                        ("seq", .number(Double(c.sequence))), ("time", time(c.timestamp)), ("type", .string(c.type)),
                                        ("actor", .string(c.actor)), ("cause", text(c.cause)), ("command_id", text(c.commandId))
                                    ])
                                )
                            })
                    )
                ])
            )
        ])
    }

    /// The read models as aligned text tables, as `hub state` prints them.
    public static func table(_ state: HubState, asOf: String) -> String {
        var out = "Read models as of \(asOf) (through sequence \(state.lastSequence))\n"
        let devices = state.devices.all.sorted { $0.id < $1.id }
        out += section(
            "Devices", header: ["id", "name", "driver", "switch", "mode", "pending", "available", "power W", "energy Wh"],
            rows: devices.map { d in
                [
                    d.id + (d.removed ? " (removed)" : ""), d.name, d.driver, d.switchState.rawValue, d.mode.name,
                    d.pending.map { $0.state.name } ?? "-", d.available.map { $0 ? "yes" : "no (\(d.availabilityReason))" } ?? "?",
                    format(d.lastReading(.power)?.value), format(d.lastReading(.energy)?.value)
                ]
            })
        out += section(
            "Energy ledger", header: ["device", "lifetime kWh", "counter Wh", "resets", "last day", "kWh that day"],
            rows: state.energy.accounts.keys.sorted().map { id in
                let a = state.energy.accounts[id]!
                let day = a.dailyWh.keys.max()
                return [
                    id, format(a.lifetimeKWh, digits: 3), format(a.lastCounterWh), String(a.resets), day ?? "-",
                    format(day.map { a.dailyWh[$0]! / 1000 }, digits: 3)
                ]
            })
        out += section(
            "Activations", header: ["device", "name", "start (UTC)", "length min", "period min"],
            rows: state.activations.byDevice.keys.sorted().flatMap { id in
                state.activations[id].map {
                    [id, $0.name, ISO8601.format(seconds: $0.start), String($0.lengthMinutes), String($0.periodMinutes)]
                }
            })
        out += section(
            "Animals", header: ["id", "name", "species", "status", "admitted", "beacon", "room", "last seen", "bpm", "°C"],
            rows: state.animals.byId.values.sorted { $0.id < $1.id }.map { a in
                [
                    a.id, a.admission.name, a.admission.species, a.isAdmitted ? "admitted" : "discharged",
                    ISO8601.format(micros: a.admittedAt),
                    a.beacon, a.lastRoom ?? "-", a.lastSeenAt.map { ISO8601.format(micros: $0) } ?? "-",
                    format(a.heartRate?.value), format(a.temperature?.value)
                ]
            })
        out += section(
            "Audit trail (\(state.audit.totalEvents) events)", header: ["actor", "events"],
            rows: state.audit.countsByActor.keys.sorted().map { [$0, String(state.audit.countsByActor[$0]!)] })
        out += section(
            "Last change per stream", header: ["stream", "seq", "time", "type", "by", "cause", "command id"],
            rows: state.audit.lastByStream.sorted { $0.key < $1.key }.map { s, c in
                return [s, String(c.sequence), ISO8601.format(micros: c.timestamp), c.type, c.actor, c.cause ?? "-", c.commandId ?? "-"]
            })
        return out
    }

    static func format(_ value: Double?, digits: Int = 1) -> String {
        guard let value else { return "-" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        return String(rounded)
    }

    static func section(_ title: String, header: [String], rows: [[String]]) -> String {
        var out = "\n" + title + "\n"
        guard !rows.isEmpty else { return out + "  (none)\n" }
        var widths = header.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func line(_ cells: [String]) -> String {
            "  "
                + cells.enumerated().map { $1.padded(to: widths[$0]) }.joined(separator: "  ")
                .trimmingTrailingSpaces() + "\n"
        }
        out += line(header)
        out += line(widths.map { String(repeating: "-", count: $0) })
        for row in rows { out += line(row) }
        return out
    }
}

extension String {
    func padded(to length: Int) -> String {
        count >= length ? self : self + String(repeating: " ", count: length - count)
    }

    func trimmingTrailingSpaces() -> String {
        var s = Substring(self)
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
