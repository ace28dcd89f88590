// The binary payload codec: what the log stores. Field order is the declaration order of each
// event struct. Decoding switches on (type, schemaVersion) so that a later schema can upcast.

extension Subject {
    fileprivate var kindCode: UInt8 {
        switch self {
        case .device: return 0
        case .animal: return 1
        }
    }
}

extension HubEvent {
    /// The binary payload of this event in schema version `schemaVersion` (default: the current one).
    /// An older version is written only to reproduce an old record byte for byte (import).
    public func encodePayload(schemaVersion version: UInt16? = nil) -> [UInt8] {
        var w = ByteWriter(capacity: 48)
        switch self {
        case .deviceRegistered(let e):
            w.string(e.device); w.string(e.driver); w.string(e.name); w.string(e.config)
            w.optionalString(e.hardwareId)
            if (version ?? 2) >= 2 {
                if let o = e.outlet {
                    w.u8(1); w.string(o.strip); w.string(o.stripName); w.u16(UInt16(clamping: o.number))
                    w.optionalString(o.stripHardwareId)
                } else {
                    w.u8(0)
                }
            }
        case .deviceRenamed(let e):
            w.string(e.device); w.string(e.name)
        case .deviceRemoved(let e):
            w.string(e.device)
        case .switchRequested(let e):
            w.string(e.device); w.u8(e.state.rawValue)
        case .switchToggled(let e):
            w.string(e.device); w.u8(e.state.rawValue); w.u8(e.cause.rawValue)
        case .switchFailed(let e):
            w.string(e.device); w.u8(e.state.rawValue); w.string(e.reason)
        case .modeChanged(let e):
            w.string(e.device); w.u8(e.mode.rawValue)
        case .activationChanged(let e):
            w.string(e.device); w.u8(e.change.rawValue); w.string(e.name); w.i64(e.start)
            w.u16(e.lengthMinutes); w.u16(e.periodMinutes)
            if (version ?? 2) >= 2 {
                if let d = e.daily {
                    w.u8(1); w.u16(d.minuteOfDay); w.u8(d.weekdays); w.string(d.timeZone)
                } else {
                    w.u8(0)
                }
            }
        case .availabilityChanged(let e):
            w.string(e.device); w.bool(e.available); w.string(e.reason)
        case .readingRecorded(let e):
            w.u8(e.subject.kindCode); w.string(e.subject.id); w.u8(e.quantity.code); w.f64(e.value)
            w.i64(e.measuredAt)
        case .energyCounterReset(let e):
            w.string(e.device); w.f64(e.previousWh); w.f64(e.newWh)
        case .activationsDiverged(let e):
            w.string(e.device); w.activations(e.expected); w.activations(e.found); w.u8(e.resolution.rawValue)
        case .groupDefined(let e):
            w.string(e.group); w.string(e.name); w.strings(e.members)
        case .groupRemoved(let e):
            w.string(e.group)
        case .sceneDefined(let e):
            w.string(e.scene); w.string(e.name); w.targets(e.targets)
        case .sceneRemoved(let e):
            w.string(e.scene)
        case .multiSwitchRequested(let e):
            w.string(e.origin); w.targets(e.targets)
        case .animalAdmitted(let e):
            w.string(e.animal); w.string(e.name); w.optionalString(e.gender); w.optionalString(e.birthDate)
            w.f64(e.weightKg); w.string(e.species); w.optionalString(e.breed); w.optionalString(e.coat)
            w.optionalString(e.ownerName); w.optionalString(e.ownerAddress); w.optionalString(e.ownerPhone)
            w.optionalString(e.motive); w.optionalString(e.veterinarian); w.optionalString(e.observations)
            w.optionalString(e.photo); w.string(e.beacon)
        case .animalDischarged(let e):
            w.string(e.animal); w.f64(e.exitWeightKg); w.optionalString(e.veterinarian)
            w.optionalString(e.observations)
        case .animalSighted(let e):
            w.string(e.animal); w.string(e.room); w.string(e.beacon); w.i64(e.at)
        case .animalUnseen(let e):
            w.string(e.animal); w.string(e.lastRoom); w.i64(e.lastSeen)
        case .ownerDataErased(let e):
            w.string(e.animal)
        case .commandRejected(let e):
            w.string(e.command); w.optionalString(e.target); w.string(e.code); w.string(e.message)
            w.optionalString(e.commandId)
        }
        return w.bytes
    }

    /// Decodes a stored payload. Throws `DecodingFailure` for an unknown type, an unknown (or
    /// future) schema version, truncated or trailing bytes, invalid UTF-8 or invalid enum values.
    public static func decode(type: String, schemaVersion: UInt16, payload: [UInt8]) throws(DecodingFailure) -> HubEvent {
        let result: Result<HubEvent, DecodingFailure> = payload.withUnsafeBytes { buf in
            do throws(DecodingFailure) {
                return .success(try decode(type: type, schemaVersion: schemaVersion, payload: buf))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// As `decode(type:schemaVersion:payload:)` for a payload that is already in memory (the log's mapped record), without a copy.
    public static func decode(type: String, schemaVersion: UInt16, payload: UnsafeRawBufferPointer) throws(DecodingFailure) -> HubEvent {
        try decode(type: type, as: EventType(rawValue: type), schemaVersion: schemaVersion, payload: payload)
    }

    /// As ``decode(type:schemaVersion:payload:)-(_,_,UnsafeRawBufferPointer)``, with the type's name already
    /// looked up (`known`: `EventType(rawValue: type)`), for replay, which sees a handful of types
    /// millions of times.
    public static func decode(
        type: String, as known: EventType?, schemaVersion: UInt16, payload: UnsafeRawBufferPointer
    ) throws(DecodingFailure) -> HubEvent {
        var r = ByteReader(payload, type: type, schemaVersion: schemaVersion)
        let event: HubEvent
        // Ordered roughly by expected frequency. A future schema 2 adds a case such as
        // `case (.readingRecorded?, 2)` and upcasts `(.readingRecorded?, 1)` into the same value.
        switch (known, schemaVersion) {
        case (.readingRecorded?, 1):
            let kind = try r.u8("subject")
            let id = try r.string("subject")
            let subject: Subject
            switch kind {
            case 0: subject = .device(id)
            case 1: subject = .animal(id)
            default: throw r.failure("subject", "invalid enum raw value \(kind)")
            }
            let quantity = try r.enumByte("quantity", Quantity.init(code:))
            event = .readingRecorded(
                ReadingRecorded(
                    subject: subject, quantity: quantity, value: try r.f64("value"), measuredAt: try r.i64("measuredAt")))
        case (.switchToggled?, 1):
            event = .switchToggled(
                SwitchToggled(
                    device: try r.string("device"),
                    state: try r.enumByte("state", SwitchState.init(rawValue:)),
                    cause: try r.enumByte("cause", SwitchCause.init(rawValue:))))
        case (.switchRequested?, 1):
            event = .switchRequested(
                SwitchRequested(
                    device: try r.string("device"), state: try r.enumByte("state", SwitchState.init(rawValue:))))
        case (.ownerDataErased?, 1):
            event = .ownerDataErased(OwnerDataErased(animal: try r.string("animal")))
        case (.animalUnseen?, 1):
            event = .animalUnseen(
                AnimalUnseen(animal: try r.string("animal"), lastRoom: try r.string("lastRoom"), lastSeen: try r.i64("lastSeen")))
        case (.animalSighted?, 1):
            event = .animalSighted(
                AnimalSighted(
                    animal: try r.string("animal"), room: try r.string("room"), beacon: try r.string("beacon"),
                    at: try r.i64("at")))
        case (.availabilityChanged?, 1):
            event = .availabilityChanged(
                AvailabilityChanged(
                    device: try r.string("device"), available: try r.bool("available"), reason: try r.string("reason")))
        case (.switchFailed?, 1):
            event = .switchFailed(
                SwitchFailed(
                    device: try r.string("device"), state: try r.enumByte("state", SwitchState.init(rawValue:)),
                    reason: try r.string("reason")))
        case (.modeChanged?, 1):
            event = .modeChanged(
                ModeChanged(
                    device: try r.string("device"), mode: try r.enumByte("mode", DeviceMode.init(rawValue:))))
        case (.energyCounterReset?, 1):
            event = .energyCounterReset(
                EnergyCounterReset(
                    device: try r.string("device"), previousWh: try r.f64("previousWh"), newWh: try r.f64("newWh")))
        case (.groupDefined?, 1):
            event = .groupDefined(GroupDefined(group: try r.string("group"), name: try r.string("name"), members: try r.strings("members")))
        case (.groupRemoved?, 1):
            event = .groupRemoved(GroupRemoved(group: try r.string("group")))
        case (.sceneDefined?, 1):
            event = .sceneDefined(SceneDefined(scene: try r.string("scene"), name: try r.string("name"), targets: try r.targets("targets")))
        case (.sceneRemoved?, 1):
            event = .sceneRemoved(SceneRemoved(scene: try r.string("scene")))
        case (.multiSwitchRequested?, 1):
            event = .multiSwitchRequested(MultiSwitchRequested(origin: try r.string("origin"), targets: try r.targets("targets")))
        case (.activationsDiverged?, 1):
            event = .activationsDiverged(
                ActivationsDiverged(
                    device: try r.string("device"), expected: try r.activations("expected"), found: try r.activations("found"),
                    resolution: try r.enumByte("resolution", DivergencePolicy.init(rawValue:))))
        case (.activationChanged?, 1), (.activationChanged?, 2):
            var e = ActivationChanged(
                device: try r.string("device"),
                change: try r.enumByte("change", ActivationChange.init(rawValue:)),
                name: try r.string("name"), start: try r.i64("start"),
                lengthMinutes: try r.u16("lengthMinutes"), periodMinutes: try r.u16("periodMinutes"))
            // Schema 1 had no daily repeat: it upcasts with none.
            if schemaVersion == 2, try r.bool("hasDaily") {
                e.daily = DailyRepeat(
                    minuteOfDay: try r.u16("minuteOfDay"), weekdays: try r.u8("weekdays"),
                    timeZone: try r.string("timeZone"))
            }
            event = .activationChanged(e)
        case (.deviceRegistered?, 1), (.deviceRegistered?, 2):
            var e = DeviceRegistered(
                device: try r.string("device"), driver: try r.string("driver"), name: try r.string("name"),
                config: try r.string("config"), hardwareId: try r.optionalString("hardwareId"))
            // Schema 1 had no outlets: it upcasts as a device of its own.
            if schemaVersion == 2, try r.bool("isOutlet") {
                e.outlet = OutletOf(
                    strip: try r.string("strip"), stripName: try r.string("stripName"), number: Int(try r.u16("number")),
                    stripHardwareId: try r.optionalString("stripHardwareId"))
            }
            event = .deviceRegistered(e)
        case (.deviceRenamed?, 1):
            event = .deviceRenamed(DeviceRenamed(device: try r.string("device"), name: try r.string("name")))
        case (.deviceRemoved?, 1):
            event = .deviceRemoved(DeviceRemoved(device: try r.string("device")))
        case (.animalAdmitted?, 1):
            event = .animalAdmitted(
                AnimalAdmitted(
                    animal: try r.string("animal"), name: try r.string("name"),
                    gender: try r.optionalString("gender"), birthDate: try r.optionalString("birthDate"),
                    weightKg: try r.f64("weightKg"), species: try r.string("species"),
                    breed: try r.optionalString("breed"), coat: try r.optionalString("coat"),
                    ownerName: try r.optionalString("ownerName"), ownerAddress: try r.optionalString("ownerAddress"),
                    ownerPhone: try r.optionalString("ownerPhone"), motive: try r.optionalString("motive"),
                    veterinarian: try r.optionalString("veterinarian"), observations: try r.optionalString("observations"),
                    photo: try r.optionalString("photo"), beacon: try r.string("beacon")))
        case (.animalDischarged?, 1):
            event = .animalDischarged(
                AnimalDischarged(
                    animal: try r.string("animal"), exitWeightKg: try r.f64("exitWeightKg"),
                    veterinarian: try r.optionalString("veterinarian"), observations: try r.optionalString("observations")))
        case (.commandRejected?, 1):
            event = .commandRejected(
                CommandRejected(
                    command: try r.string("command"), target: try r.optionalString("target"),
                    code: try r.string("code"), message: try r.string("message"),
                    commandId: try r.optionalString("commandId")))
        default:
            throw unknownTypeOrVersion(type: type, schemaVersion: schemaVersion)
        }
        try r.finish()
        return event
    }

    static func unknownTypeOrVersion(type: String, schemaVersion: UInt16) -> DecodingFailure {
        if allTypeNames.contains(type) {
            let reason =
                schemaVersion > currentSchemaVersion(of: type)
                ? "schema version \(schemaVersion) is newer than this build supports (\(currentSchemaVersion(of: type)))"
                : "unknown schema version \(schemaVersion)"
            return DecodingFailure(type: type, schemaVersion: schemaVersion, field: "", reason: reason)
        }
        return DecodingFailure(type: type, schemaVersion: schemaVersion, field: "", reason: "unknown event type")
    }
}
