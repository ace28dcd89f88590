import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import ShellySimulator
import Testing

@testable import Shelly

/// The driver against the simulator's models (`hub sim shelly --model ... --no-status-ntf`) on a real broker.
@Suite("Shelly models against the simulator")
struct ShellyModelSimulatorTests {
    /// status_ntf off, as real devices ship: no `<prefix>/status/...`, only NotifyStatus deltas and
    /// the replies to the driver's own `Switch.GetStatus`.
    @Test func statusNotificationsOff() async throws {
        try await withBroker { broker in
            let sim = simulator(broker, gen: 2, load: 100, statusNotifications: false)
            let watcher = try await RawClient(port: broker.port)
            try watcher.client.subscribe("\(sim.deviceId)/status/#", qos: 1)
            try await sim.start()
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(sim.deviceId)"}"#)
            #expect(await rig.wait { $0.availability.first == true })
            #expect(await rig.wait { $0.switchStates.first == false })  // the Switch.GetStatus answer
            #expect(await rig.wait { $0.readings(.voltage).contains(230) })

            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { $0.switchStates.last == true })
            #expect(sim.relayOn)
            #expect(await rig.wait { $0.readings(.power).contains(100) })
            // Deltas (aenergy, apower, temperature) leave the relay and the voltage as they were.
            let energies = rig.readings(.energy).count
            #expect(await rig.wait { $0.readings(.energy).count >= energies + 3 })
            #expect(rig.driver.mergedStatus.output == true)
            #expect(rig.driver.mergedStatus.voltage == 230)
            #expect(rig.switchStates.filter { $0 }.count == 1)

            sim.press()
            #expect(await rig.wait { $0.switchStates.last == false })
            #expect(await rig.wait { $0.readings(.power).last == 0 })
            #expect(rig.failures.isEmpty)
            // Nothing came on the status topics.
            let statusMessages = await collect(watcher, for: .milliseconds(300))
            #expect(statusMessages.isEmpty, "\(statusMessages)")
            await rig.stop()
            await sim.stop()
            await watcher.stop()
        }
    }

    /// A Plus 1: switched and confirmed, and not one reading.
    @Test func plus1WithoutAMeter() async throws {
        try await withBroker { broker in
            let sim = simulator(broker, gen: 2, model: .plus1, statusNotifications: false)
            #expect(sim.deviceId == "shellyplus1-441793ab3fb4")
            try await sim.start()
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(sim.deviceId)"}"#)
            #expect(rig.driver.capabilities.readings.isEmpty)
            #expect(await rig.wait { $0.switchStates.first == false })
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { $0.switchStates.last == true })
            #expect(await rig.wait(timeout: .seconds(10)) { $0.driver.mergedStatus.temperatureC != 38.5 })
            try await rig.driver.execute(.setSwitch(on: false))
            #expect(await rig.wait { $0.switchStates == [false, true, false] })
            #expect(rig.observations.allSatisfy { if case .reading = $0 { return false } else { return true } })
            #expect(rig.failures.isEmpty)
            await rig.stop()
            await sim.stop()
        }
    }

    /// A PM Mini: readings of its load from `pm1:0`, and no relay to switch.
    @Test func pmMiniReadsItsMeter() async throws {
        try await withBroker { broker in
            let sim = simulator(broker, gen: 2, load: 42, model: .pmmini, statusNotifications: false)
            try await sim.start()
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(sim.deviceId)"}"#)
            #expect(await rig.wait { $0.readings(.power).contains(42) && $0.readings(.voltage).contains(230) })
            #expect(await rig.wait { ($0.readings(.energy).max() ?? 0) > 0 })
            await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: false)) }
            #expect(rig.switchStates.isEmpty)
            #expect(rig.failures.isEmpty)
            await rig.stop()
            await sim.stop()
        }
    }

    /// A Pro 4PM as four outlets, each driving its own relay and reading its own meter.
    @Test func pro4PMAsFourOutlets() async throws {
        try await withBroker { broker in
            let sim = simulator(broker, gen: 2, load: 100, model: .pro4pm)
            try await sim.start()
            let outlets = try #require(
                try ShellyDriverFactory().outlets(
                    of: DriverConfiguration(deviceId: "strip", driver: "shelly", settingsJSON: #"{"id":"\#(sim.deviceId)","channels":4}"#)))
            var rigs: [ShellyRig] = []
            for outlet in outlets { rigs.append(try await ShellyRig.start(broker: broker, settings: outlet.settingsJSON)) }
            for rig in rigs { #expect(await rig.wait { $0.switchStates.first == false }) }
            try await rigs[2].driver.execute(.setSwitch(on: true))
            #expect(await rigs[2].wait { $0.switchStates.last == true })
            #expect((0..<4).map { sim.relay($0) } == [false, false, true, false])
            #expect(await rigs[2].wait { $0.readings(.power).contains(100) })
            try await Task.sleep(for: .milliseconds(500))
            for i in [0, 1, 3] {
                #expect(rigs[i].switchStates == [false])
                #expect(!rigs[i].readings(.power).contains(100))
            }
            for rig in rigs { #expect(rig.failures.isEmpty) }
            for rig in rigs { await rig.stop() }
            await sim.stop()
        }
    }

    /// Discovery of the simulated models offers their settings, and those settings drive them.
    @Test func discoveryOfTheModels() async throws {
        try await withBroker { broker in
            let factory = ShellyDriverFactory()
            let watcher = try await RawClient(port: broker.port)
            for filter in factory.discoveryFilters { try watcher.client.subscribe(filter, qos: 1) }
            let sims = [
                simulator(broker, gen: 2, model: .plus1), simulator(broker, gen: 2, model: .pro4pm),
                simulator(broker, gen: 2, model: .pmmini), simulator(broker, gen: 2)
            ]
            for sim in sims { try await sim.start() }
            var found: [String: String] = [:]
            let deadline = ContinuousClock.now + .seconds(10)
            for await m in watcher.client.messages {
                if let d = factory.discover(DriverMQTTMessage(topic: m.topic, payload: m.payload, retained: m.retain)) {
                    found[d.suggestedId] = d.settingsJSON
                }
                if found.count >= 4 || ContinuousClock.now > deadline { break }
            }
            #expect(found["shellyplus1-441793ab3fb4"] == #"{"gen":2,"id":"shellyplus1-441793ab3fb4","meter":false}"#)
            #expect(found["shellypro4pm-441793ab3fb4"] == #"{"channels":4,"gen":2,"id":"shellypro4pm-441793ab3fb4"}"#)
            #expect(found["shellypmminig3-441793ab3fb4"] == #"{"component":"pm1","gen":2,"id":"shellypmminig3-441793ab3fb4"}"#)
            #expect(found["shellyplus1pm-441793ab3fb4"] == #"{"gen":2,"id":"shellyplus1pm-441793ab3fb4"}"#)
            for sim in sims { await sim.stop() }
            await watcher.stop()
        }
    }
}

/// The messages a raw client receives within `duration`.
func collect(_ client: RawClient, for duration: Duration) async -> [String] {
    await withTaskGroup(of: [String].self) { group in
        group.addTask {
            var seen: [String] = []
            for await m in client.client.messages {
                seen.append("\(m.topic) \(String(decoding: m.payload, as: UTF8.self))")
            }
            return seen
        }
        try? await Task.sleep(for: duration)
        group.cancelAll()
        return await group.next() ?? []
    }
}
