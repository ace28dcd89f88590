import DriverAPI
import DriverTestSupport
import Foundation
import KasaSimulator
import Testing

@testable import Kasa

/// A switch is confirmed by the plug's `err_code 0` answer to `set_relay_state`; the read-back
/// follows without holding the command, and still corrects a plug that answered 0 but did not switch.
@Suite struct ConfirmationTests {
    @Test func theAnswerConfirmsBeforeTheReadBackReachesThePlug() async throws {
        let sim = KasaSimulator(options: .init(port: 0))
        let port = try await sim.start()
        // Polls a minute apart: after the first, every get_sysinfo the plug sees is the read-back.
        let driver = try makeDriver(port: port, extra: #","poll_interval":60"#)
        let context = ProbingContext(sim: sim)
        let running = await Running(driver, context: context)
        try await eventually { await context.switches.map(\.on) == [false] }

        try await driver.execute(.setSwitch(on: true))
        let switches = await context.switches
        #expect(switches.map(\.on) == [false, true])
        // Reported when the plug had answered set_relay_state and had been asked nothing since.
        #expect(switches.last?.asked.last == "system.set_relay_state", "\(switches.last?.asked ?? [])")

        // The read-back still reaches the plug, and says nothing new.
        try await eventually { sim.recentMethods.last == "system.get_sysinfo" }
        #expect(sim.recentMethods.suffix(2) == ["system.set_relay_state", "system.get_sysinfo"])
        try await eventually { (driver as? KasaDriver)?.readBackPending == false }  // the read-back's answer taken in
        #expect(await context.switches.map(\.on) == [false, true])
        await running.stop()
        await sim.stop()
    }

    @Test func theReadBackCorrectsAPlugThatAnsweredButDidNotSwitch() async throws {
        let sim = KasaSimulator(options: .init(port: 0))
        let port = try await sim.start()
        let driver = try makeDriver(port: port, extra: #","poll_interval":60"#)
        let context = ProbingContext(sim: sim)
        let running = await Running(driver, context: context)
        try await eventually { await context.switches.map(\.on) == [false] }

        sim.ignoresSwitching = true
        try await driver.execute(.setSwitch(on: true))
        #expect(await context.switches.map(\.on) == [false, true])  // what the answer claimed
        try await eventually { await context.switches.map(\.on) == [false, true, false] }  // what the plug did
        #expect(await context.switches.last?.asked.last == "system.get_sysinfo")
        #expect(!sim.relayOn)
        await running.stop()
        await sim.stop()
    }

    /// The ordering rules, answer by answer (orders are the requests' places in the order of writes).
    @Test func relayStatesAreReportedInThePlugsOrder() async throws {
        let gate = DriverReportGate()
        let context = CollectingContext()
        gate.open(context)
        let reports = KasaRelayReports(gate: gate)
        let steps: [(on: Bool, order: UInt64, confirms: Bool, reported: [Bool])] = [
            (false, 1, false, [false]),  // the first state
            (false, 2, false, [false]),  // nothing new
            (true, 4, true, [false, true]),  // a confirmation
            (false, 3, false, [false, true]),  // older than the confirmation: stale
            (true, 5, true, [false, true, true]),  // a confirmation, even when unchanged
            (true, 7, false, [false, true, true]),  // a poll written after the next switch...
            (true, 6, true, [false, true, true, true]),  // ...whose answer agrees: still confirms
            (false, 9, false, [false, true, true, true, false]),
            (true, 8, true, [false, true, true, true, false])  // stale, and the plug says otherwise since
        ]
        for step in steps {
            await reports.take(step.on, order: step.order, confirms: step.confirms)
            #expect(await context.observations.switchStates == step.reported, "after \(step)")
        }
        #expect(reports.lastReported == false)
        await gate.close()
    }
}

/// Notes, with each switch state reported, the methods the simulator had been asked by then.
actor ProbingContext: DriverContext {
    nonisolated let deviceId = "plug1"
    let sim: KasaSimulator
    private(set) var switches: [(on: Bool, asked: [String])] = []

    init(sim: KasaSimulator) { self.sim = sim }

    func report(_ observation: Observation) {
        if case .switchState(let on, _) = observation { switches.append((on, sim.recentMethods)) }
    }
}

/// Waits until `condition` holds (checked every 10 ms), failing the test after `timeout` seconds.
func eventually(
    timeout: Double = 10, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: @Sendable () async -> Bool
) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if await condition() { return }
        try await Task.sleep(nanoseconds: 10_000_000)
    }
    if await condition() { return }
    Issue.record("condition not reached within \(timeout) s", sourceLocation: sourceLocation)
    throw CancellationError()
}
