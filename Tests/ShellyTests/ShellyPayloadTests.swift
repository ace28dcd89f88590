import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import Testing

@testable import Shelly

/// Payloads fed raw on a real broker: the reference captures verbatim, and hostile ones.
@Suite("Shelly payloads on the wire")
struct ShellyPayloadTests {
    static let gen1 = "shellyplug-s-7AB1C2"
    static let gen2 = "shellyplus1pm-441793ab3fb4"

    @Test func gen1ReferencePayloads() async throws {
        try await withBroker { broker in
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(Self.gen1)","gen":1}"#)
            let raw = try await RawClient(port: broker.port)
            let base = "shellies/\(Self.gen1)"
            try await raw.send("\(base)/online", "true", retain: true)
            try await raw.send("\(base)/relay/0", "on")
            try await raw.send("\(base)/relay/0/power", "52.41")
            try await raw.send("\(base)/relay/0/energy", "1234")
            try await raw.send("\(base)/relay/1", "off")  // another channel: not ours
            try await raw.send("\(base)/relay/0", "overpower")  // protection tripped: off
            try await raw.send("\(base)/online", "false")
            #expect(await rig.wait { $0.availability == [true, false] })
            #expect(rig.switchStates == [true, false])
            #expect(rig.readings(.power) == [52.41])
            #expect(rig.readings(.energy).count == 1)
            #expect(abs((rig.readings(.energy).first ?? 0) - 1234.0 / 60) < 1e-9)
            await raw.stop()
            await rig.stop()
        }
    }

    /// A Gen4 device (`"gen":4` in its `Shelly.GetDeviceInfo`, e.g. the Shelly 1 Mini Gen4) under a
    /// custom two-level MQTT prefix: it speaks the Gen2 RPC on `<prefix>/...`. The status is the
    /// Switch component's of a model without a meter (the Gen2+ API's `Switch.GetStatus`: `id`,
    /// `source`, `output`, `temperature`, no `apower`). Failed before: the prefix was refused as
    /// "without /" and `gen` 4 as out of range.
    @Test func gen4UnderATwoLevelPrefix() async throws {
        try await withBroker { broker in
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"shellies/mini4","gen":4}"#)
            let raw = try await RawClient(port: broker.port)
            try await raw.send("shellies/mini4/online", "true")
            try await raw.send(
                "shellies/mini4/status/switch:0", #"{"id":0,"source":"init","output":true,"temperature":{"tC":43.5,"tF":110.3}}"#)
            #expect(await rig.wait { $0.availability == [true] && $0.switchStates == [true] })
            #expect(rig.readings(.power).isEmpty)
            await raw.stop()
            await rig.stop()
        }
    }

    @Test func gen2ReferencePayloadsAndMerge() async throws {
        try await withBroker { broker in
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(Self.gen2)"}"#)
            let raw = try await RawClient(port: broker.port)
            let p = Self.gen2
            try await raw.send("\(p)/online", "true")
            try await raw.send(
                "\(p)/status/switch:0",
                #"{"id":0,"source":"loopback","output":true,"apower":10.7,"voltage":120.7,"current":0.133,"aenergy":{"total":46791.262,"by_minute":[73.921,177.749,177.749],"minute_ts":1682952864},"temperature":{"tC":47.9,"tF":118.3}}"#
            )
            #expect(await rig.wait { $0.readings(.energy) == [46791.262] })
            #expect(rig.switchStates == [true])
            #expect(rig.readings(.power) == [10.7])
            #expect(rig.readings(.voltage) == [120.7])
            #expect(rig.readings(.current) == [0.133])
            // The reference notification: only the temperature changed.
            try await raw.send(
                "\(p)/events/rpc",
                #"{"src":"shellyplus1-441793ab3fb4","dst":"shellyplus1-441793ab3fb4/events","method":"NotifyStatus","params":{"ts":1708179956.30,"switch:0":{"id":0,"temperature":{"tC":37.67,"tF":99.81}}}}"#
            )
            #expect(await rig.wait { $0.driver.mergedStatus.temperatureC == 37.67 })
            let merged = rig.driver.mergedStatus
            #expect(merged.output == true && merged.apower == 10.7 && merged.energyTotal == 46791.262 && merged.voltage == 120.7)
            #expect(rig.switchStates == [true])
            #expect(rig.readings(.power) == [10.7])
            // Partials: apower only, then output only.
            try await raw.send(
                "\(p)/events/rpc",
                #"{"src":"x","dst":"y","method":"NotifyStatus","params":{"ts":1708179957.1,"switch:0":{"id":0,"apower":0.0,"current":0}}}"#)
            try await raw.send(
                "\(p)/events/rpc",
                #"{"src":"x","dst":"y","method":"NotifyStatus","params":{"ts":1708179957.2,"switch:0":{"id":0,"output":false,"source":"button"}}}"#
            )
            #expect(await rig.wait { $0.switchStates == [true, false] })
            #expect(rig.readings(.power) == [10.7, 0])
            #expect(rig.driver.mergedStatus.energyTotal == 46791.262)
            // Another switch's notification is not ours.
            try await raw.send("\(p)/events/rpc", #"{"method":"NotifyStatus","params":{"switch:1":{"id":1,"output":true,"apower":99}}}"#)
            try await raw.send("\(p)/status/switch:0", #"{"id":0,"output":false,"apower":0.5}"#)
            #expect(await rig.wait { $0.readings(.power) == [10.7, 0, 0.5] })
            #expect(rig.switchStates == [true, false])
            #expect(rig.failures.isEmpty)
            await raw.stop()
            await rig.stop()
        }
    }

    @Test func gen2RPCErrorReplyAndRequestFormat() async throws {
        try await withBroker { broker in
            let raw = try await RawClient(port: broker.port)
            try raw.client.subscribe("\(Self.gen2)/rpc", qos: 1)
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(Self.gen2)"}"#)
            try await rig.driver.execute(.setSwitch(on: true))
            // A fake device: answers Switch.Set with an error, as Gen2 devices do.
            var answered = false
            let deadline = ContinuousClock.now + .seconds(10)
            for await m in raw.client.messages {
                #expect(!m.retain)
                guard let request = try? JSONValue.parse(m.payload),
                    let src = request["src"]?.stringValue, let id = request["id"]?.doubleValue.map({ Int($0) })
                else { continue }
                if request["method"] == "Switch.Set" {
                    #expect(request["params"]?["on"] == true)
                    #expect(request["params"]?["id"] == 0)
                    // Keys sorted and slashes unescaped, as the device's own clients send them.
                    #expect(
                        String(decoding: m.payload, as: UTF8.self).hasPrefix(
                            #"{"id":\#(id),"method":"Switch.Set","params":{"id":0,"on":true},"src":"hub-shelly/"#))
                    #expect(src.hasPrefix("hub-shelly/\(Self.gen2)"))
                    try await raw.send(
                        "\(src)/rpc",
                        #"{"id":\#(id),"src":"\#(Self.gen2)","dst":"\#(src)","error":{"code":-114,"message":"Overtemperature protection active"}}"#
                    )
                    answered = true
                    break
                }
                if ContinuousClock.now > deadline { break }
            }
            #expect(answered)
            #expect(await rig.wait { $0.failures.count == 1 })
            #expect(rig.failures.first?.contains("Overtemperature") == true)
            #expect(rig.switchStates.isEmpty)
            await raw.stop()
            await rig.stop()
        }
    }

    @Test func hostileGen1Payloads() async throws {
        try await withBroker { broker in
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(Self.gen1)","gen":1}"#)
            let raw = try await RawClient(port: broker.port)
            let base = "shellies/\(Self.gen1)/relay/0"
            for text in ["", "maybe", "onn", String(repeating: "o", count: 100_000), "{\"on\":true}"] {
                try await raw.send(base, text)
            }
            for text in ["", "abc", "NaN", "nan", "inf", "-inf", "1e400", "-5e9", "1e12", "0x10", "12,5", "{}", "[1]", "true", "  "] {
                try await raw.send("\(base)/power", text)
            }
            for text in ["", "-5", "-0.1", "1e400", "9e99", "xyz", "1e13"] {
                try await raw.send("\(base)/energy", text)
            }
            try await raw.send("\(base)/power", bytes: [0xFF, 0xFE, 0x00, 0x31])
            try await raw.send("shellies/\(Self.gen1)/online", "perhaps")
            // Odd case and whitespace are still real values.
            try await raw.send(base, " ON\n")
            try await raw.send("\(base)/power", " 7.5 ")
            try await raw.send("\(base)/energy", "600")
            #expect(await rig.wait { $0.readings(.energy) == [10] })
            #expect(rig.switchStates == [true])
            #expect(rig.readings(.power) == [7.5])
            #expect(rig.observations.allSatisfy { if case .commandFailed = $0 { return false } else { return true } })
            await raw.stop()
            await rig.stop()
        }
    }

    @Test func hostileGen2Payloads() async throws {
        try await withBroker { broker in
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(Self.gen2)"}"#)
            let raw = try await RawClient(port: broker.port)
            let status = "\(Self.gen2)/status/switch:0"
            let events = "\(Self.gen2)/events/rpc"
            let reply = "hub-shelly/\(Self.gen2)/ch0/rpc"
            let hostile: [(String, String)] = [
                (status, "garbage{"), (status, ""), (status, "[1,2,3]"), (status, "null"), (status, "42"),
                (status, #"{"id":0,"output":"maybe","apower":"lots","voltage":1e308,"current":-1e9,"aenergy":{"total":-5}}"#),
                (status, #"{"id":0,"apower":1e400}"#),
                (status, #"{"id":0,"apower":null,"voltage":[230],"aenergy":12,"temperature":"hot"}"#),
                (status, #"{"id":0,"aenergy":{"total":"NaN"},"apower":"Infinity","voltage":"0x100"}"#),
                (status, #"{"id":0,"output":2,"apower":true}"#),
                (status, "{\"id\":0,\"apower\":" + String(repeating: "9", count: 400) + "}"),
                (status, "{\"pad\":\"" + String(repeating: "x", count: 100_000) + "\",\"apower\":5}"),
                (events, "not json"), (events, #"{"method":"NotifyStatus"}"#), (events, #"{"method":"NotifyStatus","params":[1]}"#),
                (events, #"{"method":"NotifyStatus","params":{"switch:0":"on"}}"#),
                (events, #"{"method":"NotifyEvent","params":{"switch:0":{"id":0,"output":true,"apower":99}}}"#),
                (events, #"{"method":42,"params":{"switch:0":{"output":true}}}"#),
                (reply, #"{"id":"abc","error":{"code":1,"message":"stray"}}"#), (reply, #"{"id":123456789012,"result":{"output":true}}"#),
                (reply, "]["), (reply, #"{"id":1e300,"error":"x"}"#),
                ("\(Self.gen2)/online", "TRUE?")
            ]
            for (topic, text) in hostile { try await raw.send(topic, text) }
            try await raw.send(status, bytes: [0x7B, 0xFF, 0xFE, 0x7D])
            // Numbers as strings and odd case are real values.
            try await raw.send(
                status,
                #"{"id":0,"output":"True","apower":"12.5","voltage":"229.9","current":"0.054","aenergy":{"total":"100.5"},"extra":{"deep":[1,{"x":null}]}}"#
            )
            #expect(await rig.wait { $0.readings(.energy) == [100.5] })
            #expect(rig.switchStates == [true])
            #expect(rig.readings(.power) == [12.5])
            #expect(rig.readings(.voltage) == [229.9])
            #expect(rig.readings(.current) == [0.054])
            #expect(rig.failures.isEmpty)
            await raw.stop()
            await rig.stop()
        }
    }
}

extension ShellyPayloadTests {
    /// Gen1 `update` answers with `shellies/<id>/info`; its relay state confirms an unchanged command.
    @Test func gen1InfoConfirmsUnchangedCommand() async throws {
        try await withBroker { broker in
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(Self.gen1)","gen":1}"#)
            let raw = try await RawClient(port: broker.port)
            let base = "shellies/\(Self.gen1)"
            try await raw.send("\(base)/relay/0", "on")
            #expect(await rig.wait { $0.switchStates == [true] })
            try raw.client.subscribe("\(base)/command", qos: 1)
            try raw.client.subscribe("\(base)/relay/0/command", qos: 1)
            try await Task.sleep(for: .milliseconds(100))
            try await rig.driver.execute(.setSwitch(on: true))
            var sawCommand = false, sawUpdate = false
            let deadline = ContinuousClock.now + .seconds(10)
            for await m in raw.client.messages {
                let text = String(decoding: m.payload, as: UTF8.self)
                if m.topic == "\(base)/relay/0/command" && text == "on" { sawCommand = true }
                if m.topic == "\(base)/command" && text == "update" { sawUpdate = true }
                if (sawCommand && sawUpdate) || ContinuousClock.now > deadline { break }
            }
            #expect(sawCommand && sawUpdate)
            try await raw.send(
                "\(base)/info",
                #"{"wifi_sta":{"connected":true,"ssid":"x","ip":"192.168.1.50","rssi":-60},"relays":[{"ison":true,"has_timer":false,"timer_started":0,"timer_duration":0,"timer_remaining":0,"overpower":false,"source":"mqtt"}],"meters":[{"power":0.00,"overpower":0.00,"is_valid":true,"timestamp":1682952864,"counters":[0.000,0.000,0.000],"total":0}]}"#
            )
            #expect(await rig.wait { $0.switchStates == [true, true] })
            await raw.stop()
            await rig.stop()
        }
    }
}
