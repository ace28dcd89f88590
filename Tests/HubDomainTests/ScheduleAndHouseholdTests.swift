import Testing

@testable import HubDomain

@Suite struct ActivationSchemaTests {
    let daily = DailyRepeat(minuteOfDay: 18 * 60, weekdays: DailyRepeat.everyDay, timeZone: "Europe/Lisbon")

    @Test func schemaOneActivationsUpcastWithoutARepeat() throws {
        let e = ActivationChanged(device: "p", change: .added, name: "lawn", start: 1_795_370_400, lengthMinutes: 30, periodMinutes: 1440)
        let v1 = HubEvent.activationChanged(e).encodePayload(schemaVersion: 1)
        let v2 = HubEvent.activationChanged(e).encodePayload()
        #expect(v2.count == v1.count + 1)  // the "no daily repeat" flag
        #expect(try HubEvent.decode(type: "ActivationChanged", schemaVersion: 1, payload: v1) == .activationChanged(e))
        #expect(try HubEvent.decode(type: "ActivationChanged", schemaVersion: 2, payload: v2) == .activationChanged(e))
        // A schema 1 payload read as schema 2 is short: refused, naming the field.
        #expect(throws: DecodingFailure.self) { try HubEvent.decode(type: "ActivationChanged", schemaVersion: 2, payload: v1) }
        // JSON: a schema 1 body has no "repeat".
        let body = try JSONValue.parse(
            #"{"device":"p","change":"added","name":"lawn","start":"2026-11-22T18:00:00Z","length_minutes":30,"period_minutes":1440}"#)
        #expect(try HubEvent.fromJSON(type: "ActivationChanged", schemaVersion: 1, body: body) == .activationChanged(e))
        #expect(throws: DecodingFailure.self) { try HubEvent.fromJSON(type: "ActivationChanged", schemaVersion: 3, body: body) }
    }

    @Test func dailyRepeatRoundTripsAndRenders() throws {
        let e = HubEvent.activationChanged(
            ActivationChanged(
                device: "p", change: .added, name: "evening", start: 1_795_370_400,
                lengthMinutes: 30, periodMinutes: 0,
                daily: DailyRepeat(minuteOfDay: 18 * 60 + 5, weekdays: 0b1000001, timeZone: "America/New_York")))
        #expect(try HubEvent.decode(type: "ActivationChanged", schemaVersion: 2, payload: e.encodePayload()) == e)
        #expect(try HubEvent.fromJSON(type: "ActivationChanged", schemaVersion: 2, body: e.jsonBody()) == e)
        #expect(e.jsonBody()["repeat"]?.serialized() == #"{"at":"18:05","days":["mon","sun"],"time_zone":"America/New_York"}"#)
    }

    @Test func addUpdateAndValidateDailyRepeats() {
        var s = HubState()
        register("lamp", &s)
        run(
            .setActivation(
                device: "lamp", op: .add, name: "evening", start: 1_795_370_400, lengthMinutes: 30, periodMinutes: nil,
                daily: daily), &s)
        #expect(s.activations["lamp"].first?.daily == daily)
        #expect(
            code(.setActivation(device: "lamp", op: .add, name: "both", start: 0, lengthMinutes: 5, periodMinutes: 60, daily: daily), s)
                == "activation_repeat_conflict")
        var bad = daily
        bad.weekdays = 0
        #expect(
            code(.setActivation(device: "lamp", op: .add, name: "x", start: 0, lengthMinutes: 5, periodMinutes: nil, daily: bad), s)
                == "activation_repeat_invalid")
        bad = daily
        bad.minuteOfDay = 1440
        #expect(
            code(.setActivation(device: "lamp", op: .add, name: "x", start: 0, lengthMinutes: 5, periodMinutes: nil, daily: bad), s)
                == "activation_repeat_invalid")
        // Giving a period on update turns it back into a fixed-period activation.
        run(.setActivation(device: "lamp", op: .update, name: "evening", start: nil, lengthMinutes: nil, periodMinutes: 1440), &s)
        #expect(s.activations["lamp"].first?.daily == nil)
        #expect(s.activations["lamp"].first?.periodMinutes == 1440)
    }
}

@Suite struct ManualOverrideTests {
    func deviceWithActivation() -> HubState {
        var s = HubState()
        register("lamp", &s)
        run(.setActivation(device: "lamp", op: .add, name: "a", start: 1_795_370_400, lengthMinutes: 30, periodMinutes: 0), &s)
        return s
    }

    @Test func switchingOnByHandSuspendsTheScheduleUntilSwitchedOff() {
        var s = deviceWithActivation()
        let on = run(.switchDevice(id: "lamp", target: .on), &s)
        #expect(
            on == [.switchRequested(SwitchRequested(device: "lamp", state: .on)), .modeChanged(ModeChanged(device: "lamp", mode: .manual))])
        #expect(code(.scheduleSwitch(id: "lamp", state: .off), s) == "manual_mode")
        let off = run(.switchDevice(id: "lamp", target: .off), &s)
        #expect(off.last == .modeChanged(ModeChanged(device: "lamp", mode: .automatic)))
        #expect(s.devices["lamp"]?.mode == .automatic)
    }

    @Test func devicesWithoutActivationsKeepTheirMode() {
        var s = HubState()
        register("lamp", &s)
        #expect(run(.switchDevice(id: "lamp", target: .on), &s).count == 1)
        #expect(s.devices["lamp"]?.mode == .automatic)
    }

    @Test func theSchedulersSwitchIsConfirmedWithCauseSchedule() {
        var s = deviceWithActivation()
        var events: [HubEvent] = []
        if case .accepted(let e) = decide(.scheduleSwitch(id: "lamp", state: .on), state: s, now: t0) { events = e }
        #expect(events == [.switchRequested(SwitchRequested(device: "lamp", state: .on))])
        for e in events { s.apply(e, context: ctx(s.lastSequence + 1, actor: Scheduling.actor)) }
        #expect(s.devices["lamp"]?.pending?.bySchedule == true)
        let confirmed = run(.reportSwitch(id: "lamp", state: .on, manual: nil), &s)
        #expect(confirmed == [.switchToggled(SwitchToggled(device: "lamp", state: .on, cause: .schedule))])
        // Already on: nothing to do.
        #expect(run(.scheduleSwitch(id: "lamp", state: .on), &s).isEmpty)
        #expect(s.devices["lamp"]?.mode == .automatic)
    }
}

@Suite struct HouseholdTests {
    func household() -> HubState {
        var s = HubState()
        for id in ["lamp", "fan", "tv"] { register(id, &s) }
        return s
    }

    @Test func groupsAreDefinedValidatedAndSwitched() {
        var s = household()
        run(.defineGroup(id: "living", name: " Living room ", members: ["lamp", "tv"]), &s)
        #expect(s.household.groups["living"] == GroupRecord(id: "living", name: "Living room", members: ["lamp", "tv"]))
        #expect(run(.defineGroup(id: "living", name: "Living room", members: ["lamp", "tv"]), &s).isEmpty)
        #expect(code(.defineGroup(id: "g", name: "", members: []), s) == "missing_field")
        #expect(code(.defineGroup(id: "g", name: "", members: ["lamp", "lamp"]), s) == "duplicate_member")
        #expect(code(.defineGroup(id: "g", name: "", members: ["nope"]), s) == "unknown_device")
        #expect(code(.defineGroup(id: "a b", name: "", members: ["lamp"]), s) == "invalid_id")
        #expect(code(.switchGroup(id: "nope", target: .on), s) == "unknown_group")
        let on = run(.switchGroup(id: "living", target: .toggle), &s)
        #expect(
            on == [
                .multiSwitchRequested(
                    MultiSwitchRequested(
                        origin: "group/living",
                        targets: [
                            DeviceTarget(device: "lamp", state: .on), DeviceTarget(device: "tv", state: .on)
                        ]))
            ])
        run(.reportSwitch(id: "tv", state: .on, manual: nil), &s)
        // Toggle: any member on -> all off.
        let off = run(.switchGroup(id: "living", target: .toggle), &s)
        #expect(
            off.first.map {
                if case .multiSwitchRequested(let m) = $0 { return m.targets.allSatisfy { $0.state == .off } } else { return false }
            } == true)
        run(.removeDevice(id: "tv"), &s)
        let after = run(.switchGroup(id: "living", target: .on), &s)
        #expect(
            after == [
                .multiSwitchRequested(MultiSwitchRequested(origin: "group/living", targets: [DeviceTarget(device: "lamp", state: .on)]))
            ])
        run(.removeGroup(id: "living"), &s)
        #expect(s.household.groups.isEmpty)
    }

    @Test func scenesAndAllOff() {
        var s = household()
        run(
            .defineScene(
                id: "movie", name: "Movie", targets: [DeviceTarget(device: "tv", state: .on), DeviceTarget(device: "lamp", state: .off)]),
            &s)
        #expect(s.household.scenes["movie"]?.targets.count == 2)
        #expect(
            code(.defineScene(id: HouseholdLimits.allOff, name: "", targets: [DeviceTarget(device: "tv", state: .on)]), s) == "reserved_id")
        let applied = run(.applyScene(id: "movie"), &s)
        #expect(
            applied == [
                .multiSwitchRequested(
                    MultiSwitchRequested(
                        origin: "scene/movie",
                        targets: [
                            DeviceTarget(device: "tv", state: .on), DeviceTarget(device: "lamp", state: .off)
                        ]))
            ])
        #expect(applied.first?.stream == "scene/movie")
        let all = run(.applyScene(id: HouseholdLimits.allOff), &s)
        #expect(all.first?.stream == "hub")
        if case .multiSwitchRequested(let m)? = all.first {
            #expect(Set(m.targets.map(\.device)) == ["lamp", "fan", "tv"])
            #expect(m.targets.allSatisfy { $0.state == .off })
        } else {
            Issue.record("expected MultiSwitchRequested")
        }
        #expect(code(.applyScene(id: "nope"), s) == "unknown_scene")
    }
}
