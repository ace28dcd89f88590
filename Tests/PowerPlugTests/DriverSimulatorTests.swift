import DriverAPI
import DriverTestSupport
import Foundation
import PowerPlug
import PowerPlugSimulator
import Testing

/// The driver against the simulator, over real TCP on loopback.
@Suite struct DriverSimulatorTests {
    func simulator(stateFile: String? = nil, port: Int = 0) -> PowerPlugSimulator {
        PowerPlugSimulator(options: .init(port: port, stateFile: stateFile, statusInterval: .milliseconds(300)))
    }

    @Test func connectsAndReportsStatusAndList() async throws {
        let sim = simulator()
        let port = try await sim.start()
        let driver = try makeDriver(port: port)
        #expect(driver.capabilities == DriverCapabilities(storesActivations: true, activationSlots: 10))  // and no meter: no readings
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        let reason = try await context.waitAvailability(true)
        #expect(reason == "connected to 127.0.0.1:\(port)")
        try await context.waitFor("switch state") { $0 == .switchState(on: false, manual: false) }
        try await context.waitFor("activations") { $0 == .activations([]) }
        await running.stop()
        await sim.stop()
        #expect(sim.connectionCount == 1)
    }

    @Test func switchOnIsManualOffIsAutomatic() async throws {
        let sim = simulator()
        let port = try await sim.start()
        let driver = try makeDriver(port: port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        try await context.waitFor("first state") { $0 == .switchState(on: false, manual: false) }
        try await driver.execute(.setSwitch(on: true))
        let on = try await context.waitFor("manual on") { $0 == .switchState(on: true, manual: true) }
        #expect(sim.status == (manual: true, on: true))
        try await driver.execute(.setSwitch(on: false))
        try await context.waitFor("automatic off", from: on) { $0 == .switchState(on: false, manual: false) }
        #expect(sim.status == (manual: false, on: false))
        // changes only: one report per state
        let states = await context.switchStates
        #expect(states.count == 3, "\(states)")
        await running.stop()
        await sim.stop()
    }

    @Test func writeActivationsRoundTrip() async throws {
        let sim = simulator()
        let port = try await sim.start()
        let driver = try makeDriver(port: port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        try await context.waitFor("first list") { $0 == .activations([]) }

        let now = Int64(Date().timeIntervalSince1970)
        let future = DeviceActivation(name: "lamp", start: now + 3600, lengthMinutes: 10, periodMinutes: 0)
        let daily = DeviceActivation(name: "lawn", start: now - 3 * 86_400, lengthMinutes: 30, periodMinutes: 1440)
        let heater = DeviceActivation(name: "heater", start: now + 7200, lengthMinutes: 60, periodMinutes: 60)
        let rolled = PowerPlugProtocol.rolledForward(daily, now: now)
        #expect(rolled.start > now - 1800 && rolled.start <= now + 86_400)

        try await driver.execute(.writeActivations([future, daily, heater]))
        try await context.waitFor("three read back") { $0 == .activations([future, rolled, heater]) }
        #expect(sim.activations == [future, rolled, heater])

        let mark = await context.observations.count
        try await driver.execute(.writeActivations([heater]))
        try await context.waitFor("one read back", from: mark) { $0 == .activations([heater]) }
        #expect(sim.activations == [heater])

        try await driver.execute(.writeActivations([]))
        try await context.waitFor("empty", from: mark) { $0 == .activations([]) }
        #expect(sim.activations.isEmpty)

        let eleven = (0..<11).map { DeviceActivation(name: "a\($0)", start: now + 60, lengthMinutes: 1, periodMinutes: 0) }
        await #expect(throws: DriverError.self) { try await driver.execute(.writeActivations(eleven)) }
        await running.stop()
        await sim.stop()
    }

    @Test func listEditedElsewhereIsReportedOnNextCheck() async throws {
        let sim = simulator()
        let port = try await sim.start()
        let driver = try makeDriver(port: port, extra: "\"activation_check\":0.3")
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        try await context.waitFor("first list") { $0 == .activations([]) }
        let phone = DeviceActivation(name: "from phone", start: 2_000_000_000, lengthMinutes: 5, periodMinutes: 0)
        sim.replaceActivations([phone])
        try await context.waitFor("edited list") { $0 == .activations([phone]) }
        await running.stop()
        await sim.stop()
    }

    @Test func simulatorStopAndRestartKeepsStateFile() async throws {
        let path = temporaryPath("restart")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sim = simulator(stateFile: path)
        let port = try await sim.start()
        let driver = try makeDriver(port: port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        try await context.waitFor("first list") { $0 == .activations([]) }
        let keep = DeviceActivation(name: "keep me", start: 2_000_000_000, lengthMinutes: 15, periodMinutes: 0)
        try await driver.execute(.writeActivations([keep]))
        try await context.waitFor("written") { $0 == .activations([keep]) }

        let mark = await context.observations.count  // before the stop: the driver may report it at once
        await sim.stop()
        let reason = try await context.waitAvailability(false, from: mark)
        #expect(reason.contains("closed the connection") || reason.contains("reset"), "\(reason)")
        await #expect(throws: DriverError.self) { try await driver.execute(.setSwitch(on: true)) }

        let mark2 = await context.observations.count  // before the restart, for the same reason
        let again = simulator(stateFile: path, port: port)
        #expect(try await again.start() == port)
        #expect(again.activations == [keep])
        _ = try await context.waitAvailability(true, from: mark2, timeout: .seconds(15))
        try await context.waitFor("list after restart", from: mark2) { $0 == .activations([keep]) }
        // one unavailable report for the whole outage, not one per retry
        #expect(await context.availabilities.filter { !$0.0 }.count == 1)
        await running.stop()
        await again.stop()
    }

    @Test func noReportsAfterStop() async throws {
        let sim = simulator()
        let port = try await sim.start()
        let driver = try makeDriver(port: port, extra: "\"activation_check\":0.1")
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        _ = try await context.waitAvailability(true)
        await running.stop()
        let count = await context.observations.count
        sim.status = (manual: true, on: true)
        try await Task.sleep(for: .milliseconds(500))
        #expect(await context.observations.count == count)
        await #expect(throws: DriverError.self) { try await driver.execute(.setSwitch(on: true)) }
        await sim.stop()
    }
}

@Suite struct DriverSettingsTests {
    func make(_ json: String) throws -> any Driver {
        try PowerPlugDriverFactory().make(configuration: DriverConfiguration(deviceId: "p", driver: "powerplug", settingsJSON: json))
    }

    @Test func validatesSettings() throws {
        #expect(PowerPlugDriverFactory().name == "powerplug")
        #expect(throws: DriverError.self) { try make("{}") }
        #expect(throws: DriverError.self) { try make("{\"host\":\"h\",\"prot\":230}") }
        #expect(throws: DriverError.self) { try make("{\"host\":\"h\",\"port\":70000}") }
        #expect(throws: DriverError.self) { try make("{\"host\":\"h\",\"slots\":0}") }
        let defaults = try PowerPlugDriver.Settings(
            DriverConfiguration(deviceId: "p", driver: "powerplug", settingsJSON: "{\"host\":\"h\"}"))
        #expect(
            defaults == PowerPlugDriver.Settings(host: "h", port: 230, slots: 10, readTimeout: 5, activationCheck: 60, connectTimeout: 3))
        #expect(try make("{\"host\":\"h\",\"slots\":4}").capabilities.activationSlots == 4)
    }
}
