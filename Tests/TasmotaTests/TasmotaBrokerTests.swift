import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import TasmotaSimulator
import Testing

@testable import Tasmota

/// Driver and simulator over a real mosquitto broker.
@Suite("Tasmota driver with the simulator on a real broker")
struct TasmotaSimulatorTests {
    func withSimulator(
        topic: String = "tasmota_A1B2C3", relays: Int = 1, telePeriod: Double = 60, loadWatts: Double = 60,
        settings: String? = nil,
        _ body: (Rig, TasmotaSimulator) async throws -> Void
    ) async throws {
        let broker = try await TestBroker.startAsync()
        let simulator = TasmotaSimulator(
            options: .init(
                port: broker.port, topic: topic, relays: relays,
                telePeriod: telePeriod, loadWatts: loadWatts))
        try await simulator.start()
        let rig = try await Rig.make(settings: settings ?? #"{"topic":"\#(topic)"}"#, broker: broker)
        do {
            try await body(rig, simulator)
        } catch {
            await simulator.stop()
            await rig.shutdown()
            throw error
        }
        await simulator.stop()
        await rig.shutdown()
    }

    @Test func availabilityStateAndSwitching() async throws {
        try await withSimulator { rig, simulator in
            #expect(await eventually { rig.availabilities.first?.0 == true })
            #expect(rig.availabilities.first?.1 == "Tasmota LWT Online")
            // The start-up query learns the relay state.
            #expect(await eventually { rig.switchStates == [false] })

            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await eventually { rig.switchStates == [false, true] })
            #expect(simulator.relayOn == [true])

            // A confirmation is reported even if nothing changed; RESULT + POWER count once.
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await eventually { rig.switchStates == [false, true, true] })

            try await rig.driver.execute(.setSwitch(on: false))
            #expect(await eventually { rig.switchStates == [false, true, true, false] })
            #expect(simulator.relayOn == [false])

            // The button at the device.
            simulator.press(relay: 1)
            #expect(await eventually { rig.switchStates == [false, true, true, false, true] })
            try await Task.sleep(for: .milliseconds(300))
            #expect(rig.switchStates == [false, true, true, false, true])
            #expect(!rig.observations.contains { if case .commandFailed = $0 { return true } else { return false } })
            #expect(rig.driver.ignoredPayloads == 0)
        }
    }

    @Test func energyReadingsInWattHours() async throws {
        try await withSimulator(telePeriod: 0.25, loadWatts: 36_000) { rig, simulator in
            #expect(await eventually { rig.availabilities.first?.0 == true })
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await eventually { rig.readings.contains { $0.0 == .power && $0.1 == 36_000 } })
            // 36 kW = 10 Wh per second; Total has 1 Wh resolution (3 decimals of kWh).
            #expect(await eventually { rig.readings.contains { $0.0 == .energy && $0.1 >= 5 } })
            let energy = rig.readings.filter { $0.0 == .energy }.map(\.1)
            #expect(energy == energy.sorted(), "the counter only grows")
            #expect(rig.readings.contains { $0.0 == .voltage && $0.1 >= 220 && $0.1 <= 240 })
            #expect(rig.readings.contains { $0.0 == .current && $0.1 > 100 })
            let device = simulator.totalKWh[0] * 1000
            #expect((energy.last ?? 0) <= device + 1)
            try await rig.driver.execute(.setSwitch(on: false))
            #expect(await eventually { rig.readings.last { $0.0 == .power }?.1 == 0 })
        }
    }

    @Test func restartGoesOfflineThenOnline() async throws {
        try await withSimulator { rig, simulator in
            #expect(await eventually { rig.availabilities.map(\.0) == [true] })
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await eventually { rig.switchStates.last == true })
            try await simulator.restart()
            #expect(await eventually { rig.availabilities.map(\.0) == [true, false, true] })
            #expect(rig.availabilities[1].1 == "Tasmota reports Offline (last will)")
            #expect(simulator.relayOn == [true], "PowerOnState 3 keeps the relay")
            // Still switchable after the restart.
            try await rig.driver.execute(.setSwitch(on: false))
            #expect(await eventually { rig.switchStates.last == false })
        }
    }

    @Test func secondRelayOfMultiRelayDevice() async throws {
        try await withSimulator(
            topic: "dual", relays: 2, telePeriod: 0.3, loadWatts: 100,
            settings: #"{"topic":"dual","relays":2,"relay":2,"energy_channel":1}"#
        ) { rig, simulator in
            #expect(await eventually { rig.switchStates == [false] })
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await eventually { rig.switchStates == [false, true] })
            #expect(simulator.relayOn == [false, true])
            simulator.press(relay: 1)  // the other relay: not ours
            #expect(await eventually { simulator.relayOn == [true, true] })
            #expect(await eventually { rig.readings.contains { $0.0 == .power && $0.1 == 100 } })
            try await Task.sleep(for: .milliseconds(300))
            #expect(rig.switchStates == [false, true])
        }
    }

    /// The simulator's two-channel meter: with `SetOption129 0` (the firmware's default) `Total` is
    /// the sum and relay 2's outlet books no energy; with `SetOption129 1` it books channel 1's.
    @Test(arguments: [false, true])
    func twoChannelMeter(setOption129: Bool) async throws {
        let broker = try await TestBroker.startAsync()
        let simulator = TasmotaSimulator(
            options: .init(port: broker.port, topic: "meter2", relays: 2, telePeriod: 0.25, loadWatts: 36_000, setOption129: setOption129))
        try await simulator.start()
        let outlets = try #require(
            try TasmotaDriverFactory().outlets(
                of: DriverConfiguration(deviceId: "meter2", driver: "tasmota", settingsJSON: #"{"topic":"meter2","relays":2}"#)))
        let rig = try await Rig.make(settings: outlets[1].settingsJSON, broker: broker)
        simulator.press(relay: 1)
        try await rig.driver.execute(.setSwitch(on: true))
        #expect(await eventually { rig.readings.contains { $0.0 == .power && $0.1 == 36_000 } })
        if setOption129 {
            #expect(await eventually { rig.readings.contains { $0.0 == .energy && $0.1 >= 5 } })
            let energy = rig.readings.filter { $0.0 == .energy }.map(\.1)
            #expect((energy.last ?? 0) <= simulator.totalKWh[1] * 1000 + 1)
        } else {
            try await Task.sleep(for: .milliseconds(800))
            #expect(!rig.readings.contains { $0.0 == .energy }, "the summed Total is not relay 2's")
        }
        await simulator.stop()
        await rig.shutdown()
    }

    @Test(arguments: [false, true])
    func retainedCommandGhostSwitching(ignoreRetained: Bool) async throws {
        let broker = try await TestBroker.startAsync()
        let raw = try await ClientDriverMQTT(port: broker.port)
        // Someone retained a command (the mistake the driver never makes).
        try await raw.client.publishAndWait("cmnd/ghost/POWER", Array("ON".utf8), qos: 1, retain: true, timeout: .seconds(10))
        let simulator = TasmotaSimulator(
            options: .init(
                port: broker.port, topic: "ghost", telePeriod: 60,
                ignoreRetainedCommands: ignoreRetained))
        try await simulator.start()
        if ignoreRetained {
            try await Task.sleep(for: .milliseconds(300))
            #expect(simulator.relayOn == [false])
        } else {
            #expect(await eventually { simulator.relayOn == [true] }, "a real Tasmota obeys the retained command")
        }
        await simulator.stop()
        await raw.stop()
        await broker.killAsync()
    }

    @Test func unconfirmedAndOfflineCommands() async throws {
        // No device: the command goes out but nobody confirms it.
        let rig = try await Rig.make(settings: #"{"topic":"nobody"}"#, confirmationTimeout: .milliseconds(500))
        try await rig.driver.execute(.setSwitch(on: true))
        #expect(await eventually { rig.observations.contains { if case .commandFailed = $0 { return true } else { return false } } })
        // The device's last will: commands are refused.
        try await rig.publish("tele/nobody/LWT", "Offline", retain: true)
        #expect(await eventually { rig.availabilities.map(\.0) == [false] })
        await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: true)) }
        await rig.running.stop()
        await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: true)) }
        await rig.shutdown()
    }

    @Test func noMQTTHandle() async throws {
        let driver = try #require(
            try TasmotaDriverFactory().make(
                configuration: DriverConfiguration(deviceId: "p", driver: "tasmota", settingsJSON: #"{"topic":"t"}"#)) as? TasmotaDriver)
        let context = CollectingContext(deviceId: "p", mqtt: nil)
        let running = await Running(driver, context: context) { !context.observations.isEmpty }
        #expect(context.observations.contains { if case .availability(false, _) = $0 { return true } else { return false } })
        await #expect(throws: DriverError.self) { try await driver.execute(.setSwitch(on: true)) }
        await running.stop()
    }

    @Test func discoveryFromRetainedLWT() async throws {
        let broker = try await TestBroker.startAsync()
        // Firmware before 9: no announcement, the last will is all there is.
        let simulator = TasmotaSimulator(
            options: .init(port: broker.port, topic: "tasmota_D15C0V", telePeriod: 60, publishDiscovery: false))
        try await simulator.start()
        let raw = try await ClientDriverMQTT(port: broker.port)
        try await raw.client.publishAndWait("tele/gone/LWT", Array("Offline".utf8), qos: 1, retain: true, timeout: .seconds(10))
        // The hub subscribes later and gets the retained last wills.
        let hub = try await ClientDriverMQTT(port: broker.port)
        let factory = TasmotaDriverFactory()
        for filter in factory.discoveryFilters { try hub.subscribe(filter) }
        let found = await withTaskGroup(of: [DiscoveredDevice].self) { group in
            group.addTask {
                var seen: [DiscoveredDevice] = []
                var messages = 0
                for await message in hub.messages {
                    messages += 1
                    if let device = factory.discover(message) { seen.append(device) }
                    if messages == 2 { break }
                }
                return seen
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10)); return []
            }
            let first = await group.next() ?? []
            group.cancelAll()
            return first
        }
        #expect(
            found == [
                DiscoveredDevice(
                    suggestedId: "tasmota_D15C0V", driver: "tasmota", name: "tasmota_D15C0V",
                    settingsJSON: #"{"topic":"tasmota_D15C0V"}"#)
            ])
        await simulator.stop()
        await hub.stop()
        await raw.stop()
        await broker.killAsync()
    }
}
