import Testing

@testable import HubDomain

@Suite struct DecideDeviceTests {
    @Test func registerDevice() {
        var s = HubState()
        let events = run(.registerDevice(id: "p1", driver: " kasa ", name: " Lamp ", config: "", hardwareId: ""), &s)
        #expect(events == [.deviceRegistered(DeviceRegistered(device: "p1", driver: "kasa", name: "Lamp", config: "{}", hardwareId: nil))])
        #expect(s.devices["p1"]?.name == "Lamp")
        #expect(code(.registerDevice(id: "p1", driver: "kasa", name: "x", config: "{}", hardwareId: nil), s) == "device_exists")
        #expect(code(.registerDevice(id: "bad id", driver: "kasa", name: "x", config: "{}", hardwareId: nil), s) == "invalid_id")
        #expect(code(.registerDevice(id: "", driver: "kasa", name: "x", config: "{}", hardwareId: nil), s) == "invalid_id")
        #expect(code(.registerDevice(id: "p2", driver: " ", name: "x", config: "{}", hardwareId: nil), s) == "missing_field")
        #expect(code(.registerDevice(id: "p2", driver: "k", name: "", config: "{}", hardwareId: nil), s) == "invalid_name")
        #expect(
            code(.registerDevice(id: "p2", driver: "k", name: String(repeating: "n", count: 65), config: "{}", hardwareId: nil), s)
                == "invalid_name")
        #expect(code(.registerDevice(id: "p2", driver: "k", name: "n", config: "{", hardwareId: nil), s) == "invalid_config")
        #expect(code(.registerDevice(id: "p2", driver: "k", name: "n", config: "[1]", hardwareId: nil), s) == "invalid_config")
        run(.registerDevice(id: "p2", driver: "k", name: "n", config: "{}", hardwareId: "HW1"), &s)
        #expect(code(.registerDevice(id: "p3", driver: "k", name: "n", config: "{}", hardwareId: "HW1"), s) == "hardware_in_use")
    }

    /// A strip's outlets are registered together, `<strip>-<n>`, each linked to the strip, on the
    /// strip's stream; an id or hardware id that would collide is refused and nothing is registered.
    @Test func registerStrip() {
        var s = HubState()
        let outlets = [StripOutlet(number: 1, config: #"{"outlet":1}"#), StripOutlet(number: 2, name: "Heater", config: #"{"outlet":2}"#)]
        let events = run(.registerStrip(id: "desk", driver: "kasa", name: "Desk", hardwareId: "MAC1", outlets: outlets), &s)
        #expect(
            events == [
                .deviceRegistered(
                    DeviceRegistered(
                        device: "desk-1", driver: "kasa", name: "Desk 1", config: #"{"outlet":1}"#, hardwareId: "MAC1/1",
                        outlet: OutletOf(strip: "desk", stripName: "Desk", number: 1, stripHardwareId: "MAC1"))),
                .deviceRegistered(
                    DeviceRegistered(
                        device: "desk-2", driver: "kasa", name: "Heater", config: #"{"outlet":2}"#, hardwareId: "MAC1/2",
                        outlet: OutletOf(strip: "desk", stripName: "Desk", number: 2, stripHardwareId: "MAC1")))
            ])
        #expect(events.allSatisfy { $0.stream == "device/desk" })
        #expect(s.devices.outlets(of: "desk").map(\.id) == ["desk-1", "desk-2"])
        #expect(s.devices["desk"] == nil)
        // The strip's id, its outlets' ids and its hardware are taken.
        #expect(code(.registerStrip(id: "desk", driver: "kasa", name: "D", hardwareId: nil, outlets: outlets), s) == "device_exists")
        #expect(code(.registerDevice(id: "desk", driver: "kasa", name: "D", config: "{}", hardwareId: nil), s) == "device_exists")
        #expect(code(.registerDevice(id: "desk-2", driver: "kasa", name: "D", config: "{}", hardwareId: nil), s) == "device_exists")
        #expect(code(.registerDevice(id: "other", driver: "kasa", name: "D", config: "{}", hardwareId: "MAC1"), s) == "hardware_in_use")
        // A strip whose outlet would take a registered device's id is refused whole.
        register("tv-2", &s)
        let refused = HubDomain.decide(
            .registerStrip(id: "tv", driver: "kasa", name: "TV", hardwareId: nil, outlets: outlets), state: s, now: t0)
        guard case .rejected(let rejection) = refused else {
            Issue.record("expected a refusal")
            return
        }
        #expect(rejection.code == "device_exists")
        #expect(rejection.message.contains("\"tv-2\""))
        #expect(code(.registerStrip(id: "bad id", driver: "kasa", name: "B", hardwareId: nil, outlets: outlets), s) == "invalid_id")
        #expect(code(.registerStrip(id: "e", driver: "kasa", name: "E", hardwareId: nil, outlets: []), s) == "invalid_config")
        let badConfig = [StripOutlet(number: 1, config: "[1]")]
        #expect(code(.registerStrip(id: "f", driver: "kasa", name: "F", hardwareId: nil, outlets: badConfig), s) == "invalid_config")
        // Once its outlets are removed the strip's id is free again.
        run(.removeDevice(id: "desk-1"), &s)
        run(.removeDevice(id: "desk-2"), &s)
        #expect(s.devices.outlets(of: "desk").isEmpty)
        #expect(code(.registerDevice(id: "desk", driver: "kasa", name: "D", config: "{}", hardwareId: "MAC1"), s) == nil)
    }

    @Test func renameRemoveAndReRegister() {
        var s = HubState()
        register("p1", &s)
        #expect(run(.renameDevice(id: "p1", name: "Pump"), &s) == [.deviceRenamed(DeviceRenamed(device: "p1", name: "Pump"))])
        #expect(run(.renameDevice(id: "p1", name: "Pump"), &s) == [])
        #expect(code(.renameDevice(id: "p1", name: ""), s) == "invalid_name")
        #expect(code(.renameDevice(id: "zz", name: "x"), s) == "unknown_device")
        #expect(code(.renameDevice(id: "z z", name: "x"), s) == "invalid_id")
        #expect(run(.removeDevice(id: "p1"), &s) == [.deviceRemoved(DeviceRemoved(device: "p1"))])
        #expect(s.devices["p1"]?.removed == true)
        #expect(code(.removeDevice(id: "p1"), s) == "device_removed")
        #expect(code(.renameDevice(id: "p1", name: "x"), s) == "device_removed")
        #expect(code(.switchDevice(id: "p1", target: .on), s) == "device_removed")
        #expect(
            code(.setActivation(device: "p1", op: .add, name: "a", start: 0, lengthMinutes: 1, periodMinutes: 0), s) == "device_removed")
        #expect(code(.recordReading(subject: .device("p1"), quantity: .power, value: 1, measuredAt: t0), s) == "device_removed")
        #expect(code(.reportSwitch(id: "p1", state: .on, manual: nil), s) == "device_removed")
        #expect(code(.reportAvailability(id: "p1", available: true, reason: ""), s) == "device_removed")
        #expect(code(.removeDevice(id: "nope"), s) == "unknown_device")
        register("p1", &s)  // a removed id may be registered again
        #expect(s.devices["p1"]?.removed == false)
        #expect(s.devices["p1"]?.switchState == .unknown)
    }

    @Test func switchAndToggle() {
        var s = HubState()
        register("p", &s)
        #expect(code(.switchDevice(id: "q", target: .on), s) == "unknown_device")
        #expect(run(.switchDevice(id: "p", target: .toggle), &s) == [.switchRequested(SwitchRequested(device: "p", state: .on))])
        #expect(s.devices["p"]?.pending?.state == .on)
        run(.reportSwitch(id: "p", state: .on, manual: nil), &s)
        #expect(run(.switchDevice(id: "p", target: .toggle), &s) == [.switchRequested(SwitchRequested(device: "p", state: .off))])
        #expect(run(.switchDevice(id: "p", target: .on), &s) == [.switchRequested(SwitchRequested(device: "p", state: .on))])
        #expect(run(.switchDevice(id: "p", target: .off), &s) == [.switchRequested(SwitchRequested(device: "p", state: .off))])
    }

    @Test func reportSwitchCausesAndRepeats() {
        var s = HubState()
        register("p", &s)
        // No pending request: a device report.
        #expect(
            run(.reportSwitch(id: "p", state: .off, manual: nil), &s) == [
                .switchToggled(SwitchToggled(device: "p", state: .off, cause: .deviceReport))
            ])
        // Repeat: nothing.
        #expect(run(.reportSwitch(id: "p", state: .off, manual: nil), &s) == [])
        // Commanded then confirmed.
        run(.switchDevice(id: "p", target: .on), &s, commandId: "cmd-7")
        #expect(s.devices["p"]?.pending == PendingSwitch(state: .on, since: t0, commandId: "cmd-7"))
        #expect(
            run(.reportSwitch(id: "p", state: .on, manual: false), &s) == [
                .switchToggled(SwitchToggled(device: "p", state: .on, cause: .command))
            ])
        #expect(s.devices["p"]?.pending == nil)
        #expect(s.devices["p"]?.switchState == .on)
        // By hand, entering manual mode.
        #expect(
            run(.reportSwitch(id: "p", state: .off, manual: true), &s) == [
                .switchToggled(SwitchToggled(device: "p", state: .off, cause: .manual)),
                .modeChanged(ModeChanged(device: "p", mode: .manual))
            ])
        #expect(s.devices["p"]?.mode == .manual)
        // Only the mode changes.
        #expect(run(.reportSwitch(id: "p", state: .off, manual: false), &s) == [.modeChanged(ModeChanged(device: "p", mode: .automatic))])
        #expect(run(.reportSwitch(id: "p", state: .off, manual: false), &s) == [])
        // Requested state already current: the report confirms the request.
        run(.switchDevice(id: "p", target: .off), &s)
        #expect(
            run(.reportSwitch(id: "p", state: .off, manual: nil), &s) == [
                .switchToggled(SwitchToggled(device: "p", state: .off, cause: .command))
            ])
        #expect(s.devices["p"]?.pending == nil)
        #expect(code(.reportSwitch(id: "x", state: .off, manual: nil), s) == "unknown_device")
    }

    @Test func failSwitch() {
        var s = HubState()
        register("p", &s)
        #expect(run(.failSwitch(id: "p", reason: "timeout"), &s) == [])
        run(.switchDevice(id: "p", target: .on), &s)
        #expect(
            run(.failSwitch(id: "p", reason: "timeout"), &s) == [.switchFailed(SwitchFailed(device: "p", state: .on, reason: "timeout"))])
        #expect(s.devices["p"]?.pending == nil)
        #expect(s.devices["p"]?.lastFailure?.reason == "timeout")
        #expect(code(.failSwitch(id: "q", reason: ""), s) == "unknown_device")
    }

    @Test func availability() {
        var s = HubState()
        register("p", &s)
        #expect(
            run(.reportAvailability(id: "p", available: true, reason: "connected"), &s) == [
                .availabilityChanged(AvailabilityChanged(device: "p", available: true, reason: "connected"))
            ])
        #expect(run(.reportAvailability(id: "p", available: true, reason: "still"), &s) == [])
        #expect(run(.reportAvailability(id: "p", available: false, reason: "lost"), &s).count == 1)
        #expect(s.devices["p"]?.available == false)
        #expect(s.devices["p"]?.availabilityReason == "lost")
        #expect(code(.reportAvailability(id: "q", available: true, reason: ""), s) == "unknown_device")
    }

    @Test func activations() {
        var s = HubState()
        register("p", &s)
        let add = HubCommand.setActivation(
            device: "p", op: .add, name: "lawn", start: 1_795_370_400, lengthMinutes: 30, periodMinutes: 1440)
        #expect(
            run(add, &s) == [
                .activationChanged(
                    ActivationChanged(
                        device: "p", change: .added, name: "lawn", start: 1_795_370_400, lengthMinutes: 30, periodMinutes: 1440))
            ])
        #expect(code(add, s) == "activation_exists")
        func c(_ op: ActivationOp, _ name: String = "x", start: Int64? = 0, length: Int? = 1, period: Int? = 0) -> String? {
            code(.setActivation(device: "p", op: op, name: name, start: start, lengthMinutes: length, periodMinutes: period), s)
        }
        let long = decide(
            .setActivation(device: "p", op: .add, name: "waterthelawnforthirtyminutes", start: 0, lengthMinutes: 1, periodMinutes: 0),
            state: s, now: t0
        ).rejection
        #expect(long?.code == "activation_name_too_long")
        #expect(long?.message == "activation name \"waterthelawnforthirtyminutes\" is 28 characters; at most 20 ASCII characters")
        #expect(c(.add, "rega do relvado ☀") == "activation_name_not_ascii")
        #expect(c(.add, "tab\there") == "activation_name_not_ascii")
        #expect(c(.add, "") == "invalid_name")
        #expect(c(.add, length: 0) == "activation_length_zero")
        #expect(c(.add, length: -5) == "activation_length_zero")
        #expect(c(.add, length: 65536) == "activation_length_too_long")
        #expect(c(.add, period: 65536) == "activation_period_too_long")
        #expect(c(.add, period: -1) == "negative_value")
        #expect(c(.add, start: -1) == "activation_start_out_of_range")
        #expect(c(.add, start: Int64(UInt32.max) + 1) == "activation_start_out_of_range")
        #expect(c(.add, start: nil) == "missing_field")
        #expect(c(.add, length: nil) == "missing_field")
        #expect(c(.add, start: Int64(UInt32.max), length: 65535, period: 65535) == nil)
        #expect(c(.add, period: nil) == nil)
        #expect(c(.update, "nope") == "unknown_activation")
        #expect(c(.remove, "nope") == "unknown_activation")
        #expect(code(.setActivation(device: "q", op: .add, name: "x", start: 0, lengthMinutes: 1, periodMinutes: 0), s) == "unknown_device")
        // Update keeps missing fields.
        #expect(
            run(.setActivation(device: "p", op: .update, name: "lawn", start: nil, lengthMinutes: 45, periodMinutes: nil), &s) == [
                .activationChanged(
                    ActivationChanged(
                        device: "p", change: .updated, name: "lawn", start: 1_795_370_400, lengthMinutes: 45, periodMinutes: 1440))
            ])
        #expect(run(.setActivation(device: "p", op: .update, name: "lawn", start: nil, lengthMinutes: 45, periodMinutes: nil), &s) == [])
        #expect(c(.update, "lawn", start: nil, length: 0, period: nil) == "activation_length_zero")
        #expect(s.activations["p"] == [Activation(name: "lawn", start: 1_795_370_400, lengthMinutes: 45, periodMinutes: 1440)])
        // Slots are limited.
        for i in 1..<10 {
            run(.setActivation(device: "p", op: .add, name: "a\(i)", start: 0, lengthMinutes: 1, periodMinutes: 0), &s)
        }
        #expect(c(.add, "eleventh") == "activation_slots_full")
        #expect(s.activations["p"].map(\.name) == ["lawn"] + (1..<10).map { "a\($0)" })
        // Remove.
        #expect(
            run(.setActivation(device: "p", op: .remove, name: "a3", start: nil, lengthMinutes: nil, periodMinutes: nil), &s) == [
                .activationChanged(
                    ActivationChanged(device: "p", change: .removed, name: "a3", start: 0, lengthMinutes: 1, periodMinutes: 0))
            ])
        #expect(s.activations["p"].count == 9)
        run(.removeDevice(id: "p"), &s)
        #expect(s.activations["p"].isEmpty)
    }

    @Test func readings() {
        var s = HubState()
        register("m", &s)
        #expect(run(.recordReading(subject: .device("m"), quantity: .power, value: 12.5, measuredAt: t0), &s).count == 1)
        #expect(s.devices["m"]?.lastReading(.power) == ReadingValue(value: 12.5, measuredAt: t0))
        #expect(code(.recordReading(subject: .device("m"), quantity: .power, value: .nan, measuredAt: t0), s) == "non_finite_value")
        #expect(code(.recordReading(subject: .device("m"), quantity: .voltage, value: .infinity, measuredAt: t0), s) == "non_finite_value")
        #expect(code(.recordReading(subject: .device("m"), quantity: .power, value: -1, measuredAt: t0), s) == "negative_value")
        #expect(code(.recordReading(subject: .device("m"), quantity: .energy, value: -1, measuredAt: t0), s) == "negative_value")
        #expect(code(.recordReading(subject: .device("m"), quantity: .temperature, value: -10, measuredAt: t0), s) == nil)
        #expect(code(.recordReading(subject: .device("m"), quantity: .current, value: -0.5, measuredAt: t0), s) == nil)
        #expect(code(.recordReading(subject: .device("zz"), quantity: .power, value: 1, measuredAt: t0), s) == "unknown_device")
        #expect(code(.recordReading(subject: .device("z z"), quantity: .power, value: 1, measuredAt: t0), s) == "invalid_id")
        // Energy counter resets.
        run(.recordReading(subject: .device("m"), quantity: .energy, value: 100, measuredAt: t0), &s)
        #expect(run(.recordReading(subject: .device("m"), quantity: .energy, value: 150, measuredAt: t0 + 1), &s).count == 1)
        let events = run(.recordReading(subject: .device("m"), quantity: .energy, value: 3, measuredAt: t0 + 2), &s)
        #expect(
            events == [
                .energyCounterReset(EnergyCounterReset(device: "m", previousWh: 150, newWh: 3)),
                .readingRecorded(ReadingRecorded(subject: .device("m"), quantity: .energy, value: 3, measuredAt: t0 + 2))
            ])
        #expect(s.energy["m"]?.lifetimeWh == 53)
    }

    @Test func rejectionEventAndNames() {
        let s = HubState()
        let cmd = HubCommand.switchDevice(id: "ghost", target: .on)
        guard case .rejected(let r) = decide(cmd, state: s, now: t0) else { Issue.record("should reject"); return }
        #expect(r.code == "unknown_device")
        #expect(r.message.contains("ghost"))
        let e = rejectionEvent(for: cmd, rejection: r, commandId: "c9")
        #expect(
            e
                == .commandRejected(
                    CommandRejected(command: "switch", target: "ghost", code: "unknown_device", message: r.message, commandId: "c9")))
        #expect(e.stream == "hub")
        #expect(HubCommand.admitAnimal(admission("a")).name == "admit_animal")
        #expect(HubCommand.registerDevice(id: "d", driver: "", name: "", config: "", hardwareId: nil).name == "register_device")
        #expect(HubCommand.recordReading(subject: .animal("rex"), quantity: .heartRate, value: 1, measuredAt: 0).target == "rex")
        var folded = HubState()
        folded.apply(e, context: ctx(1))
        #expect(folded.audit.lastByStream["hub"]?.type == "CommandRejected")
    }
}
