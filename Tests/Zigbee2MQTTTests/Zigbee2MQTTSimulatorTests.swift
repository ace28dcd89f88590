import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import Testing
import Zigbee2MQTTSimulator

@testable import Zigbee2MQTT

@Suite("Zigbee2MQTT driver against the bridge simulator")
struct Zigbee2MQTTSimulatorTests {
    func simulator(_ broker: TestBroker, legacy: Bool = false) -> Zigbee2MQTTSimulator {
        Zigbee2MQTTSimulator(options: .init(port: broker.port, statusPeriod: 0.2, loadWatts: 1500, legacyAvailability: legacy))
    }

    @Test func meteredPlugSwitchesConfirmsAndMeters() async throws {
        try await withBroker { broker in
            let sim = simulator(broker)
            try await sim.start()
            let rig = try await Zigbee2MQTTRig.start(
                broker: broker, settings: #"{"friendly_name":"living room/metered plug","readings":["power","voltage","current","energy"]}"#
            )
            #expect(await rig.wait { $0.availability == [true] })
            #expect(rig.availabilityReasons.first?.contains("online") == true)
            #expect(await rig.wait { $0.switchStates == [false] })  // the answer to `get`, or a periodic state
            #expect(await rig.wait { $0.readings(.voltage).contains(230) })

            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { $0.switchStates.last == true })
            #expect(sim.relay("living room/metered plug"))
            #expect(await rig.wait { $0.readings(.power).contains(1500) })
            #expect(await rig.wait { $0.readings(.current).contains(6.522) })
            // Unchanged state, still confirmed.
            let before = rig.switchStates.count
            try await rig.driver.execute(.setSwitch(on: true))
            #expect(await rig.wait { $0.switchStates.count == before + 1 && $0.switchStates.last == true })
            // The counter (kWh on the wire) arrives in Wh and grows.
            #expect(await rig.wait { ($0.readings(.energy).max() ?? 0) > 12_050 })
            #expect(rig.readings(.energy).min() ?? 0 >= 12_050)

            // The button: a change.
            sim.press("living room/metered plug")
            #expect(await rig.wait { $0.switchStates.last == false })
            // The device drops off the mesh, then the bridge stops.
            sim.setOnline("living room/metered plug", false)
            #expect(await rig.wait { $0.availability.last == false })
            await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: true)) }
            sim.setOnline("living room/metered plug", true)
            #expect(await rig.wait { $0.availability.last == true })
            await sim.stop()
            #expect(await rig.wait { $0.availability.last == false })
            #expect(rig.availabilityReasons.last?.contains("bridge is offline") == true)
            #expect(rig.driver.ignoredPayloads == 0)
            await rig.stop()
        }
    }

    @Test func twoGangOutletsSwitchTheirOwnGang() async throws {
        try await withBroker { broker in
            let sim = simulator(broker, legacy: true)
            try await sim.start()
            let factory = Zigbee2MQTTDriverFactory()
            let outlets = try #require(
                try factory.outlets(
                    of: DriverConfiguration(
                        deviceId: "kitchen", driver: "zigbee2mqtt",
                        settingsJSON: #"{"friendly_name":"kitchen/switch","endpoints":["l1","l2"]}"#)))
            let l1 = try await Zigbee2MQTTRig.start(broker: broker, settings: outlets[0].settingsJSON)
            let l2 = try await Zigbee2MQTTRig.start(broker: broker, settings: outlets[1].settingsJSON)
            #expect(await l2.wait { $0.availability == [true] && $0.switchStates == [false] })
            try await l2.driver.execute(.setSwitch(on: true))
            #expect(await l2.wait { $0.switchStates == [false, true] })
            #expect(sim.relay("kitchen/switch", endpoint: "l2"))
            #expect(!sim.relay("kitchen/switch", endpoint: "l1"))
            try await Task.sleep(for: .milliseconds(200))
            #expect(l1.switchStates == [false])
            try await l1.driver.execute(.setSwitch(on: true))
            #expect(await l1.wait { $0.switchStates == [false, true] })
            #expect(l2.switchStates == [false, true])
            // Legacy availability words.
            sim.setOnline("kitchen/switch", false)
            #expect(await l1.wait { $0.availability.last == false })
            #expect(await l2.wait { $0.availability.last == false })
            await l1.stop()
            await l2.stop()
            await sim.stop()
        }
    }

    /// The simulator's retained `bridge/devices`, read as the hub's discovery reads it.
    @Test func discoveryFromTheSimulatedBridge() async throws {
        try await withBroker { broker in
            let sim = simulator(broker)
            try await sim.start()
            let raw = try await RawClient(port: broker.port)
            let factory = Zigbee2MQTTDriverFactory()
            for filter in factory.discoveryFilters { try await raw.watch(filter) }
            let list = try #require(await raw.waitFor("zigbee2mqtt/bridge/devices").first)
            #expect(list.retain)
            let found = factory.discoverAll(DriverMQTTMessage(topic: list.topic, payload: list.payload, retained: list.retain))
            #expect(
                found.map(\.settingsJSON) == [
                    #"{"friendly_name":"living room/metered plug","readings":["power","voltage","current","energy"]}"#,
                    #"{"friendly_name":"hall plug"}"#,
                    #"{"friendly_name":"kitchen/switch","endpoints":["l1","l2"]}"#
                ])
            #expect(found.map(\.suggestedId) == ["living-room-metered-plug", "hall-plug", "kitchen-switch"])
            #expect(found.map(\.hardwareId) == ["0xa4c1389f9e792b7f", "0x000d6ffffe1c2b3a", "0xa4c138a75a17fa91"])
            for device in found {
                let configuration = DriverConfiguration(
                    deviceId: device.suggestedId, driver: "zigbee2mqtt", settingsJSON: device.settingsJSON)
                if let outlets = try factory.outlets(of: configuration) {
                    for outlet in outlets {
                        _ = try factory.make(configuration: .init(deviceId: "o", driver: "zigbee2mqtt", settingsJSON: outlet.settingsJSON))
                    }
                } else {
                    _ = try factory.make(configuration: configuration)
                }
            }
            await raw.stop()
            await sim.stop()
        }
    }
}
