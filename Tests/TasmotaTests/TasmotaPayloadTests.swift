import DriverAPI
import Foundation
import Testing

@testable import Tasmota

/// Payloads published raw on a real broker, as devices send them, and hostile ones.
@Suite("Tasmota reference and hostile payloads on a real broker")
struct TasmotaPayloadTests {
    @Test func referencePayloadsVerbatim() async throws {
        let rig = try await Rig.make(settings: #"{"topic":"tasmota_A1B2C3"}"#) { _, raw in
            try await raw.publishAndWait("tele/tasmota_A1B2C3/LWT", Array("Online".utf8), qos: 1, retain: true, timeout: .seconds(10))
        }
        #expect(await eventually { rig.availabilities.count == 1 })
        #expect(rig.availabilities.first?.0 == true)
        #expect(rig.availabilities.first?.1 == "Tasmota LWT Online")

        try await rig.publish(
            "tele/tasmota_A1B2C3/STATE",
            #"{"Time":"2021-06-27T15:03:44+02:00","Uptime":"0T00:00:13","UptimeSec":13,"Heap":28,"POWER":"ON","Wifi":{"RSSI":86,"Signal":-57}}"#
        )
        #expect(await eventually { rig.switchStates == [true] })

        try await rig.publish(
            "tele/tasmota_A1B2C3/SENSOR",
            #"{"Time":"2018-02-15T17:37:10","ENERGY":{"TotalStartTime":"2018-11-14T18:39:40","Total":6.294,"Yesterday":5.340,"Today":0.954,"Period":217,"Power":2635,"ApparentPower":2650,"ReactivePower":282,"Factor":0.99,"Voltage":227,"Current":11.661}}"#
        )
        #expect(await eventually { rig.readings.count == 4 })
        let r = Dictionary(rig.readings, uniquingKeysWith: { a, _ in a })
        #expect(r[.power] == 2635)
        #expect(r[.voltage] == 227)
        #expect(near(r[.current] ?? 0, 11.661))
        #expect(near(r[.energy] ?? 0, 6294))
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        for case .reading(_, _, let at) in rig.observations { #expect(abs(at - now) < 60_000_000) }

        try await rig.publish("stat/tasmota_A1B2C3/RESULT", #"{"POWER":"OFF"}"#)
        #expect(await eventually { rig.switchStates == [true, false] })
        try await rig.publish("stat/tasmota_A1B2C3/POWER", "ON")
        #expect(await eventually { rig.switchStates == [true, false, true] })
        try await rig.publish("stat/tasmota_A1B2C3/RESULT", #"{"POWER1":"OFF"}"#)
        #expect(await eventually { rig.switchStates == [true, false, true, false] })
        // Unchanged state without a command: not reported again.
        try await rig.publish("tele/tasmota_A1B2C3/STATE", #"{"POWER":"OFF"}"#)
        try await rig.publish("tele/tasmota_A1B2C3/LWT", "offline", retain: true)
        #expect(await eventually { rig.availabilities.map(\.0) == [true, false] })
        #expect(rig.availabilities.last?.1 == "Tasmota reports Offline (last will)")
        #expect(rig.switchStates == [true, false, true, false])
        #expect(rig.driver.ignoredPayloads == 0)
        await rig.shutdown()
    }

    @Test func multiChannelArraySensor() async throws {
        let rig = try await Rig.make(settings: #"{"topic":"meter","energy_channel":1}"#)
        try await rig.publish("tele/meter/LWT", "Online", retain: true)
        #expect(await eventually { rig.availabilities.count == 1 })
        try await rig.publish(
            "tele/meter/SENSOR",
            #"{"Time":"2021-01-03T12:00:00","ENERGY":{"TotalStartTime":"2020-12-20T10:00:00","Total":[2.813,0.254],"Yesterday":[0.1,0.02],"Today":[0.5,"0.1"],"Power":[120,"35"],"ApparentPower":[121,40],"ReactivePower":[10,19],"Factor":[0.99,0.88],"Voltage":"227","Current":[0.53,0.176]}}"#
        )
        #expect(await eventually { rig.readings.count == 4 })
        let r = Dictionary(rig.readings, uniquingKeysWith: { a, _ in a })
        #expect(near(r[.energy] ?? 0, 254))
        #expect(r[.power] == 35)
        #expect(r[.voltage] == 227)
        #expect(near(r[.current] ?? 0, 0.176))
        await rig.shutdown()
    }

    @Test func hostilePayloadsNeverBecomeReadings() async throws {
        let rig = try await Rig.make(settings: #"{"topic":"evil"}"#)
        try await rig.publish("tele/evil/LWT", "Online", retain: true)
        #expect(await eventually { rig.availabilities.count == 1 })

        var junk = [UInt8](repeating: 0, count: 64 * 1024)
        var x: UInt32 = 2_463_534_242
        for i in junk.indices { x ^= x << 13; x ^= x >> 17; x ^= x << 5; junk[i] = UInt8(truncatingIfNeeded: x) }
        let nested = Array(String(repeating: "[", count: 64 * 1024).utf8)
        let bigObject = Array(("{\"ENERGY\":{\"Power\":\"" + String(repeating: "9", count: 64 * 1024) + "\"}}").utf8)
        let texts = [
            "{not json", "", "null", "42", "[1,2]", "\"ON\"",
            #"{"ENERGY":{"Power":1e308,"Voltage":1e308,"Current":1e308,"Total":1e308}}"#,
            #"{"ENERGY":{"Power":1e400,"Total":-1e400}}"#,
            #"{"ENERGY":{"Power":-20,"Voltage":"abc","Current":-1,"Total":"-0.5"}}"#,
            #"{"ENERGY":{"Power":150000,"Voltage":"NaN","Current":"Infinity","Total":"0x10"}}"#,
            #"{"ENERGY":{"Power":true,"Voltage":null,"Current":{},"Total":[]}}"#,
            #"{"ENERGY":[1,2,3]}"#, #"{"ENERGY":"lots"}"#, #"{"ENERGY":{"Power":"99999999999999999999999999999"}}"#
        ]
        for text in texts { try await rig.publish("tele/evil/SENSOR", text) }
        for payload in [junk, nested, bigObject, [0xFF, 0xFE, 0x7B, 0x7D]] { try await rig.publish("tele/evil/SENSOR", payload) }
        for payload in [junk, nested, Array(#"{"POWER":"MAYBE"}"#.utf8), Array(#"{"POWER":17}"#.utf8), Array("{\"POWER\"".utf8)] {
            try await rig.publish("tele/evil/STATE", payload)
            try await rig.publish("stat/evil/RESULT", payload)
        }
        for payload in [junk, Array("BANANA".utf8), Array("TOGGLE".utf8), []] { try await rig.publish("stat/evil/POWER", payload) }
        for payload in [junk, Array("Sleeping".utf8), []] { try await rig.publish("tele/evil/LWT", payload) }
        try await rig.publish("tele/evil/LWT", "Online", retain: true)  // cleanup of the retained junk

        // A sentinel: once it is read, everything before it has been handled.
        try await rig.publish("tele/evil/SENSOR", #"{"ENERGY":{"Power":42}}"#)
        #expect(await eventually { rig.readings.contains { $0.0 == .power } })
        #expect(rig.readings.map(\.0) == [.power])
        #expect(rig.readings.first?.1 == 42)
        #expect(rig.switchStates.isEmpty)
        #expect(rig.availabilities.map(\.0) == [true])
        #expect(rig.driver.ignoredPayloads >= 20)

        // Still working afterwards.
        try await rig.publish("stat/evil/POWER", "ON")
        #expect(await eventually { rig.switchStates == [true] })
        await rig.shutdown()
    }
}
