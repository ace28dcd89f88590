import DriverAPI
import DriverTestSupport
import Foundation
import Kasa
import KasaSimulator
import Testing

/// The driver against the simulator over real TCP.
@Suite struct DriverTests {
    @Test func factoryChecksSettings() throws {
        let factory = KasaDriverFactory()
        #expect(factory.name == "kasa")
        func make(_ json: String) throws -> any Driver {
            try factory.make(configuration: DriverConfiguration(deviceId: "p", driver: "kasa", settingsJSON: json))
        }
        #expect(throws: DriverError.self) { try make("{}") }
        #expect(throws: DriverError.self) { try make(#"{"host":"10.0.0.5","colour":"red"}"#) }
        #expect(throws: DriverError.self) { try make(#"{"host":"10.0.0.5","port":70000}"#) }
        #expect(throws: DriverError.self) { try make(#"{"host":"10.0.0.5","retries":-1}"#) }
        let driver = try make(#"{"host":"10.0.0.5"}"#)
        #expect(driver.capabilities == DriverCapabilities(readings: [.power, .voltage, .current, .energy]))  // the HS110's meter
    }

    @Test func switchesWithReadBackAndReportsReadings() async throws {
        let sim = KasaSimulator(options: .init(port: 0))
        let port = try await sim.start()
        let driver = try makeDriver(port: port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)

        await context.wait { $0.lastAvailability?.0 == true && $0.switchStates == [false] && $0.readings(.power).count >= 2 }
        let first = await context.observations
        #expect(first.lastAvailability?.1.contains("HS110(EU)") == true)
        #expect(first.readings(.power).allSatisfy { $0 == 0 })
        #expect(first.readings(.voltage).allSatisfy { abs($0 - 230) < 2 })

        try await driver.execute(.setSwitch(on: true))
        #expect(sim.relayOn)
        #expect(await context.observations.stateChanges == [false, true])  // the answer confirmed before execute returned
        let before = await context.count
        await context.wait { Array($0.dropFirst(before)).readings(.power).count >= 2 }
        let on = Array(await context.observations.dropFirst(before))
        #expect(on.readings(.power).allSatisfy { abs($0 - 60) < 2 })
        #expect(on.readings(.current).allSatisfy { abs($0 - 60.0 / 230) < 0.02 })

        sim.relayOn = false  // pressed on the device: the poll reports it
        await context.wait { $0.stateChanges == [false, true, false] }
        try await driver.execute(.setSwitch(on: true))
        try await driver.execute(.setSwitch(on: false))
        await context.wait { $0.stateChanges == [false, true, false, true, false] }
        await #expect(throws: DriverError.self) { try await driver.execute(.writeActivations([])) }

        await running.stop()
        let afterStop = await context.count
        try await Task.sleep(nanoseconds: 500_000_000)
        #expect(await context.count == afterStop)
        await #expect(throws: DriverError.self) { try await driver.execute(.setSwitch(on: true)) }
        #expect(await context.observations.availabilities.count == 1)
        await sim.stop()
    }

    /// The read-back after a switch is done by the driver's own loop (no task of its own), 0.35 s
    /// after the switch, and nothing is left pending once its answer is taken in.
    @Test func readsBackInItsOwnLoop() async throws {
        let sim = KasaSimulator(options: .init(port: 0))
        let port = try await sim.start()
        let driver = try makeDriver(port: port) as! KasaDriver
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        await context.wait { $0.lastAvailability?.0 == true && $0.readings(.power).count >= 2 }
        #expect(await eventually { !driver.readBackPending }, "after polls")

        try await driver.execute(.setSwitch(on: true))
        // The switch has scheduled its read-back (0.35 s after it): asked at once, since the
        // reading below may already be the read-back's on a loaded machine.
        #expect(driver.readBackPending)
        await context.wait { $0.readings(.power).contains { abs($0 - 60) < 2 } }
        #expect(await eventually { !driver.readBackPending }, "after the switch's read-back")
        await running.stop()
        await sim.stop()
    }

    @Test(arguments: KasaSimulator.Firmware.allCases)
    func energyInWhAndCounterReset(firmware: KasaSimulator.Firmware) async throws {
        let clock = TestClock()
        let sim = KasaSimulator(options: .init(port: 0, firmware: firmware), clock: clock.read)
        let port = try await sim.start()
        sim.relayOn = true
        clock.advance(3600)  // 60 Wh
        let driver = try makeDriver(port: port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        await context.wait { $0.readings(.energy).contains { abs($0 - 60) < 0.001 } }
        clock.advance(1800)  // 90 Wh
        await context.wait { $0.readings(.energy).contains { abs($0 - 90) < 0.001 } }
        sim.resetEnergyCounter()
        await context.wait { $0.readings(.energy).last.map { $0 < 1 } == true }
        await running.stop()
        await sim.stop()
    }

    @Test func unavailableWhileGoneThenAvailableAgain() async throws {
        let sim = KasaSimulator(options: .init(port: 0))
        let port = try await sim.start()
        let driver = try makeDriver(port: port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        await context.wait { $0.availabilities.map(\.0) == [true] }
        await sim.stop()
        await context.wait { $0.availabilities.map(\.0) == [true, false] }
        let reason = await context.observations.lastAvailability?.1 ?? ""
        #expect(reason.contains("refused") || reason.contains("closed"), "\(reason)")
        await #expect(throws: DriverError.self) { try await driver.execute(.setSwitch(on: true)) }
        let again = KasaSimulator(options: .init(port: port))
        _ = try await again.start()
        await context.wait { $0.availabilities.map(\.0) == [true, false, true] }
        try await driver.execute(.setSwitch(on: true))
        #expect(again.relayOn)
        await running.stop()
        await again.stop()
    }

    @Test func connectionRefusedFailsFast() async throws {
        let port = closedPort()
        // Nothing answers HTTP on the probe port either: the reason is the refusal alone.
        let driver = try makeDriver(port: port, extra: #","timeout":10,"retries":3,"klap_probe_port":\#(closedPort())"#)
        let context = CollectingContext()
        let started = Date()
        let running = await Running(driver, context: context)
        // Fast means sooner than one 10 s timeout, let alone three retries of it.
        await context.wait(timeout: 9) { $0.availabilities.count == 1 }
        #expect(Date().timeIntervalSince(started) < 9)
        #expect(await context.observations.availabilities.first?.0 == false)
        #expect(await context.observations.availabilities.first?.1 == "connection refused by 127.0.0.1:\(port)")
        do {
            try await driver.execute(.setSwitch(on: true))
            Issue.record("expected an error")
        } catch let error as DriverError {
            #expect(error.message == "plug unavailable: connection refused by 127.0.0.1:\(port)")
        }
        await running.stop()
    }

    @Test func manyDriversShareOneEventLoopGroup() async throws {
        let sim = KasaSimulator(options: .init(port: 0))
        let port = try await sim.start()
        var drivers: [(Running, CollectingContext)] = []
        for i in 0..<100 {
            let driver = try makeDriver(port: port, extra: #","poll_interval":1"#)
            let context = CollectingContext(deviceId: "plug\(i)")
            let running = await Running(driver, context: context)
            drivers.append((running, context))
        }
        for (_, context) in drivers { await context.wait { $0.lastAvailability?.0 == true } }
        for (running, _) in drivers { await running.stop() }
        await sim.stop()
    }
}
