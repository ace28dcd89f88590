// decide: command + current state -> events, or a rejection. Pure.

/// What `decide` made of a command: the events to append, or why it was refused.
public enum Decision: Sendable, Equatable {
    /// The command is accepted; the events may be empty when it changes nothing.
    case accepted([HubEvent])
    /// The command is refused; nothing is appended but its `CommandRejected`.
    case rejected(Rejection)

    /// The events of an accepted command; empty for a rejection.
    public var events: [HubEvent] {
        if case .accepted(let events) = self { return events }
        return []
    }
    /// The rejection, nil when accepted.
    public var rejection: Rejection? {
        if case .rejected(let r) = self { return r }
        return nil
    }
}

/// Decides what a command means given the current state.
///
/// - Parameters:
///   - command: The command.
///   - state: The read models it is decided on.
///   - now: The hub's clock, µs since the epoch (a reading dated beyond it by more than
///     ``DomainLimits/readingClockSkew`` is refused).
///   - limits: The domain's limits.
public func decide(_ command: HubCommand, state: HubState, now: Int64, limits: DomainLimits = .standard) -> Decision {
    do {
        return .accepted(try decideEvents(command, state: state, now: now, limits: limits))
    } catch {
        return .rejected(error)
    }
}

/// The CommandRejected event recording a refused command (stream `hub`).
public func rejectionEvent(for command: HubCommand, rejection: Rejection, commandId: String?) -> HubEvent {
    .commandRejected(
        CommandRejected(
            command: command.name, target: command.target, code: rejection.code,
            message: rejection.message, commandId: commandId))
}

private func decideEvents(_ command: HubCommand, state: HubState, now: Int64, limits: DomainLimits) throws(Rejection) -> [HubEvent] {
    if let events = try decideHousehold(command, state: state, limits: limits) { return events }
    switch command {
    case let .registerDevice(id, driver, name, config, hardwareId):
        try requireId("device", id)
        let driver = trimmed(driver)
        guard !driver.isEmpty else { throw Rejection.missingField("a driver", command.name) }
        let name = try validName(name, limits: limits)
        let config = try deviceConfig(config, of: id)
        try requireFreeDeviceId(id, state)
        let hw = nonEmpty(hardwareId)
        try requireFreeHardware(hw, state)
        return [.deviceRegistered(DeviceRegistered(device: id, driver: driver, name: name, config: config, hardwareId: hw))]

    case let .registerStrip(id, driver, name, hardwareId, outlets):
        try requireId("device", id)
        let driver = trimmed(driver)
        guard !driver.isEmpty else { throw Rejection.missingField("a driver", command.name) }
        let name = try validName(name, limits: limits)
        guard !outlets.isEmpty else {
            throw Rejection(code: "invalid_config", message: "strip \(quoted(id)) has no outlets")
        }
        try requireFreeDeviceId(id, state)
        let hw = nonEmpty(hardwareId)
        try requireFreeHardware(hw, state)
        var events: [HubEvent] = []
        for outlet in outlets {
            let outletId = "\(id)-\(outlet.number)"
            try requireId("device", outletId)
            if let existing = state.devices[outletId], !existing.removed {
                throw Rejection(
                    code: "device_exists",
                    message: "outlet \(outlet.number) of strip \(quoted(id)) would be device \(quoted(outletId)), "
                        + "which is already registered (driver \(quoted(existing.driver))); choose another id for the strip")
            }
            let outletName = try validName(nonEmpty(outlet.name) ?? "\(name) \(outlet.number)", limits: limits)
            events.append(
                .deviceRegistered(
                    DeviceRegistered(
                        device: outletId, driver: driver, name: outletName, config: try deviceConfig(outlet.config, of: outletId),
                        hardwareId: hw.map { "\($0)/\(outlet.number)" },
                        outlet: OutletOf(strip: id, stripName: name, number: outlet.number, stripHardwareId: hw))))
        }
        return events

    case let .renameDevice(id, name):
        let device = try activeDevice(id, state)
        let name = try validName(name, limits: limits)
        if device.name == name { return [] }
        return [.deviceRenamed(DeviceRenamed(device: id, name: name))]

    case let .removeDevice(id):
        _ = try activeDevice(id, state)
        return [.deviceRemoved(DeviceRemoved(device: id))]

    case let .switchDevice(id, target):
        let device = try activeDevice(id, state)
        let wanted: SwitchState
        switch target {
        case .on: wanted = .on
        case .off: wanted = .off
        case .toggle: wanted = device.switchState.state?.toggled ?? .on
        }
        var events: [HubEvent] = [.switchRequested(SwitchRequested(device: id, state: wanted))]
        // The seed plug's manual override, for every device with activations: switching on by hand
        // suspends the activations (manual mode) until the device is switched off again.
        if !state.activations[id].isEmpty {
            if wanted == .on && device.mode != .manual { events.append(.modeChanged(ModeChanged(device: id, mode: .manual))) }
            if wanted == .off && device.mode == .manual { events.append(.modeChanged(ModeChanged(device: id, mode: .automatic))) }
        }
        return events

    case let .scheduleSwitch(id, wanted):
        let device = try activeDevice(id, state)
        guard device.mode == .automatic else {
            throw Rejection(
                code: "manual_mode",
                message: "device \(quoted(id)) is in manual mode: its activations wait until it is switched off")
        }
        if device.switchState.state == wanted && device.pending == nil { return [] }
        return [.switchRequested(SwitchRequested(device: id, state: wanted))]

    case let .reportSwitch(id, reported, manual):
        let device = try activeDevice(id, state)
        var events: [HubEvent] = []
        let confirmsPending = device.pending?.state == reported
        if device.switchState.state != reported || confirmsPending {
            // A report that confirms the pending request is the command's doing, even when the device
            // calls the resulting mode "manual" (the TCP plug does for every ON it is sent).
            let cause: SwitchCause =
                confirmsPending
                ? (device.pending!.bySchedule ? .schedule : .command)
                : (manual == true ? .manual : .deviceReport)
            events.append(.switchToggled(SwitchToggled(device: id, state: reported, cause: cause)))
        }
        if let manual {
            let mode: DeviceMode = manual ? .manual : .automatic
            if mode != device.mode { events.append(.modeChanged(ModeChanged(device: id, mode: mode))) }
        }
        return events

    case let .failSwitch(id, reason):
        let device = try activeDevice(id, state)
        guard let pending = device.pending else { return [] }
        let reason = trimmed(reason).isEmpty ? "not confirmed" : reason
        return [.switchFailed(SwitchFailed(device: id, state: pending.state, reason: reason))]

    case let .setActivation(deviceId, op, name, start, lengthMinutes, periodMinutes, daily):
        _ = try activeDevice(deviceId, state)
        try validActivationName(name, limits: limits)
        let existing = state.activations.activation(device: deviceId, name: name)
        switch op {
        case .add:
            if existing != nil {
                throw Rejection(
                    code: "activation_exists",
                    message: "device \(quoted(deviceId)) already has an activation \(quoted(name))")
            }
            guard let start else { throw Rejection.missingField("a start time", "set_activation add") }
            guard let lengthMinutes else { throw Rejection.missingField("a length in minutes", "set_activation add") }
            let count = state.activations[deviceId].count
            if count >= limits.maxActivationsPerDevice {
                throw Rejection(
                    code: "activation_slots_full",
                    message: "device \(quoted(deviceId)) already has \(count) activations; at most \(limits.maxActivationsPerDevice)")
            }
            let s = try validStart(start)
            let l = try validLength(lengthMinutes)
            let p = try validPeriod(periodMinutes ?? 0)
            let d = try daily.map(validDaily)
            if d != nil && p != 0 {
                throw Rejection(
                    code: "activation_repeat_conflict",
                    message: "activation \(quoted(name)) has both a period of \(p) minutes and a daily repeat; give one")
            }
            return [
                .activationChanged(
                    ActivationChanged(
                        device: deviceId, change: .added, name: name, start: s,
                        lengthMinutes: l, periodMinutes: p, daily: d))
            ]
        case .update:
            guard let old = existing else { throw unknownActivation(deviceId, name) }
            let s = try start.map(validStart) ?? old.start
            let l = try lengthMinutes.map(validLength) ?? old.lengthMinutes
            var p = try periodMinutes.map(validPeriod) ?? old.periodMinutes
            var d = old.daily
            if let daily {
                if let periodMinutes, periodMinutes != 0 {
                    throw Rejection(
                        code: "activation_repeat_conflict",
                        message: "activation \(quoted(name)) has both a period of \(periodMinutes) minutes and a daily repeat; give one")
                }
                d = try validDaily(daily)
                p = 0
            } else if periodMinutes != nil {
                d = nil
            }
            if s == old.start && l == old.lengthMinutes && p == old.periodMinutes && d == old.daily { return [] }
            return [
                .activationChanged(
                    ActivationChanged(
                        device: deviceId, change: .updated, name: name, start: s,
                        lengthMinutes: l, periodMinutes: p, daily: d))
            ]
        case .remove:
            guard let old = existing else { throw unknownActivation(deviceId, name) }
            return [
                .activationChanged(
                    ActivationChanged(
                        device: deviceId, change: .removed, name: name, start: old.start,
                        lengthMinutes: old.lengthMinutes, periodMinutes: old.periodMinutes,
                        daily: old.daily))
            ]
        }

    case let .reportAvailability(id, available, reason):
        let device = try activeDevice(id, state)
        if device.available == available { return [] }
        return [.availabilityChanged(AvailabilityChanged(device: id, available: available, reason: reason))]

    case let .reportActivations(deviceId, found, policy):
        _ = try activeDevice(deviceId, state)
        return reconcileActivations(device: deviceId, found: found, policy: policy, state: state, limits: limits)

    case let .recordReading(subject, quantity, value, measuredAt):
        switch subject {
        case .device(let id):
            _ = try activeDevice(id, state)
        case .animal(let id):
            let animal = try admittedAnimal(id, state, reading: (quantity, measuredAt))
            guard quantity == .heartRate || quantity == .temperature else {
                throw Rejection(
                    code: "quantity_not_applicable",
                    message: "\(quantity.rawValue) readings are for devices, not animal \(quoted(id))")
            }
            // Triage: vitals taken up to `triageWindow` before the admission was saved belong to
            // this stay, but never to the time of an earlier one.
            let earliest = max(animal.admittedAt - limits.triageWindow, animal.previousStayEnd.map { $0 + 1 } ?? Int64.min)
            if measuredAt < earliest {
                throw Rejection(
                    code: "reading_before_admission",
                    message: "\(quantity.rawValue) reading for animal \(quoted(id)) was measured at "
                        + "\(ISO8601.format(micros: measuredAt)), before its admission at \(ISO8601.format(micros: animal.admittedAt))"
                        + (earliest > animal.admittedAt - limits.triageWindow
                            ? " and within its earlier stay (discharged at \(ISO8601.format(micros: earliest - 1)))"
                            : " and more than \(limits.triageWindow / 3_600_000_000) h before it (the triage window)"))
            }
        }
        if measuredAt > now + limits.readingClockSkew {
            throw Rejection(
                code: "reading_in_future",
                message:
                    "\(quantity.rawValue) reading for \(subject.kind) \(quoted(subject.id)) is dated \(ISO8601.format(micros: measuredAt)), "
                    + "more than \(limits.readingClockSkew / 1_000_000) s after the hub's clock (\(ISO8601.format(micros: now)))")
        }
        guard value.isFinite else {
            throw Rejection(
                code: "non_finite_value",
                message: "\(quantity.rawValue) reading for \(quoted(subject.id)) is \(value); must be a finite number")
        }
        if quantity.isNonNegative && value < 0 {
            throw Rejection(
                code: "negative_value",
                message: "\(quantity.rawValue) reading for \(quoted(subject.id)) is \(value) \(quantity.unit); must not be negative")
        }
        let reading = HubEvent.readingRecorded(
            ReadingRecorded(
                subject: subject, quantity: quantity, value: value,
                measuredAt: measuredAt))
        if quantity == .energy, case .device(let id) = subject,
            let last = state.energy.lastCounterWh(device: id), value < last
        {
            return [.energyCounterReset(EnergyCounterReset(device: id, previousWh: last, newWh: value)), reading]
        }
        return [reading]

    case .defineGroup, .removeGroup, .switchGroup, .defineScene, .removeScene, .applyScene:
        return []  // decided by decideHousehold above

    case .admitAnimal(let form):
        try requireId("animal", form.animal)
        var a = form
        a.name = trimmed(a.name)
        a.species = trimmed(a.species)
        guard !a.name.isEmpty else { throw Rejection.missingField("a name", command.name) }
        guard !a.species.isEmpty else { throw Rejection.missingField("a species", command.name) }
        guard !trimmed(a.beacon).isEmpty else { throw Rejection.missingField("a beacon", command.name) }
        do { a.beacon = try BeaconId.canonical(a.beacon) } catch {
            throw Rejection(
                code: "invalid_beacon", message: "beacon \(quoted(trimmed(a.beacon))) of animal \(quoted(a.animal)) \(error.reason)")
        }
        a.gender = nonEmpty(a.gender); a.birthDate = nonEmpty(a.birthDate); a.breed = nonEmpty(a.breed)
        a.coat = nonEmpty(a.coat); a.ownerName = nonEmpty(a.ownerName); a.ownerAddress = nonEmpty(a.ownerAddress)
        a.ownerPhone = nonEmpty(a.ownerPhone); a.motive = nonEmpty(a.motive); a.veterinarian = nonEmpty(a.veterinarian)
        a.observations = nonEmpty(a.observations); a.photo = nonEmpty(a.photo)
        try validWeight(a.weightKg, "weight", a.animal, limits: limits)
        if let bd = a.birthDate {
            guard Civil.parseDate(bd) != nil else {
                throw Rejection(
                    code: "invalid_date",
                    message: "birth date \(quoted(bd)) of animal \(quoted(a.animal)) is not a YYYY-MM-DD date")
            }
        }
        if let existing = state.animals[a.animal], existing.isAdmitted {
            throw Rejection(code: "animal_already_admitted", message: "animal \(quoted(a.animal)) is already admitted")
        }
        if let holder = state.animals.beaconIndex[a.beacon], holder != a.animal {
            throw Rejection(
                code: "beacon_in_use",
                message: "beacon \(quoted(a.beacon)) is bound to admitted animal \(quoted(holder))")
        }
        return [.animalAdmitted(a)]

    case let .dischargeAnimal(id, exitWeightKg, veterinarian, observations):
        _ = try admittedAnimal(id, state)
        try validWeight(exitWeightKg, "exit weight", id, limits: limits)
        return [
            .animalDischarged(
                AnimalDischarged(
                    animal: id, exitWeightKg: exitWeightKg,
                    veterinarian: nonEmpty(veterinarian),
                    observations: nonEmpty(observations)))
        ]

    case let .sightAnimal(id, room, beacon, at):
        let animal = try admittedAnimal(id, state)
        let room = trimmed(room)
        guard !room.isEmpty else { throw Rejection.missingField("a room", command.name) }
        let beacon = BeaconId.key(beacon)
        if !beacon.isEmpty && beacon != animal.beacon {
            throw Rejection(
                code: "beacon_mismatch",
                message: "beacon \(quoted(beacon)) is not the beacon of animal \(quoted(id)) (\(quoted(animal.beacon)))")
        }
        if animal.lastRoom == room && animal.unseenSince == nil { return [] }
        return [.animalSighted(AnimalSighted(animal: id, room: room, beacon: animal.beacon, at: at))]

    case let .eraseOwnerData(id):
        try requireId("animal", id)
        guard state.animals[id] != nil else { throw Rejection.unknownAnimal(id) }
        return [.ownerDataErased(OwnerDataErased(animal: id))]

    case let .markAnimalUnseen(id, lastRoom, lastSeen):
        let animal = try admittedAnimal(id, state)
        if animal.unseenSince != nil { return [] }
        return [.animalUnseen(AnimalUnseen(animal: id, lastRoom: lastRoom, lastSeen: lastSeen))]
    }
}

// MARK: - Validation helpers

private func requireId(_ what: String, _ id: String) throws(Rejection) {
    guard Identifier.isValid(id) else { throw Rejection.invalidId(what, id) }
}

/// The device's driver settings, checked to be a JSON object ("" counts as `{}`).
private func deviceConfig(_ config: String, of id: String) throws(Rejection) -> String {
    let config = config.isEmpty ? "{}" : config
    do {
        let parsed = try JSONValue.parse(config)
        guard case .object = parsed else {
            throw Rejection(code: "invalid_config", message: "config of device \(quoted(id)) must be a JSON object")
        }
    } catch let e as JSONParseError {
        throw Rejection(code: "invalid_config", message: "config of device \(quoted(id)) is not valid JSON: \(e)")
    } catch let r as Rejection {
        throw r
    } catch {
        throw Rejection(code: "invalid_config", message: "config of device \(quoted(id)) is not valid JSON")
    }
    return config
}

/// Refuses an id held by an active device, or by a strip with active outlets.
private func requireFreeDeviceId(_ id: String, _ state: HubState) throws(Rejection) {
    if let existing = state.devices[id], !existing.removed {
        throw Rejection(
            code: "device_exists",
            message: "device \(quoted(id)) is already registered (driver \(quoted(existing.driver)))")
    }
    let outlets = state.devices.outlets(of: id)
    if !outlets.isEmpty {
        throw Rejection(
            code: "device_exists",
            message: "\(quoted(id)) is a strip already registered with outlets \(outlets.map(\.id).joined(separator: ", "))")
    }
}

/// Refuses a hardware id bound to an active device or strip.
private func requireFreeHardware(_ hw: String?, _ state: HubState) throws(Rejection) {
    guard let hw else { return }
    if let other = state.devices.all.first(where: { !$0.removed && ($0.hardwareId == hw || $0.outlet?.stripHardwareId == hw) }) {
        let holder = other.hardwareId == hw ? "device \(quoted(other.id))" : "strip \(quoted(other.outlet?.strip ?? other.id))"
        throw Rejection(code: "hardware_in_use", message: "hardware \(quoted(hw)) is already registered as \(holder)")
    }
}

private func activeDevice(_ id: String, _ state: HubState) throws(Rejection) -> DeviceRecord {
    try requireId("device", id)
    guard let device = state.devices[id] else { throw Rejection.unknownDevice(id) }
    guard !device.removed else { throw Rejection.deviceRemoved(id) }
    return device
}

/// The admitted animal `id`; for a reading refused after a discharge, the refusal names the times
/// when the reading was measured after it.
private func admittedAnimal(_ id: String, _ state: HubState, reading: (Quantity, Int64)? = nil) throws(Rejection) -> AnimalRecord {
    try requireId("animal", id)
    guard let animal = state.animals[id] else { throw Rejection.unknownAnimal(id) }
    guard animal.isAdmitted else {
        if let (quantity, measuredAt) = reading, let discharged = animal.dischargedAt, measuredAt > discharged {
            throw Rejection(
                code: "reading_after_discharge",
                message: "\(quantity.rawValue) reading for animal \(quoted(id)) was measured at "
                    + "\(ISO8601.format(micros: measuredAt)), after its discharge at \(ISO8601.format(micros: discharged))")
        }
        throw Rejection.animalNotAdmitted(id)
    }
    return animal
}

func trimmed(_ s: String) -> String {
    var sub = Substring(s)
    while let f = sub.first, f.isWhitespace { sub.removeFirst() }
    while let l = sub.last, l.isWhitespace { sub.removeLast() }
    return String(sub)
}

private func nonEmpty(_ s: String?) -> String? {
    guard let s else { return nil }
    let t = trimmed(s)
    return t.isEmpty ? nil : t
}

private func validName(_ name: String, limits: DomainLimits) throws(Rejection) -> String {
    let n = trimmed(name)
    let count = n.count
    guard count >= 1, count <= limits.maxNameLength else {
        throw Rejection(
            code: "invalid_name",
            message: "name \(quoted(name)) is \(count) characters; use 1 to \(limits.maxNameLength)")
    }
    return n
}

private func validActivationName(_ name: String, limits: DomainLimits) throws(Rejection) {
    let count = name.count
    guard count >= 1 else {
        throw Rejection(
            code: "invalid_name", message: "activation name is empty; use 1 to \(limits.maxActivationNameLength) ASCII characters")
    }
    if count > limits.maxActivationNameLength {
        throw Rejection(
            code: "activation_name_too_long",
            message: "activation name \(quoted(name)) is \(count) characters; at most \(limits.maxActivationNameLength) ASCII characters")
    }
    for b in name.utf8 where b < 0x20 || b > 0x7E {
        throw Rejection(
            code: "activation_name_not_ascii",
            message: "activation name \(quoted(name)) has a character that is not printable ASCII")
    }
}

private func validStart(_ start: Int64) throws(Rejection) -> Int64 {
    guard start >= 0, start <= Int64(UInt32.max) else {
        throw Rejection(
            code: "activation_start_out_of_range",
            message: "activation start \(start) is outside 0...\(UInt32.max) Unix seconds (1970-01-01 to 2106-02-07)")
    }
    return start
}

private func validLength(_ minutes: Int) throws(Rejection) -> UInt16 {
    if minutes < 1 {
        throw Rejection(
            code: "activation_length_zero",
            message: "activation length is \(minutes) minutes; at least 1")
    }
    if minutes > Int(UInt16.max) {
        throw Rejection(
            code: "activation_length_too_long",
            message: "activation length is \(minutes) minutes; at most \(UInt16.max)")
    }
    return UInt16(minutes)
}

private func validPeriod(_ minutes: Int) throws(Rejection) -> UInt16 {
    if minutes < 0 {
        throw Rejection(code: "negative_value", message: "activation period is \(minutes) minutes; must not be negative")
    }
    if minutes > Int(UInt16.max) {
        throw Rejection(
            code: "activation_period_too_long",
            message: "activation period is \(minutes) minutes; at most \(UInt16.max)")
    }
    return UInt16(minutes)
}

private func validDaily(_ d: DailyRepeat) throws(Rejection) -> DailyRepeat {
    guard d.minuteOfDay < 1440 else {
        throw Rejection(
            code: "activation_repeat_invalid", message: "daily repeat time \(d.minuteOfDay) is not a minute of the day (0 to 1439)")
    }
    guard d.weekdays & DailyRepeat.everyDay != 0, d.weekdays & ~DailyRepeat.everyDay == 0 else {
        throw Rejection(code: "activation_repeat_invalid", message: "daily repeat needs one or more weekdays (mon...sun)")
    }
    let zone = trimmed(d.timeZone)
    guard !zone.isEmpty, zone.count <= 64, zone.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
        throw Rejection(code: "activation_repeat_invalid", message: "daily repeat needs a time zone name such as \"Europe/Lisbon\"")
    }
    return DailyRepeat(minuteOfDay: d.minuteOfDay, weekdays: d.weekdays, timeZone: zone)
}

private func validWeight(_ kg: Double, _ what: String, _ animal: String, limits: DomainLimits) throws(Rejection) {
    guard kg.isFinite, kg > 0, kg <= limits.maxWeightKg else {
        throw Rejection(
            code: "weight_out_of_range",
            message: "\(what) of animal \(quoted(animal)) is \(kg) kg; must be above 0 and at most \(limits.maxWeightKg) kg")
    }
}

private func unknownActivation(_ device: String, _ name: String) -> Rejection {
    Rejection(code: "unknown_activation", message: "device \(quoted(device)) has no activation \(quoted(name))")
}
