import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import Testing

@testable import Zigbee2MQTT

/// Payloads as Zigbee2MQTT publishes them, fed raw on a real broker.
///
/// Sources:
/// - `ts011fState`: a TuYa TS011F_plug_1 named `z1`, from the log in Koenkk/zigbee2mqtt#32463
///   ("[TS011F (TS011F_plug_1_1) / Zbeacon]", https://github.com/Koenkk/zigbee2mqtt/issues/32463):
///   `MQTT publish: topic 'zigbee2mqtt/z1', payload '...'`, verbatim.
/// - `{"state":"ON"}` (the ZNCZ02LM power plug) and `{"energy":6.65,"power":496}` (the SP600 plug):
///   Koenkk/zigbee2mqtt, test/extensions/receive.test.ts, commit 6835cbf5a73116aa4bfa097f2ad0dfb972018997
///   ("Should handle messages from Xiaomi router devices", "Should report correct energy and power
///   values for different versions of SP600").
/// - The TuYa TS0002 two-gang states on `zigbee2mqtt/0xa4c138a75a17fa91`: the MQTT capture in
///   Koenkk/zigbee2mqtt#12481 ("some problems went wrong with TUYA TS0002",
///   https://github.com/Koenkk/zigbee2mqtt/issues/12481), verbatim.
/// - Availability `{"state":"online"}` / `{"state":"offline"}`: Koenkk/zigbee2mqtt,
///   test/extensions/availability.test.ts, commit 6835cbf5a73116aa4bfa097f2ad0dfb972018997; the legacy
///   bare `online` / `offline` (also on `bridge/state`): lib/extension/availability.ts and
///   lib/controller.ts before commit 41ece365aac0f6d411ae3fc09eb6ac6ddb1b7759 ("Allow to configure
///   availablility payloads to be a JSON object"), the default with `legacy_availability_payload`.
@Suite("Zigbee2MQTT payloads on the wire")
struct Zigbee2MQTTPayloadTests {
    static let ts011fState =
        #"{"child_lock":"UNLOCK","countdown":0,"current":0,"energy":12.05,"identify":null,"indicator_mode":"off/on","last_seen":"2026-07-27T09:41:42+02:00","linkquality":43,"power":0,"power_outage_memory":"off","state":"OFF","switch_type_button":null,"update":{"installed_version":268449287,"latest_release_notes":null,"latest_source":null,"latest_version":268449287,"state":"idle"},"voltage":243}"#

    /// State and readings: nulls, nested objects and unknown keys ignored; energy kWh -> Wh.
    @Test func stateAndReadingsFromRealPayloads() async throws {
        try await withBroker { broker in
            let rig = try await Zigbee2MQTTRig.start(broker: broker, settings: #"{"friendly_name":"z1"}"#)
            let raw = try await RawClient(port: broker.port)
            try await raw.send("zigbee2mqtt/z1", Self.ts011fState)
            #expect(await rig.wait { $0.readings(.voltage) == [243] })
            #expect(rig.switchStates == [false])
            #expect(rig.readings(.energy) == [12_050])
            #expect(rig.readings(.power) == [0])
            #expect(rig.readings(.current) == [0])
            #expect(rig.availability == [true])
            #expect(rig.availabilityReasons == ["Zigbee2MQTT publishes zigbee2mqtt/z1"])
            try await raw.send("zigbee2mqtt/z1", #"{"energy":6.65,"power":496}"#)
            #expect(await rig.wait { $0.readings(.power) == [0, 496] })
            #expect(rig.readings(.energy) == [12_050, 6_650])
            try await raw.send("zigbee2mqtt/z1", #"{"state":"ON"}"#)
            #expect(await rig.wait { $0.switchStates == [false, true] })
            #expect(rig.driver.ignoredPayloads == 0)
            await raw.stop()
            await rig.stop()
        }
    }

    /// With `readings` set, only those are reported.
    @Test func readingsSettingPicksTheQuantities() async throws {
        try await withBroker { broker in
            let rig = try await Zigbee2MQTTRig.start(broker: broker, settings: #"{"friendly_name":"z1","readings":["energy"]}"#)
            let raw = try await RawClient(port: broker.port)
            try await raw.send("zigbee2mqtt/z1", Self.ts011fState)
            #expect(await rig.wait { $0.readings(.energy) == [12_050] })
            #expect(rig.allReadings == [12_050])
            await raw.stop()
            await rig.stop()
        }
    }

    /// A state the broker retained (Zigbee2MQTT's `retain` device option) is the last known relay
    /// state when the driver subscribes: reported as the switch state, never as readings stamped
    /// now, and no sign that the device is up.
    @Test func retainedStateIsTheLastKnownRelayOnly() async throws {
        try await withBroker { broker in
            let raw = try await RawClient(port: broker.port)
            try await raw.send("zigbee2mqtt/z1", Self.ts011fState, retain: true)
            let rig = try await Zigbee2MQTTRig.start(broker: broker, settings: #"{"friendly_name":"z1"}"#)
            #expect(await rig.wait { $0.switchStates == [false] })
            try await Task.sleep(for: .milliseconds(300))
            #expect(rig.allReadings.isEmpty)
            #expect(rig.availability.isEmpty)
            // The same payload live: readings.
            try await raw.send("zigbee2mqtt/z1", Self.ts011fState)
            #expect(await rig.wait { $0.readings(.energy) == [12_050] })
            #expect(rig.switchStates == [false])
            await raw.stop()
            await rig.stop()
        }
    }

    @Test func availabilityJSONAndLegacy() async throws {
        try await withBroker { broker in
            let rig = try await Zigbee2MQTTRig.start(broker: broker, settings: #"{"friendly_name":"living room/tv plug"}"#)
            let raw = try await RawClient(port: broker.port)
            let topic = "zigbee2mqtt/living room/tv plug/availability"
            try await raw.send(topic, #"{"state":"online"}"#, retain: true)
            #expect(await rig.wait { $0.availability == [true] })
            #expect(rig.availabilityReasons.last == #"Zigbee2MQTT reports "living room/tv plug" online"#)
            try await raw.send(topic, #"{"state":"offline"}"#, retain: true)
            #expect(await rig.wait { $0.availability == [true, false] })
            #expect(
                rig.availabilityReasons.last
                    == #"Zigbee2MQTT reports "living room/tv plug" offline (zigbee2mqtt/living room/tv plug/availability)"#)
            await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: true)) }
            try await raw.send(topic, "online", retain: true)
            #expect(await rig.wait { $0.availability == [true, false, true] })
            try await raw.send(topic, "offline", retain: true)
            #expect(await rig.wait { $0.availability == [true, false, true, false] })
            try await raw.send(topic, "online", retain: true)
            #expect(await rig.wait { $0.availability.count == 5 })
            // The bridge stopping (its last will) takes every device with it.
            try await raw.send("zigbee2mqtt/bridge/state", #"{"state":"offline"}"#, retain: true)
            #expect(await rig.wait { $0.availability.last == false })
            #expect(rig.availabilityReasons.last == "the Zigbee2MQTT bridge is offline (zigbee2mqtt/bridge/state)")
            let error = await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: true)) }
            #expect(error?.message.contains("bridge is offline") == true)
            try await raw.send("zigbee2mqtt/bridge/state", "online", retain: true)
            #expect(await rig.wait { $0.availability.last == true && $0.availability.count == 7 })
            #expect(rig.driver.ignoredPayloads == 0)
            await raw.stop()
            await rig.stop()
        }
    }

    /// Garbage on every topic is ignored with a reason naming the topic; the driver reads on.
    @Test func garbagePayloads() async throws {
        try await withBroker { broker in
            let rig = try await Zigbee2MQTTRig.start(broker: broker, settings: #"{"friendly_name":"z1"}"#)
            let raw = try await RawClient(port: broker.port)
            try await raw.send("zigbee2mqtt/z1", "garbage{")
            try await raw.send("zigbee2mqtt/z1", "[1,2]")
            try await raw.send("zigbee2mqtt/z1", bytes: Array(repeating: 0x7B, count: 70_000))
            try await raw.send("zigbee2mqtt/z1", bytes: [0xFF, 0xFE, 0x00])
            try await raw.send("zigbee2mqtt/z1", #"{"state":"maybe","power":"lots","energy":-5,"voltage":1e308,"current":null}"#)
            try await raw.send("zigbee2mqtt/z1/availability", "banana")
            try await raw.send("zigbee2mqtt/z1/availability", #"{"state":42}"#)
            try await raw.send("zigbee2mqtt/bridge/state", "")
            #expect(await rig.wait { $0.driver.ignoredPayloads == 7 })
            #expect(rig.driver.lastProblem == "ignored zigbee2mqtt/bridge/state: expected online or offline, got \"\"")
            #expect(rig.switchStates.isEmpty)
            #expect(rig.allReadings.isEmpty)
            try await raw.send("zigbee2mqtt/z1/availability", "{nope")
            #expect(await rig.wait { $0.driver.lastProblem?.hasPrefix("ignored zigbee2mqtt/z1/availability: expected") == true })
            // A readable state still reads.
            try await raw.send("zigbee2mqtt/z1", Self.ts011fState)
            #expect(await rig.wait { $0.switchStates == [false] })
            await raw.stop()
            await rig.stop()
        }
    }

    /// A command is `{"state":"ON"}` on `<base>/<name>/set`, not retained; the device's next state
    /// confirms it, even unchanged. At start the driver asks for the state on `/get`.
    @Test func commandPublishesTheSetPayload() async throws {
        try await withBroker { broker in
            let raw = try await RawClient(port: broker.port)
            try await raw.watch("zigbee2mqtt/living room/tv plug/+")
            let rig = try await Zigbee2MQTTRig.start(broker: broker, settings: #"{"friendly_name":"living room/tv plug"}"#)
            let get = await raw.waitFor("zigbee2mqtt/living room/tv plug/get")
            #expect(get.map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"state":""}"#])
            try await rig.driver.execute(.setSwitch(on: true))
            let set = await raw.waitFor("zigbee2mqtt/living room/tv plug/set")
            #expect(set.map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"state":"ON"}"#])
            #expect(set.first?.retain == false)
            try await raw.send("zigbee2mqtt/living room/tv plug", #"{"state":"ON"}"#)
            #expect(await rig.wait { $0.switchStates == [true] })
            // Unchanged, and still confirmed.
            try await rig.driver.execute(.setSwitch(on: true))
            try await raw.send("zigbee2mqtt/living room/tv plug", #"{"state":"ON"}"#)
            #expect(await rig.wait { $0.switchStates == [true, true] })
            // Without a command, an unchanged state is not reported again.
            try await raw.send("zigbee2mqtt/living room/tv plug", #"{"state":"ON"}"#)
            try await rig.driver.execute(.setSwitch(on: false))
            #expect(await raw.waitFor("zigbee2mqtt/living room/tv plug/set", count: 3).last?.payload == Array(#"{"state":"OFF"}"#.utf8))
            try await raw.send("zigbee2mqtt/living room/tv plug", #"{"state":"OFF"}"#)
            #expect(await rig.wait { $0.switchStates == [true, true, false] })
            await #expect(throws: DriverError.self) { try await rig.driver.execute(.writeActivations([])) }
            await raw.stop()
            await rig.stop()
            // Not running: refused.
            await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: true)) }
        }
    }

    /// One gang of a TuYa TS0002 reads and writes `state_l2` only.
    @Test func twoGangEndpoint() async throws {
        try await withBroker { broker in
            let raw = try await RawClient(port: broker.port)
            try await raw.watch("zigbee2mqtt/0xa4c138a75a17fa91/+")
            let rig = try await Zigbee2MQTTRig.start(broker: broker, settings: #"{"friendly_name":"0xa4c138a75a17fa91","endpoint":"l2"}"#)
            #expect(await raw.waitFor("zigbee2mqtt/0xa4c138a75a17fa91/get").first?.payload == Array(#"{"state_l2":""}"#.utf8))
            try await rig.driver.execute(.setSwitch(on: false))
            #expect(await raw.waitFor("zigbee2mqtt/0xa4c138a75a17fa91/set").first?.payload == Array(#"{"state_l2":"OFF"}"#.utf8))
            for payload in [
                #"{"linkquality":114,"state_l1":"OFF","state_l2":"ON"}"#, #"{"linkquality":114,"state_l1":"OFF","state_l2":"ON"}"#,
                #"{"linkquality":102,"state_l1":"OFF","state_l2":"OFF"}"#, #"{"linkquality":117,"state_l1":"ON","state_l2":"OFF"}"#
            ] {
                try await raw.send("zigbee2mqtt/0xa4c138a75a17fa91", payload)
            }
            // l2: on (a change), off (the command's confirmation); l1 switching on is not this gang's.
            #expect(await rig.wait { $0.switchStates == [true, false] })
            try await Task.sleep(for: .milliseconds(200))
            #expect(rig.switchStates == [true, false])
            await raw.stop()
            await rig.stop()
        }
    }
}
