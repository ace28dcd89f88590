// The JSON form of events: snake_case keys, ISO-8601 times, enum names as strings.

extension HubEvent {
    /// The JSON body of this event (keys in a fixed order).
    public func jsonBody() -> JSONValue {
        var builder = JSONBuilder()
        write(to: &builder)
        return builder.value
    }

    /// Writes ``jsonBody()`` into `s`: as text straight into bytes with ``JSONText`` (the export
    /// line and the audit tree's leaf), as a value with ``JSONBuilder``. Inlinable, so that a
    /// caller in another module gets it specialised for its sink.
    @inlinable
    public func write<S: JSONSink>(to s: inout S) {
        s.beginObject()
        switch self {
        case .deviceRegistered(let e):
            s.member("device", e.device); s.member("driver", e.driver); s.member("name", e.name)
            s.member("config", e.config); s.member("hardware_id", e.hardwareId)
            if let o = e.outlet {
                s.key("outlet_of"); s.beginObject()
                s.member("strip", o.strip); s.member("strip_name", o.stripName); s.member("number", number: Double(o.number))
                s.member("strip_hardware_id", o.stripHardwareId)
                s.endObject()
            }
        case .deviceRenamed(let e):
            s.member("device", e.device); s.member("name", e.name)
        case .deviceRemoved(let e):
            s.member("device", e.device)
        case .switchRequested(let e):
            s.member("device", e.device); s.member("state", e.state.name)
        case .switchToggled(let e):
            s.member("device", e.device); s.member("state", e.state.name); s.member("cause", e.cause.name)
        case .switchFailed(let e):
            s.member("device", e.device); s.member("state", e.state.name); s.member("reason", e.reason)
        case .modeChanged(let e):
            s.member("device", e.device); s.member("mode", e.mode.name)
        case .activationChanged(let e):
            s.member("device", e.device); s.member("change", e.change.name); s.member("name", e.name)
            s.time("start", micros: e.start * Civil.microsPerSecond)
            s.member("length_minutes", number: Double(e.lengthMinutes))
            s.member("period_minutes", number: Double(e.periodMinutes))
            s.member("repeat", value: e.daily.map(\.jsonValue) ?? .null)
        case .availabilityChanged(let e):
            s.member("device", e.device); s.key("available"); s.bool(e.available); s.member("reason", e.reason)
        case .readingRecorded(let e):
            s.key("subject")
            s.beginObject(); s.member("kind", e.subject.kind); s.member("id", e.subject.id); s.endObject()
            s.member("quantity", e.quantity.rawValue); s.member("value", number: e.value)
            s.member("unit", e.quantity.unit); s.time("measured_at", micros: e.measuredAt)
        case .energyCounterReset(let e):
            s.member("device", e.device); s.member("previous_wh", number: e.previousWh); s.member("new_wh", number: e.newWh)
        case .groupDefined(let e):
            s.member("group", e.group); s.member("name", e.name)
            s.key("members"); s.beginArray(); for m in e.members { s.string(m) }; s.endArray()
        case .groupRemoved(let e):
            s.member("group", e.group)
        case .sceneDefined(let e):
            s.member("scene", e.scene); s.member("name", e.name); s.member("targets", value: .array(e.targets.map(\.jsonValue)))
        case .sceneRemoved(let e):
            s.member("scene", e.scene)
        case .multiSwitchRequested(let e):
            s.member("origin", e.origin); s.member("targets", value: .array(e.targets.map(\.jsonValue)))
        case .activationsDiverged(let e):
            s.member("device", e.device); s.member("expected", value: .array(e.expected.map(\.jsonValue)))
            s.member("found", value: .array(e.found.map(\.jsonValue))); s.member("resolution", e.resolution.name)
        case .animalAdmitted(let e):
            s.member("animal", e.animal); s.member("name", e.name); s.member("gender", e.gender)
            s.member("birth_date", e.birthDate); s.member("weight_kg", number: e.weightKg); s.member("species", e.species)
            s.member("breed", e.breed); s.member("coat", e.coat); s.member("owner_name", e.ownerName)
            s.member("owner_address", e.ownerAddress); s.member("owner_phone", e.ownerPhone)
            s.member("motive", e.motive); s.member("veterinarian", e.veterinarian)
            s.member("observations", e.observations); s.member("photo", e.photo); s.member("beacon", e.beacon)
        case .animalDischarged(let e):
            s.member("animal", e.animal); s.member("exit_weight_kg", number: e.exitWeightKg)
            s.member("veterinarian", e.veterinarian); s.member("observations", e.observations)
        case .ownerDataErased(let e):
            s.member("animal", e.animal)
        case .animalUnseen(let e):
            s.member("animal", e.animal); s.member("last_room", e.lastRoom); s.time("last_seen", micros: e.lastSeen)
        case .animalSighted(let e):
            s.member("animal", e.animal); s.member("room", e.room); s.member("beacon", e.beacon); s.time("at", micros: e.at)
        case .commandRejected(let e):
            s.member("command", e.command); s.member("target", e.target); s.member("code", e.code)
            s.member("message", e.message); s.member("command_id", e.commandId)
        }
        s.endObject()
    }

    /// Builds an event from its JSON body. Missing or wrongly typed fields throw a
    /// `DecodingFailure` naming the field. Unknown keys are ignored.
    public static func fromJSON(type: String, schemaVersion: UInt16, body: JSONValue) throws(DecodingFailure) -> HubEvent {
        let r = JSONFieldReader(body: body, type: type, schemaVersion: schemaVersion)
        guard case .object = body else {
            if !allTypeNames.contains(type) || schemaVersion < 1 || schemaVersion > currentSchemaVersion(of: type) {
                throw unknownTypeOrVersion(type: type, schemaVersion: schemaVersion)
            }
            throw DecodingFailure(type: type, schemaVersion: schemaVersion, field: "", reason: "body is not a JSON object")
        }
        switch (EventType(rawValue: type), schemaVersion) {
        case (.deviceRegistered?, 1), (.deviceRegistered?, 2):
            var e = DeviceRegistered(
                device: try r.string("device"), driver: try r.string("driver"), name: try r.string("name"),
                config: try r.string("config"), hardwareId: try r.optionalString("hardware_id"))
            if schemaVersion == 2, let o = r.body["outlet_of"], o != .null {
                let outlet = JSONFieldReader(body: o, type: type, schemaVersion: schemaVersion, prefix: "outlet_of.")
                let number = try outlet.u16("number")
                guard number >= 1 else { throw outlet.failure("number", "must be 1 or more") }
                e.outlet = OutletOf(
                    strip: try outlet.string("strip"), stripName: try outlet.string("strip_name"), number: Int(number),
                    stripHardwareId: try outlet.optionalString("strip_hardware_id"))
            }
            return .deviceRegistered(e)
        case (.deviceRenamed?, 1):
            return .deviceRenamed(DeviceRenamed(device: try r.string("device"), name: try r.string("name")))
        case (.deviceRemoved?, 1):
            return .deviceRemoved(DeviceRemoved(device: try r.string("device")))
        case (.switchRequested?, 1):
            return .switchRequested(
                SwitchRequested(
                    device: try r.string("device"),
                    state: try r.named("state", SwitchState.init(name:))))
        case (.switchToggled?, 1):
            return .switchToggled(
                SwitchToggled(
                    device: try r.string("device"),
                    state: try r.named("state", SwitchState.init(name:)),
                    cause: try r.named("cause", SwitchCause.init(name:))))
        case (.switchFailed?, 1):
            return .switchFailed(
                SwitchFailed(
                    device: try r.string("device"),
                    state: try r.named("state", SwitchState.init(name:)),
                    reason: try r.string("reason")))
        case (.modeChanged?, 1):
            return .modeChanged(
                ModeChanged(
                    device: try r.string("device"),
                    mode: try r.named("mode", DeviceMode.init(name:))))
        case (.activationChanged?, 1), (.activationChanged?, 2):
            let startMicros = try r.time("start")
            guard startMicros % Civil.microsPerSecond == 0 else {
                throw r.failure("start", "must be whole seconds")
            }
            return .activationChanged(
                ActivationChanged(
                    device: try r.string("device"), change: try r.named("change", ActivationChange.init(name:)),
                    name: try r.string("name"), start: startMicros / Civil.microsPerSecond,
                    lengthMinutes: try r.u16("length_minutes"), periodMinutes: try r.u16("period_minutes"),
                    daily: schemaVersion >= 2 ? try r.dailyRepeat("repeat") : nil))
        case (.groupDefined?, 1):
            return .groupDefined(GroupDefined(group: try r.string("group"), name: try r.string("name"), members: try r.strings("members")))
        case (.groupRemoved?, 1):
            return .groupRemoved(GroupRemoved(group: try r.string("group")))
        case (.sceneDefined?, 1):
            return .sceneDefined(SceneDefined(scene: try r.string("scene"), name: try r.string("name"), targets: try r.targets("targets")))
        case (.sceneRemoved?, 1):
            return .sceneRemoved(SceneRemoved(scene: try r.string("scene")))
        case (.multiSwitchRequested?, 1):
            return .multiSwitchRequested(MultiSwitchRequested(origin: try r.string("origin"), targets: try r.targets("targets")))
        case (.activationsDiverged?, 1):
            return .activationsDiverged(
                ActivationsDiverged(
                    device: try r.string("device"), expected: try r.activations("expected"), found: try r.activations("found"),
                    resolution: try r.named("resolution", DivergencePolicy.init(name:))))
        case (.availabilityChanged?, 1):
            return .availabilityChanged(
                AvailabilityChanged(
                    device: try r.string("device"),
                    available: try r.bool("available"),
                    reason: try r.string("reason")))
        case (.readingRecorded?, 1):
            guard let subj = body["subject"], case .object = subj else {
                throw r.failure("subject", "expected an object {\"kind\",\"id\"}")
            }
            let sr = JSONFieldReader(body: subj, type: type, schemaVersion: schemaVersion, prefix: "subject.")
            let kind = try sr.string("kind")
            let id = try sr.string("id")
            let subject: Subject
            switch kind {
            case "device": subject = .device(id)
            case "animal": subject = .animal(id)
            default: throw r.failure("subject.kind", "unknown kind \"\(kind)\"")
            }
            let quantity = try r.named("quantity", Quantity.init(rawValue:))
            if let unit = body["unit"], unit != .string(quantity.unit) {
                throw r.failure("unit", "expected \"\(quantity.unit)\" for \(quantity.rawValue)")
            }
            return .readingRecorded(
                ReadingRecorded(
                    subject: subject, quantity: quantity,
                    value: try r.double("value"), measuredAt: try r.time("measured_at")))
        case (.energyCounterReset?, 1):
            return .energyCounterReset(
                EnergyCounterReset(
                    device: try r.string("device"),
                    previousWh: try r.double("previous_wh"),
                    newWh: try r.double("new_wh")))
        case (.animalAdmitted?, 1):
            return .animalAdmitted(
                AnimalAdmitted(
                    animal: try r.string("animal"), name: try r.string("name"), gender: try r.optionalString("gender"),
                    birthDate: try r.optionalString("birth_date"), weightKg: try r.double("weight_kg"),
                    species: try r.string("species"), breed: try r.optionalString("breed"),
                    coat: try r.optionalString("coat"), ownerName: try r.optionalString("owner_name"),
                    ownerAddress: try r.optionalString("owner_address"), ownerPhone: try r.optionalString("owner_phone"),
                    motive: try r.optionalString("motive"), veterinarian: try r.optionalString("veterinarian"),
                    observations: try r.optionalString("observations"), photo: try r.optionalString("photo"),
                    beacon: try r.string("beacon")))
        case (.animalDischarged?, 1):
            return .animalDischarged(
                AnimalDischarged(
                    animal: try r.string("animal"), exitWeightKg: try r.double("exit_weight_kg"),
                    veterinarian: try r.optionalString("veterinarian"), observations: try r.optionalString("observations")))
        case (.ownerDataErased?, 1):
            return .ownerDataErased(OwnerDataErased(animal: try r.string("animal")))
        case (.animalUnseen?, 1):
            return .animalUnseen(
                AnimalUnseen(
                    animal: try r.string("animal"), lastRoom: try r.string("last_room"),
                    lastSeen: try r.time("last_seen")))
        case (.animalSighted?, 1):
            return .animalSighted(
                AnimalSighted(
                    animal: try r.string("animal"), room: try r.string("room"),
                    beacon: try r.string("beacon"), at: try r.time("at")))
        case (.commandRejected?, 1):
            return .commandRejected(
                CommandRejected(
                    command: try r.string("command"), target: try r.optionalString("target"), code: try r.string("code"),
                    message: try r.string("message"), commandId: try r.optionalString("command_id")))
        default:
            throw unknownTypeOrVersion(type: type, schemaVersion: schemaVersion)
        }
    }
}

extension JSONSink {
    /// A member whose value is an ISO-8601 time (``ISO8601/format(micros:)``), written in place.
    public mutating func time(_ key: StaticString, micros: Int64) {
        self.key(key)
        plainString { ISO8601.write(micros: micros, to: &$0) }
    }
}

/// Reads typed fields from a JSON object, naming the field in every error.
struct JSONFieldReader {
    let body: JSONValue
    let type: String
    let schemaVersion: UInt16
    var prefix: String = ""

    func failure(_ field: String, _ reason: String) -> DecodingFailure {
        DecodingFailure(type: type, schemaVersion: schemaVersion, field: prefix + field, reason: reason)
    }

    func value(_ field: String) throws(DecodingFailure) -> JSONValue {
        guard let v = body[field] else { throw failure(field, "missing") }
        return v
    }

    func string(_ field: String) throws(DecodingFailure) -> String {
        guard case .string(let s) = try value(field) else { throw failure(field, "expected a string") }
        return s
    }

    func optionalString(_ field: String) throws(DecodingFailure) -> String? {
        guard let v = body[field] else { return nil }
        switch v {
        case .null: return nil
        case .string(let s): return s
        default: throw failure(field, "expected a string or null")
        }
    }

    func bool(_ field: String) throws(DecodingFailure) -> Bool {
        guard case .bool(let b) = try value(field) else { throw failure(field, "expected true or false") }
        return b
    }

    func double(_ field: String) throws(DecodingFailure) -> Double {
        guard case .number(let d) = try value(field) else { throw failure(field, "expected a number") }
        return d
    }

    func u16(_ field: String) throws(DecodingFailure) -> UInt16 {
        let d = try double(field)
        guard d >= 0, d <= 65535, Double(UInt16(d)) == d else { throw failure(field, "expected an integer in 0...65535") }
        return UInt16(d)
    }

    func time(_ field: String) throws(DecodingFailure) -> Int64 {
        let s = try string(field)
        guard let t = ISO8601.parse(s) else { throw failure(field, "expected an ISO-8601 time, got \"\(s)\"") }
        return t
    }

    func named<E>(_ field: String, _ make: (String) -> E?) throws(DecodingFailure) -> E {
        let s = try string(field)
        guard let e = make(s) else { throw failure(field, "unknown value \"\(s)\"") }
        return e
    }
}
