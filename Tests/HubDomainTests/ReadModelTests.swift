import Testing

@testable import HubDomain

@Suite struct ReadModelTests {
    func energy(_ v: Double, _ at: Int64) -> HubEvent {
        .readingRecorded(ReadingRecorded(subject: .device("m"), quantity: .energy, value: v, measuredAt: at))
    }

    @Test func energyLedgerAcrossResetsAndDays() {
        let day = Civil.microsPerDay
        let s = fold([
            energy(1000, t0),  // baseline, counts nothing
            energy(1500, t0 + 3_600_000_000),  // +500 on 2026-11-22
            energy(2500, t0 + day),  // +1000 on 2026-11-23
            .energyCounterReset(EnergyCounterReset(device: "m", previousWh: 2500, newWh: 200)),
            energy(200, t0 + day + 1),  // +200 (from 0)
            energy(700, t0 + 2 * day),  // +500 on 2026-11-24
            energy(100, t0 + 2 * day + 1)  // implicit reset, +100
        ])
        let acc = s.energy["m"]!
        #expect(acc.lifetimeWh == 2300)
        #expect(acc.lifetimeKWh == 2.3)
        #expect(acc.dailyWh == ["2026-11-22": 500, "2026-11-23": 1200, "2026-11-24": 600])
        #expect(s.energy.kWh(device: "m", on: "2026-11-23") == 1.2)
        #expect(s.energy.kWh(device: "m", on: "2000-01-01") == 0)
        #expect(acc.resets == 1)
        #expect(acc.lastCounterWh == 100)
        #expect(s.energy.lifetimeKWh(device: "nope") == 0)
    }

    /// A hub runs for years: the ledger keeps the newest year of days per device, not every day.
    @Test func theDailyEnergyKeepsAYearOfDays() {
        let day = Civil.microsPerDay
        let s = fold((0...400).map { energy(Double($0) * 10, t0 + Int64($0) * day) })
        let acc = s.energy["m"]!
        #expect(acc.dailyWh.count == 366)  // EnergyAccount.daysKept
        #expect(acc.dailyWh[Civil.dayKey(dayNumber: Civil.dayNumber(micros: t0 + 400 * day))] == 10)
        #expect(acc.dailyWh[Civil.dayKey(dayNumber: Civil.dayNumber(micros: t0 + day))] == nil)
        #expect(acc.lifetimeWh == 4000)
    }

    @Test func lifetimeNeverDecreasesThroughDecide() {
        var s = HubState()
        register("m", &s)
        var last = 0.0
        for (i, v) in [5.0, 9, 2, 2, 8, 0, 4, 1000, 999].enumerated() {
            run(.recordReading(subject: .device("m"), quantity: .energy, value: v, measuredAt: t0 + Int64(i)), &s)
            let now = s.energy["m"]!.lifetimeWh
            #expect(now >= last)
            last = now
        }
        #expect(last == 4 + 2 + 6 + 4 + 996 + 999)
        #expect(s.energy["m"]!.resets == 3)
    }

    @Test func auditRingIsBounded() {
        var s = HubState(auditCapacity: 5)
        for i in 1...12 {
            s.apply(
                .deviceRenamed(DeviceRenamed(device: "d\(i % 3)", name: "n")),
                context: EventContext(
                    sequence: UInt64(i), timestamp: t0 + Int64(i), actor: i % 2 == 0 ? "alice" : "driver:kasa", commandId: "c\(i)"))
        }
        #expect(s.audit.count == 5)
        #expect(s.audit.recent.map(\.sequence) == [8, 9, 10, 11, 12])
        #expect(s.audit.countsByActor == ["alice": 6, "driver:kasa": 6])
        #expect(s.audit.lastByStream["device/d0"]?.sequence == 12)
        #expect(s.audit.lastByStream["device/d1"]?.commandId == "c10")
        #expect(s.audit.recent.last?.summary == "DeviceRenamed on device/d0 by alice")
        #expect(s.audit.totalEvents == 12)
        #expect(s.lastSequence == 12)
        var small = HubState(auditCapacity: 3)
        small.apply(sampleEvents[0], context: ctx(1))
        #expect(small.audit.recent.map(\.sequence) == [1])
    }

    @Test func devicesFold() {
        let s = fold([
            sampleEvents[0],
            .switchRequested(SwitchRequested(device: "plug-1", state: .on)),
            .switchToggled(SwitchToggled(device: "plug-1", state: .off, cause: .manual))  // not matching: stays pending
        ])
        #expect(s.devices["plug-1"]?.pending?.state == .on)
        #expect(s.devices["plug-1"]?.switchState == .off)
        #expect(s.devices["plug-1"]?.lastSwitchCause == .manual)
        #expect(s.devices["plug-1"]?.hardwareId == "AA:BB")
        #expect(s.devices.active.map(\.id) == ["plug-1"])
        // Events for unknown devices are ignored rather than crashing.
        let t = fold([
            .switchToggled(SwitchToggled(device: "ghost", state: .on, cause: .command)),
            .switchFailed(SwitchFailed(device: "ghost", state: .on, reason: "")),
            .animalDischarged(AnimalDischarged(animal: "ghost", exitWeightKg: 1))
        ])
        #expect(t.devices["ghost"] == nil)
        #expect(t.lastSequence == 3)
    }

    @Test func foldEverySampleAndStateIsDeterministic() {
        let a = fold(sampleEvents)
        let b = fold(sampleEvents)
        #expect(a == b)
        #expect(a.lastSequence == UInt64(sampleEvents.count))
    }
}
