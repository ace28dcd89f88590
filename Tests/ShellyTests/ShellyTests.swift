import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import ShellySimulator
import Testing

@testable import Shelly

@Suite("Shelly driver against the simulator")
struct ShellySimulatorTests {
    @Test func gen1SwitchesConfirmsAndMeters() async throws {
        try await withBroker { broker in
            let sim = simulator(broker, gen: 1, load: 3000)
            try await sim.start()
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"shellyplug-s-7AB1C2","gen":1}"#)
            #expect(await rig.wait { $0.availability.first == true })
            #expect(await rig.wait { $0.switchStates.first == false })  // the `update` answer

            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { $0.switchStates.last == true })
            #expect(sim.relayOn)
            // An unchanged state is still confirmed after a command.
            let before = rig.switchStates.count
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { $0.switchStates.count == before + 1 && $0.switchStates.last == true })

            // Watt-minutes become Wh; power in W.
            #expect(await rig.wait { $0.readings(.power).contains(3000) })
            #expect(await rig.wait { ($0.readings(.energy).max() ?? 0) >= 1 })  // 60 Wmin = 1 Wh
            // Reboot: the counter starts again, reported as a lower value (the hub records the reset).
            let peak = rig.readings(.energy).max() ?? 0
            let count = rig.readings(.energy).count
            sim.reboot()
            #expect(await rig.wait { $0.readings(.energy).dropFirst(count).contains { $0 < peak } })

            // The button: reported as a change.
            sim.press()
            #expect(await rig.wait { $0.switchStates.last == false })
            try await rig.driver.execute(.setSwitch(on: false))
            #expect(await rig.wait { $0.switchStates.filter { !$0 }.count >= 2 })

            await sim.stop()
            #expect(await rig.wait { $0.availability.last == false })
            await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: true)) }
            await rig.stop()
        }
    }

    @Test func gen2SwitchesConfirmsMetersAndMerges() async throws {
        try await withBroker { broker in
            let sim = simulator(broker, gen: 2, load: 100)
            try await sim.start()
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"shellyplus1pm-441793ab3fb4"}"#)
            #expect(await rig.wait { $0.availability.first == true })
            #expect(await rig.wait { $0.switchStates.first == false })  // Switch.GetStatus answer
            #expect(await rig.wait { $0.readings(.voltage).contains(230) })

            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { $0.switchStates.last == true })
            #expect(sim.relayOn)
            #expect(await rig.wait { $0.readings(.power).contains(100) })
            // Unchanged state: no notification from the device, confirmed by the status asked after Switch.Set.
            let before = rig.switchStates.count
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { $0.switchStates.count == before + 1 && $0.switchStates.last == true })

            // Energy counter (Wh) increases with NotifyStatus aenergy partials; temperature-only
            // partials do not lose apower or output.
            #expect(await rig.wait { ($0.readings(.energy).max() ?? 0) > 0 })
            #expect(
                await rig.wait(timeout: .seconds(10)) {
                    $0.driver.mergedStatus.temperatureC != 38.5 && $0.driver.mergedStatus.temperatureC != nil
                })
            #expect(rig.driver.mergedStatus.output == true)
            #expect(rig.driver.mergedStatus.apower == 100)

            sim.press()
            #expect(await rig.wait { $0.switchStates.last == false })
            #expect(await rig.wait { $0.readings(.power).last == 0 })
            try await rig.driver.execute(.setSwitch(on: false))
            #expect(await rig.wait { $0.switchStates.filter { !$0 }.count >= 3 })
            #expect(rig.failures.isEmpty)

            await sim.cutPower()  // last will
            #expect(await rig.wait { $0.availability.last == false })
            await rig.stop()
        }
    }

    @Test func gen2RPCErrorIsACommandFailure() async throws {
        try await withBroker { broker in
            let sim = simulator(broker, gen: 2)
            try await sim.start()
            // The simulated Plus 1PM has only switch:0.
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"shellyplus1pm-441793ab3fb4","channel":1}"#)
            #expect(await rig.wait { $0.availability.first == true })
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { !$0.failures.isEmpty })
            #expect(rig.failures.first?.contains("not found") == true)
            #expect(!sim.relayOn)
            #expect(rig.switchStates.isEmpty)
            await rig.stop()
            await sim.stop()
        }
    }

    @Test func runForeverStartsDistinctPlugs() async throws {
        try await withBroker { broker in
            let watcher = try await RawClient(port: broker.port)
            try watcher.client.subscribe("+/online", qos: 1)
            try watcher.client.subscribe("shellies/+/online", qos: 1)
            let port = broker.port
            for gen in [1, 2] {
                let run = Task {
                    try await ShellySimulator.runForever(options: .init(port: port, gen: gen, statusPeriod: 1), count: 2, print: { _ in })
                }
                let expected: Set<String> =
                    gen == 1
                    ? ["shellies/shellyplug-s-7AB1C2/online", "shellies/shellyplug-s-7AB1C3/online"]
                    : ["shellyplus1pm-441793ab3fb4/online", "shellyplus1pm-441793ab3fb5/online"]
                var seen = Set<String>()
                let deadline = ContinuousClock.now + .seconds(10)
                for await m in watcher.client.messages {
                    if String(decoding: m.payload, as: UTF8.self) == "true" { seen.insert(m.topic) }
                    if seen.isSuperset(of: expected) || ContinuousClock.now > deadline { break }
                }
                #expect(seen.isSuperset(of: expected))
                run.cancel()
                _ = try? await run.value
            }
            await watcher.stop()
        }
    }
}

@Suite("Shelly settings and discovery")
struct ShellyFactoryTests {
    func make(_ json: String) throws -> any Driver {
        try ShellyDriverFactory().make(configuration: DriverConfiguration(deviceId: "d", driver: "shelly", settingsJSON: json))
    }

    @Test func settings() throws {
        #expect(try make(#"{"id":"shellyplug-s-7AB1C2","gen":1}"#).capabilities.mqttScope == ["shellies/shellyplug-s-7AB1C2/#"])
        #expect(
            try make(#"{"id":"shellyplus1pm-441793ab3fb4"}"#).capabilities.mqttScope
                == ["shellyplus1pm-441793ab3fb4/#", "hub-shelly/shellyplus1pm-441793ab3fb4/#"])
        #expect(try make(#"{"id":"shelly1pmg3-34b7dac0e13c","gen":3,"channel":0}"#).capabilities.mqttScope.count == 2)
        // What each generation reports: Gen1 power and energy, Gen2 also voltage and current.
        #expect(try make(#"{"id":"shellyplug-s-7AB1C2","gen":1}"#).capabilities.readings == [.power, .energy])
        #expect(try make(#"{"id":"shellyplus1pm-441793ab3fb4"}"#).capabilities.readings == [.power, .energy, .voltage, .current])
        #expect(throws: DriverError.self) { try make(#"{"id":"x","colour":"red"}"#) }
        #expect(throws: DriverError.self) { try make(#"{"gen":1}"#) }
        #expect(throws: DriverError.self) { try make(#"{"id":"x","gen":7}"#) }
        #expect(throws: DriverError.self) { try make(#"{"id":"x","channel":-1}"#) }
        #expect(throws: DriverError.self) { try make(#"{"id":"a+b"}"#) }
        // A custom prefix of several levels (refused before as "without /"), and gen 4 (Shelly 1
        // Mini Gen4, which speaks the Gen2 RPC; refused before as out of range).
        #expect(try make(#"{"id":"shellies/plus1pm"}"#).capabilities.mqttScope == ["shellies/plus1pm/#", "hub-shelly/shellies/plus1pm/#"])
        #expect(try make(#"{"id":"shelly1minig4-a1b2c3d4e5f6","gen":4}"#).capabilities.mqttScope.count == 2)
        for bad in ["/x", "x/", "a//b", "a/+/b", "a/#", "a b/c"] {
            #expect(throws: DriverError.self, "\(bad)") { try make(#"{"id":"\#(bad)"}"#) }
        }
    }

    @Test func discoveryOfBothGenerations() async throws {
        try await withBroker { broker in
            let factory = ShellyDriverFactory()
            let watcher = try await RawClient(port: broker.port)
            for filter in factory.discoveryFilters { try watcher.client.subscribe(filter, qos: 1) }
            let gen1 = simulator(broker, gen: 1, period: 5)
            let gen2 = simulator(broker, gen: 2, period: 5)
            try await gen1.start()
            try await gen2.start()
            try await watcher.send("shellies/command", "announce")
            var found: [DiscoveredDevice] = []
            let deadline = ContinuousClock.now + .seconds(10)
            for await m in watcher.client.messages {
                if let d = factory.discover(DriverMQTTMessage(topic: m.topic, payload: m.payload, retained: m.retain)), !found.contains(d) {
                    found.append(d)
                }
                if found.count >= 2 || ContinuousClock.now > deadline { break }
            }
            let one = try #require(found.first { $0.settingsJSON.contains("\"gen\":1") })
            #expect(one.settingsJSON == #"{"gen":1,"id":"shellyplug-s-7AB1C2"}"#)
            #expect(one.hardwareId == "A4CF127AB1C2")
            #expect(one.suggestedId == "shellyplug-s-7AB1C2")
            #expect(one.driver == "shelly")
            let two = try #require(found.first { $0.settingsJSON.contains("\"gen\":2") })
            #expect(two.settingsJSON == #"{"gen":2,"id":"shellyplus1pm-441793ab3fb4"}"#)
            #expect(two.hardwareId == "441793AB3FB4")
            // The discovered settings make a working driver.
            _ = try factory.make(
                configuration: DriverConfiguration(deviceId: one.suggestedId, driver: "shelly", settingsJSON: one.settingsJSON))
            _ = try factory.make(
                configuration: DriverConfiguration(deviceId: two.suggestedId, driver: "shelly", settingsJSON: two.settingsJSON))
            await gen1.stop()
            await gen2.stop()
            await watcher.stop()
        }
    }

    @Test func discoveryIgnoresStrangers() {
        let f = ShellyDriverFactory()
        func d(_ topic: String, _ payload: String) -> DiscoveredDevice? {
            f.discover(DriverMQTTMessage(topic: topic, payload: Array(payload.utf8)))
        }
        // The reference announce, verbatim.
        #expect(
            d(
                "shellies/announce",
                #"{"id":"shellyplug-s-7AB1C2","model":"SHPLG-S","mac":"A4CF127AB1C2","ip":"192.168.1.50","new_fw":false,"fw_ver":"20230913-114008/v1.14.0-gcb84623"}"#
            )?.hardwareId == "A4CF127AB1C2")
        #expect(d("shellyplus1pm-441793ab3fb4/online", "false") == nil)
        #expect(d("tasmota_ABC123/online", "true") == nil)
        #expect(d("shellies/online", "true") == nil)
        #expect(d("shellies/announce", "garbage{") == nil)
        #expect(d("shellies/announce", #"{"model":"SHPLG-S"}"#) == nil)
        #expect(d("shellies/announce", #"{"id":"a/b"}"#) == nil)
        #expect(d("shellies/announce", #"{"id":42}"#) == nil)
        #expect(
            d("ShellyPro4PM-AABBCCDDEEFF/online", " TRUE\n")?.settingsJSON
                == #"{"channels":4,"gen":2,"id":"ShellyPro4PM-AABBCCDDEEFF"}"#)
        #expect(d("my-shelly/online", "true") == nil)
    }
}
