import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

@Suite struct ReadingFilterTests {
    let t0: Int64 = 1_795_370_400_000_000  // 2026-11-22T18:00:00Z
    let s: Int64 = 1_000_000

    @Test func deadbandAndMaximumInterval() {
        var f = ReadingFilter(rules: [.power: .init(deadband: 2, maxIntervalSeconds: 60)])
        #expect(f.admit(device: "d", quantity: .power, value: 60, at: t0).map(\.value) == [60])
        #expect(f.admit(device: "d", quantity: .power, value: 61.5, at: t0 + 5 * s).isEmpty)
        #expect(f.admit(device: "d", quantity: .power, value: 58.1, at: t0 + 10 * s).isEmpty)
        #expect(f.admit(device: "d", quantity: .power, value: 57.9, at: t0 + 15 * s).map(\.value) == [57.9])
        #expect(f.admit(device: "d", quantity: .power, value: 58, at: t0 + 74 * s).isEmpty)
        #expect(f.admit(device: "d", quantity: .power, value: 58, at: t0 + 75 * s).map(\.at) == [t0 + 75 * s])
        // Devices and quantities are tracked apart.
        #expect(f.admit(device: "e", quantity: .power, value: 58, at: t0 + 76 * s).count == 1)
        #expect(f.admit(device: "d", quantity: .voltage, value: 230, at: t0 + 76 * s).count == 1)
    }

    @Test func everyPollOfASteadyLoadIsNotAnEvent() {
        var f = ReadingFilter()
        var recorded = 0
        for i in 0..<(3600 / 5) {  // an hour of 5 s polls of a steady 60 W ± 0.4 W
            recorded += f.admit(device: "d", quantity: .power, value: 60 + Double(i % 3) * 0.4 - 0.4, at: t0 + Int64(i) * 5 * s).count
        }
        #expect(recorded == 12 + 1 - 1)  // the first, then one per 300 s maximum interval
    }

    @Test func energyCounterResetsAndDayBoundaries() {
        var f = ReadingFilter(rules: [.energy: .init(deadband: 10, maxIntervalSeconds: 3600)])
        let midnight = t0 + 6 * 3600 * s  // 2026-11-23T00:00:00Z
        #expect(f.admit(device: "d", quantity: .energy, value: 1000, at: midnight - 20 * s).count == 1)
        #expect(f.admit(device: "d", quantity: .energy, value: 1001, at: midnight - 10 * s).isEmpty)
        #expect(f.admit(device: "d", quantity: .energy, value: 1002, at: midnight - 1 * s).isEmpty)
        // The first sample of the new day brings the last one of the old day with it.
        let crossing = f.admit(device: "d", quantity: .energy, value: 1003, at: midnight + 4 * s)
        #expect(crossing.map(\.value) == [1002, 1003])
        #expect(f.admit(device: "d", quantity: .energy, value: 1004, at: midnight + 9 * s).isEmpty)
        // A counter that goes down is always recorded (the domain turns it into a reset).
        #expect(f.admit(device: "d", quantity: .energy, value: 0.5, at: midnight + 14 * s).map(\.value) == [0.5])
    }
}

@Suite struct RelativeDeadbandTests {
    @Test func noiseOnABigLoadIsNotNews() {
        var f = ReadingFilter()
        let t0: Int64 = 1_795_370_400_000_000
        #expect(f.admit(device: "heater", quantity: .power, value: 1800, at: t0).count == 1)
        #expect(f.admit(device: "heater", quantity: .power, value: 1830, at: t0 + 1).isEmpty)  // 1.7 %
        #expect(f.admit(device: "heater", quantity: .power, value: 1760, at: t0 + 2).count == 1)  // 2.2 %
        #expect(f.admit(device: "lamp", quantity: .power, value: 5, at: t0).count == 1)
        #expect(f.admit(device: "lamp", quantity: .power, value: 6.5, at: t0 + 1).count == 1)  // beyond 1 W
    }
}
