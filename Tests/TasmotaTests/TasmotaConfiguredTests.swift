import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import TasmotaSimulator
import Testing

@testable import Tasmota

/// Tasmota as users configure it: a custom FullTopic and prefixes announced in the retained
/// `tasmota/discovery/<MAC>/config`, StateText words, multi-relay devices as power strips, and
/// multi-channel meters whose `Total` is summed unless `SetOption129 1`.
///
/// Payload sources (bytes copied, cited beside each):
/// - arendst/Tasmota `tasmota/tasmota_xdrv_driver/xdrv_12_discovery.ino` at
///   080cdb4f0d7c658e510706e8cbce6b65c4475839 (`TasDiscoverMessage`: the announcement's fields and
///   order; an empty retained payload when discovery is off);
/// - arendst/Tasmota#9903 (a Sonoff 4CH Pro's announcement, as Home Assistant logged it);
/// - home-assistant/core#42343 (a 4CH Pro's announcement, MAC redacted by its poster);
/// - home-assistant/core `tests/components/tasmota/test_common.py` at
///   007f265768b6ae284a1ae3af61c3f4c8bc41c413 (`DEFAULT_CONFIG`, published there with `json.dumps`);
/// - arendst/Tasmota#6160 (a Shelly 2.5's `tele/shelly25/SENSOR`, summed `Total`);
/// - GaryMilne/Hubitat-Tasmota `Universal_Multi_Sensor.groovy` at
///   f8375835c4e094322af373febf8819c21deefd26, line 392 (a two-channel `STATUS 8` with `Total` per channel);
/// - arendst/Tasmota#3656 (arendst's console with `StateText1 1`, `StateText2 0`, `SetOption4 1`).
@Suite("Tasmota as configured: announcements, StateText, strips, meter channels")
struct TasmotaConfiguredTests {
    let factory = TasmotaDriverFactory()

    func config(_ mac: String, _ text: String) -> DriverMQTTMessage {
        DriverMQTTMessage(topic: "tasmota/discovery/\(mac)/config", payload: Array(text.utf8), retained: true)
    }

    func object(_ json: String) throws -> JSONValue { try JSONValue.parse(Array(json.utf8)) }

    // MARK: Discovery from the announcement

    /// arendst/Tasmota#9903 (xefil, 2020-11-18): a Sonoff 4CH Pro with FullTopic
    /// `XefilHome/%topic%/` (no `%prefix%`) and four plain relays, as Home Assistant received it on
    /// `tasmota/discovery/C82B96D04DF5/config`. Invisible to `tele/+/LWT` (its last will is
    /// `XefilHome/GARDEN02/LWT`); before, no announcement was read at all.
    @Test func announcedStripWithCustomFullTopic() throws {
        let text =
            #"{"ip":"192.168.3.30","dn":"GARDEN02","fn":["RELAY02-01","RELAY02-02","RELAY02-03","RELAY02-04",null,null,null,null],"hn":"GARDEN02-3573","mac":"C82B96D04DF5","md":"Sonoff 4CH Pro","ty":0,"if":0,"ofln":"Offline","onln":"Online","state":["OFF","ON","TOGGLE","HOLD"],"sw":"9.1.0","t":"GARDEN02","ft":"XefilHome/%topic%/","tp":["cmnd","stat","tele"],"rl":[1,1,1,1,0,0,0,0],"swc":[-1,-1,-1,-1,-1,-1,-1,-1],"swn":[null,null,null,null,null,null,null,null],"btn":[0,0,0,0],"so":{"4":0,"11":0,"13":0,"17":1,"20":0,"30":0,"68":0,"73":0,"82":0,"114":0},"lk":1,"lt_st":0,"ver":1}"#
        #expect(factory.discoveryFilters.contains("tasmota/discovery/+/config"))
        let found = try #require(factory.discover(config("C82B96D04DF5", text)))
        #expect(found.suggestedId == "GARDEN02")
        #expect(found.driver == "tasmota")
        #expect(found.name == "GARDEN02", "a strip is named by its device name, its relays by their friendly names")
        #expect(found.hardwareId == "C82B96D04DF5")
        #expect(try object(found.settingsJSON) == object(#"{"topic":"GARDEN02","full_topic":"XefilHome/%topic%/","relays":4}"#))

        // The offered settings drive the device where the firmware puts it (GetTopic_P: commands
        // get /%prefix% appended, the device's own messages have no prefix).
        let outlets = try #require(
            try factory.outlets(of: DriverConfiguration(deviceId: "garden", driver: "tasmota", settingsJSON: found.settingsJSON)))
        #expect(outlets.map(\.number) == [1, 2, 3, 4])
        let third = try #require(
            try factory.make(
                configuration: DriverConfiguration(deviceId: "garden-3", driver: "tasmota", settingsJSON: outlets[2].settingsJSON))
                as? TasmotaDriver)
        #expect(third.topics.commandTopic == "XefilHome/GARDEN02/cmnd/POWER3")
        #expect(third.topics.statPowerTopics == ["XefilHome/GARDEN02/POWER3"])
        #expect(third.topics.resultTopic == "XefilHome/GARDEN02/RESULT")
        #expect(third.topics.lwtTopic == "XefilHome/GARDEN02/LWT")
        #expect(third.capabilities.mqttScope == ["XefilHome/GARDEN02/cmnd/#", "XefilHome/GARDEN02/#"])
    }

    /// home-assistant/core tests/components/tasmota/test_common.py `DEFAULT_CONFIG` (commit
    /// 007f265768b6ae284a1ae3af61c3f4c8bc41c413), as `json.dumps` publishes it: FullTopic
    /// `%topic%/%prefix%/`, MAC 00000049A3BC, no plain relay (`rl` all 0), and with the first relay
    /// plain as the switch tests there set it (`config["rl"][0] = 1`).
    @Test func announcedPlugWithTopicFirstFullTopic() throws {
        let base =
            #"{"ip": "192.168.15.10", "dn": "Tasmota", "fn": ["Test", "Beer", "Milk", "Four", null], "hn": "tasmota_49A3BC-0956", "if": 0, "lk": 1, "mac": "00000049A3BC", "md": "Sonoff Basic", "ofln": "Offline", "onln": "Online", "state": ["OFF", "ON", "TOGGLE", "HOLD"], "sw": "8.4.0.2", "swn": [null, null, null, null, null], "t": "tasmota_49A3BC", "ft": "%topic%/%prefix%/", "tp": ["cmnd", "stat", "tele"], "rl": [0, 0, 0, 0, 0, 0, 0, 0], "swc": [-1, -1, -1, -1, -1, -1, -1, -1], "btn": [0, 0, 0, 0], "so": {"4": 0, "11": 0, "13": 0, "17": 1, "20": 0, "30": 0, "68": 0, "73": 0, "82": 0, "114": 0}, "ty": 0, "lt_st": 0, "ver": 1}"#
        let withRelay = base.replacingOccurrences(of: #""rl": [0, 0, 0"#, with: #""rl": [1, 0, 0"#)
        for text in [base, withRelay] {
            let found = try #require(factory.discover(config("00000049A3BC", text)))
            #expect(found.suggestedId == "tasmota_49A3BC")
            #expect(found.name == "Test")
            #expect(found.hardwareId == "00000049A3BC")
            #expect(try object(found.settingsJSON) == object(#"{"topic":"tasmota_49A3BC","full_topic":"%topic%/%prefix%/"}"#))
            let driver = try #require(
                try factory.make(configuration: DriverConfiguration(deviceId: "p", driver: "tasmota", settingsJSON: found.settingsJSON))
                    as? TasmotaDriver)
            #expect(driver.topics.commandTopic == "tasmota_49A3BC/cmnd/POWER")
            #expect(driver.topics.lwtTopic == "tasmota_49A3BC/tele/LWT")
            #expect(try factory.outlets(of: DriverConfiguration(deviceId: "p", driver: "tasmota", settingsJSON: found.settingsJSON)) == nil)
        }
    }

    /// The announcement carries the StateText words (`state`, written by `TasDiscoverMessage` from
    /// `GetStateText(0...3)`), custom prefixes (`tp`) and the `%hostname%`/`%id%` tokens the firmware
    /// fills in; the offered settings carry them. Composed from #9903's announcement with only
    /// these members changed (`StateText1 0`, `StateText2 1` as in jneilliii/OctoPrint-TasmotaMQTT#36;
    /// prefixes and FullTopic as the `Prefix1..3` and `FullTopic` commands set them).
    @Test func announcementsCarryStateTextPrefixesAndTokens() throws {
        let real =
            #"{"ip":"192.168.3.30","dn":"GARDEN02","fn":["RELAY02-01","RELAY02-02","RELAY02-03","RELAY02-04",null,null,null,null],"hn":"GARDEN02-3573","mac":"C82B96D04DF5","md":"Sonoff 4CH Pro","ty":0,"if":0,"ofln":"Offline","onln":"Online","state":["OFF","ON","TOGGLE","HOLD"],"sw":"9.1.0","t":"GARDEN02","ft":"XefilHome/%topic%/","tp":["cmnd","stat","tele"],"rl":[1,1,1,1,0,0,0,0],"swc":[-1,-1,-1,-1,-1,-1,-1,-1],"swn":[null,null,null,null,null,null,null,null],"btn":[0,0,0,0],"so":{"4":0,"11":0,"13":0,"17":1,"20":0,"30":0,"68":0,"73":0,"82":0,"114":0},"lk":1,"lt_st":0,"ver":1}"#
        let words = real.replacingOccurrences(of: #""state":["OFF","ON","TOGGLE","HOLD"]"#, with: #""state":["0","1","TOGGLE","HOLD"]"#)
        let found = try #require(factory.discover(config("C82B96D04DF5", words)))
        #expect(
            try object(found.settingsJSON)
                == object(#"{"topic":"GARDEN02","full_topic":"XefilHome/%topic%/","relays":4,"state_text":["0","1","TOGGLE","HOLD"]}"#))

        let tokens = real.replacingOccurrences(of: #""ft":"XefilHome/%topic%/""#, with: #""ft":"%prefix%/%hostname%/%id%/""#)
            .replacingOccurrences(of: #""tp":["cmnd","stat","tele"]"#, with: #""tp":["befehl","status","tele2"]"#)
            .replacingOccurrences(of: #""rl":[1,1,1,1,0,0,0,0]"#, with: #""rl":[2,1,0,0,0,0,0,0]"#)
        let resolved = try #require(factory.discover(config("C82B96D04DF5", tokens)))
        #expect(
            try object(resolved.settingsJSON)
                == object(
                    #"{"topic":"GARDEN02","full_topic":"%prefix%/GARDEN02-3573/C82B96D04DF5/","prefixes":["befehl","status","tele2"],"relays":2,"relay":2}"#
                ))
        #expect(resolved.name == "RELAY02-01")
        let driver = try #require(
            try factory.make(configuration: DriverConfiguration(deviceId: "g", driver: "tasmota", settingsJSON: resolved.settingsJSON))
                as? TasmotaDriver)
        #expect(driver.topics.commandTopic == "befehl/GARDEN02-3573/C82B96D04DF5/POWER2")
        #expect(driver.topics.lwtTopic == "tele2/GARDEN02-3573/C82B96D04DF5/LWT")
    }

    /// Garbage and hostile announcements offer nothing and trap nowhere: home-assistant/core issue
    /// #42343's announcement with its poster's redacted MAC (`zzzzzzxxxxxx`, topic
    /// `tasmota/discovery/macadr/config`), the empty retained payload of `SetOption19 1`, broken
    /// JSON, wrong types, unusable topics and tokens, oversized and deeply nested payloads.
    @Test func garbageAnnouncementsOfferNothing() {
        let redacted =
            #"{"ip":"10.10.x.y","dn":"Sonoff4CHProR2","fn":["Tasmota","Tasmota2","Tasmota3","Tasmota4",null,null,null,null],"hn":"tasmota_xxxxxx-yyyy","mac":"zzzzzzxxxxxx","md":"Sonoff 4CH Pro","ty":0,"ofln":"Offline","onln":"Online","state":["OFF","ON","TOGGLE","HOLD"],"sw":"9.0.0.2","t":"tasmota_xxxxxx","ft":"%prefix%/%topic%/","tp":["cmnd","stat","tele"],"rl":[1,1,1,1,0,0,0,0],"swc":[-1,-1,-1,-1,-1,-1,-1,-1],"btn":[0,0,0,0],"so":{"11":0,"13":0,"17":1,"20":0,"30":0,"68":0,"73":0,"80":0,"82":0},"lk":1,"lt_st":0,"ver":1}"#
        #expect(factory.discover(DriverMQTTMessage(topic: "tasmota/discovery/macadr/config", payload: Array(redacted.utf8))) == nil)
        #expect(factory.discover(config("A4CF12F00D01", redacted)) == nil, "the MAC it names is not the one it announced on")
        let good =
            #"{"mac":"A4CF12F00D01","t":"plug","ft":"%prefix%/%topic%/","tp":["cmnd","stat","tele"],"rl":[1],"state":["OFF","ON","TOGGLE","HOLD"]}"#
        #expect(factory.discover(config("A4CF12F00D01", good)) != nil)
        func variant(_ from: String, _ to: String) -> String { good.replacingOccurrences(of: from, with: to) }
        let bad = [
            "", "{not json", "[1,2]", "null", "\"config\"", "{}",
            variant(#""t":"plug""#, #""t":7"#), variant(#""t":"plug""#, #""t":"a/+/b""#), variant(#""t":"plug""#, #""t":"""#),
            variant(#""t":"plug""#, #""t":"a//b""#), variant(#""mac":"A4CF12F00D01""#, #""mac":17"#),
            variant(#""ft":"%prefix%/%topic%/""#, #""ft":"%prefix%/%hostname%/""#),  // no hn to fill in
            variant(#""ft":"%prefix%/%topic%/""#, #""ft":"%prefix%/%weird%/%topic%""#),
            variant(#""ft":"%prefix%/%topic%/""#, #""ft":"plain/level""#), variant(#""ft":"%prefix%/%topic%/""#, #""ft":[1]"#),
            variant(#""tp":["cmnd","stat","tele"]"#, #""tp":["cmnd","stat"]"#),
            variant(#""tp":["cmnd","stat","tele"]"#, #""tp":["cmnd","st+at","tele"]"#),
            variant(#""rl":[1]"#, #""rl":"1""#), variant(#""rl":[1]"#, #""rl":[1.5]"#), variant(#""rl":[1]"#, #""rl":[-1]"#),
            variant(#""state":["OFF","ON","TOGGLE","HOLD"]"#, #""state":["ON","ON"]"#),
            variant(#""state":["OFF","ON","TOGGLE","HOLD"]"#, #""state":[0,1]"#),
            variant(#""state":["OFF","ON","TOGGLE","HOLD"]"#, #""state":["OFF"]"#),
            "{\"t\":\"plug\",\"dn\":\"" + String(repeating: "x", count: 9000) + "\"}", String(repeating: "[", count: 70_000)
        ]
        for text in bad { #expect(factory.discover(config("A4CF12F00D01", text)) == nil, "\(text.prefix(80))") }
        #expect(factory.discover(DriverMQTTMessage(topic: "tasmota/discovery/A4CF12F00D01/sensors", payload: Array(good.utf8))) == nil)
        #expect(factory.discover(DriverMQTTMessage(topic: "tasmota/discovery/A4CF12F00D01/x/config", payload: Array(good.utf8))) == nil)
        #expect(factory.discover(DriverMQTTMessage(topic: "tasmota/discovery/A4CF12F00D0/config", payload: Array(good.utf8))) == nil)
        #expect(factory.discover(config("A4CF12F00D01", "\u{FF}\u{FE}{}")) == nil)
        var junk = [UInt8](repeating: 0, count: 4096)
        var x: UInt32 = 2_463_534_242
        for i in junk.indices { x ^= x << 13; x ^= x >> 17; x ^= x << 5; junk[i] = UInt8(truncatingIfNeeded: x) }
        #expect(factory.discover(DriverMQTTMessage(topic: "tasmota/discovery/A4CF12F00D01/config", payload: junk)) == nil)
    }

    /// A device seen on both filters is offered once: after its announcement, its last will
    /// (`tele/<t>/LWT` with the default FullTopic) offers nothing more; once the announcement is
    /// withdrawn (the empty retained payload of `SetOption19 1`), the last will offers it again.
    @Test func announcedDeviceIsNotOfferedAgainFromItsLastWill() {
        let factory = TasmotaDriverFactory()
        let lwt = DriverMQTTMessage(topic: "tele/plug/LWT", payload: Array("Online".utf8), retained: true)
        #expect(factory.discover(lwt)?.settingsJSON == #"{"topic":"plug"}"#, "old firmware: the last will is all there is")
        let text = #"{"mac":"A4CF12F00D01","t":"plug","ft":"%prefix%/%topic%/","tp":["cmnd","stat","tele"],"rl":[1,0]}"#
        let announced = factory.discover(config("A4CF12F00D01", text))
        #expect(announced?.suggestedId == "plug", "the same suggested id: the hub keeps the newest offer")
        #expect(announced?.hardwareId == "A4CF12F00D01")
        #expect(factory.discover(lwt) == nil)
        #expect(factory.discover(config("A4CF12F00D01", "")) == nil)
        #expect(factory.discover(lwt)?.settingsJSON == #"{"topic":"plug"}"#)
    }

    // MARK: Strips

    /// Several relays and no `relay`: a strip, one outlet per relay naming its relay and meter
    /// channel. One relay, or a named `relay`, is one device (as such settings always were).
    @Test func multiRelaySettingsAreStrips() throws {
        func outlets(_ settings: String) throws -> [DriverOutlet]? {
            try factory.outlets(of: DriverConfiguration(deviceId: "strip", driver: "tasmota", settingsJSON: settings))
        }
        let strip = try #require(try outlets(#"{"topic":"sonoff4ch","relays":4,"full_topic":"%topic%/%prefix%/"}"#))
        #expect(strip.map(\.number) == [1, 2, 3, 4])
        #expect(strip.allSatisfy { $0.name == nil })
        for outlet in strip {
            let expected =
                #"{"topic":"sonoff4ch","relays":4,"full_topic":"%topic%/%prefix%/","relay":\#(outlet.number),"energy_channel":\#(outlet.number - 1)}"#
            #expect(try object(outlet.settingsJSON) == object(expected))
            let driver = try #require(
                try factory.make(configuration: DriverConfiguration(deviceId: "s", driver: "tasmota", settingsJSON: outlet.settingsJSON))
                    as? TasmotaDriver)
            #expect(driver.topics.commandTopic == "sonoff4ch/cmnd/POWER\(outlet.number)")
            #expect(driver.energyChannel == outlet.number - 1)
        }
        #expect(try outlets(#"{"topic":"plug"}"#) == nil)
        #expect(try outlets(#"{"topic":"plug","relays":1}"#) == nil)
        #expect(try outlets(#"{"topic":"dual","relays":2,"relay":2}"#) == nil)
        #expect(try outlets(#"{"topic":"dual","relays":2,"relay":1}"#) == nil)
        // The strip's own settings still make a driver of relay 1, as before.
        let first = try #require(
            try factory.make(
                configuration: DriverConfiguration(deviceId: "d", driver: "tasmota", settingsJSON: #"{"topic":"dual","relays":2}"#))
                as? TasmotaDriver)
        #expect(first.topics.commandTopic == "cmnd/dual/POWER1")
        // Bad settings are refused as `make` refuses them.
        #expect(throws: DriverError.self) { try outlets(#"{"topic":"a","relays":40}"#) }
        #expect(throws: DriverError.self) { try outlets(#"{"relays":2}"#) }
    }

    // MARK: StateText and meter channels on a real broker

    /// arendst/Tasmota#3656 (arendst, 2018-09-02): with `StateText1 1` and `StateText2 0`
    /// the device answers `power 0` with `stat/ring2/POWER = {"POWER":"1"}` and
    /// `stat/ring2/POWER = 1` (its `SetOption4 1` puts the JSON on the POWER topic). Read in the
    /// device's words, `1` is off. Before, the words could not be set and `1` read as on.
    @Test func stateTextWordsReadTheSwitchState() async throws {
        let rig = try await Rig.make(settings: #"{"topic":"ring2","state_text":["1","0","TOGGLE","HOLD"]}"#)
        try await rig.publish("tele/ring2/LWT", "Online", retain: true)
        #expect(await eventually { rig.availabilities.map(\.0) == [true] })
        try await rig.driver.execute(.setSwitch(on: false))
        try await rig.publish("stat/ring2/POWER", #"{"POWER":"1"}"#)
        try await rig.publish("stat/ring2/POWER", "1")
        #expect(await eventually { rig.switchStates == [false] })
        try await rig.driver.execute(.setSwitch(on: true))
        try await rig.publish("stat/ring2/POWER", #"{"POWER":"0"}"#)
        try await rig.publish("stat/ring2/POWER", "0")
        #expect(await eventually { rig.switchStates == [false, true] })
        try await Task.sleep(for: .milliseconds(200))
        #expect(rig.switchStates == [false, true], "JSON and plain answer count once each")
        #expect(rig.driver.ignoredPayloads == 0)
        #expect(!rig.observations.contains { if case .commandFailed = $0 { return true } else { return false } })
        await rig.shutdown()
    }

    /// arendst/Tasmota#6160 (arendst, 2019-09-14): a Shelly 2.5 before `SetOption129` existed
    /// (what `SetOption129 0` still sends): `Power`, `Current` per channel, `Total` 3.262 kWh the sum
    /// of both. Each relay's outlet gets its own power and current and the shared voltage, never
    /// the sum as its energy; the whole device (one entry, not split) keeps the sum. Before, the
    /// sum was booked to relay 1 as its energy.
    @Test(arguments: [1, 2])
    func summedTotalIsNotBookedToOneRelay(relay: Int) async throws {
        // The settings the strip's outlet `relay` gets (`multiRelaySettingsAreStrips` checks them).
        let rig = try await Rig.make(settings: #"{"topic":"shelly25","relays":2,"relay":\#(relay),"energy_channel":\#(relay - 1)}"#)
        try await rig.publish("tele/shelly25/LWT", "Online", retain: true)
        #expect(await eventually { rig.availabilities.count == 1 })
        let sensor =
            #"{"Time":"2019-09-14T16:24:49","Switch1":"OFF","Switch2":"OFF","ANALOG":{"Temperature":52.5},"ENERGY":{"TotalStartTime":"2019-04-13T18:21:03","Total":3.262,"Yesterday":0.000,"Today":0.005,"Period":1.34,"Power":[23.63,67.17],"ApparentPower":[23.63,67.17],"ReactivePower":[0.00,0.00],"Factor":[1.00,1.00],"Voltage":229.3,"Current":[0.103,0.293]},"TempUnit":"C"}"#
        try await rig.publish("tele/shelly25/SENSOR", sensor)
        // A sentinel: once it is read, the payload before it has been handled.
        try await rig.publish("tele/shelly25/SENSOR", #"{"ENERGY":{"Voltage":230}}"#)
        #expect(await eventually { rig.readings.contains { $0.0 == .voltage && $0.1 == 230 } })
        let r = Dictionary(rig.readings.filter { !($0.0 == .voltage && $0.1 == 230) }, uniquingKeysWith: { a, _ in a })
        #expect(r[.energy] == nil, "the summed Total is not relay \(relay)'s energy")
        #expect(near(r[.power] ?? -1, relay == 1 ? 23.63 : 67.17))
        #expect(near(r[.current] ?? -1, relay == 1 ? 0.103 : 0.293))
        #expect(near(r[.voltage] ?? -1, 229.3))
        await rig.shutdown()

        // The whole device, not split per outlet: the sum is its own counter.
        let whole = try await Rig.make(settings: #"{"topic":"shelly25"}"#)
        #expect(try await whole.online())
        try await whole.publish("tele/shelly25/SENSOR", sensor)
        #expect(await eventually { whole.readings.contains { $0.0 == .energy } })
        #expect(near(whole.readings.first { $0.0 == .energy }?.1 ?? 0, 3262))
        await whole.shutdown()
    }

    /// GaryMilne/Hubitat-Tasmota `Universal_Multi_Sensor.groovy` line 392 (commit
    /// f8375835c4e094322af373febf8819c21deefd26): a two-channel device's `STATUS 8` with
    /// `SetOption129 1` (`Total`, `Yesterday`, `Today` per channel); its `StatusSNS` object is what
    /// the device sends as `tele/<t>/SENSOR`. Relay 2's outlet books channel 1's counter.
    @Test func splitTotalsAreBookedPerChannel() async throws {
        let outlets = try #require(
            try factory.outlets(of: DriverConfiguration(deviceId: "dual", driver: "tasmota", settingsJSON: #"{"topic":"dual","relays":2}"#))
        )
        let sensor =
            #"{"Time":"2022-01-07T19:43:24","Switch3":"ON","Switch4":"ON","ENERGY":{"TotalStartTime":"2021-04-03T18:52:24","Total":[0.005,1.507],"Yesterday":[0.000,0.648],"Today":[0.000,0.197],"Period":[ 0, 0],"Power":[ 0,26],"ApparentPower":[ 0,43],"ReactivePower":[ 0,33],"Factor":[0.00,0.62],"Frequency":50.016,"Voltage":225,"Current":[0.000,0.189]},"ESP32":{"Temperature":65.6},"TempUnit":"C"}"#
        for (i, expected) in [(0, (5.0, 0.0, 0.0)), (1, (1507.0, 26.0, 0.189))] {
            let rig = try await Rig.make(settings: outlets[i].settingsJSON)
            #expect(try await rig.online())
            try await rig.publish("tele/dual/SENSOR", sensor)
            #expect(await eventually { rig.readings.count == 4 })
            let r = Dictionary(rig.readings, uniquingKeysWith: { a, _ in a })
            #expect(near(r[.energy] ?? -1, expected.0), "outlet \(i + 1)")
            #expect(near(r[.power] ?? -1, expected.1))
            #expect(near(r[.current] ?? -1, expected.2))
            #expect(r[.voltage] == 225)
            await rig.shutdown()
        }
    }

    // MARK: Discovered and switched over a real broker

    /// The simulator announces a two-relay device with FullTopic `%topic%/%prefix%/` and German
    /// StateText on a real broker; the factory finds it on `tasmota/discovery/+/config` (its last
    /// will `keller/tele/LWT` is not on `tele/+/LWT`), its second outlet's driver switches relay 2
    /// and reads the device's words.
    @Test func customFullTopicDiscoveredAndSwitched() async throws {
        let broker = try await TestBroker.startAsync()
        let simulator = TasmotaSimulator(
            options: .init(
                port: broker.port, topic: "keller", relays: 2, telePeriod: 60, fullTopic: "%topic%/%prefix%/",
                stateText: ["AUS", "EIN", "UMSCHALTEN", "HALTEN"], friendlyName: "Keller"))
        try await simulator.start()
        let hub = try await ClientDriverMQTT(port: broker.port)
        for filter in factory.discoveryFilters { try hub.subscribe(filter) }
        let found = await withTaskGroup(of: DiscoveredDevice?.self) { group in
            group.addTask {
                for await message in hub.messages {
                    if let device = factory.discover(message) { return device }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10)); return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        await hub.stop()
        let device = try #require(found)
        #expect(device.suggestedId == "keller")
        #expect(device.name == "Keller")
        #expect(device.hardwareId == simulator.options.mac)
        #expect(
            try object(device.settingsJSON)
                == object(
                    #"{"topic":"keller","full_topic":"%topic%/%prefix%/","relays":2,"state_text":["AUS","EIN","UMSCHALTEN","HALTEN"]}"#))

        let outlets = try #require(
            try factory.outlets(of: DriverConfiguration(deviceId: "keller", driver: "tasmota", settingsJSON: device.settingsJSON)))
        let rig = try await Rig.make(settings: outlets[1].settingsJSON, broker: broker)
        #expect(await eventually { rig.availabilities.first?.0 == true })
        #expect(await eventually { rig.switchStates == [false] })
        try await rig.driver.execute(.setSwitch(on: true))
        #expect(await eventually { rig.switchStates == [false, true] })
        #expect(simulator.relayOn == [false, true])
        simulator.press(relay: 1)  // the other outlet
        simulator.press(relay: 2)
        #expect(await eventually { rig.switchStates == [false, true, false] })
        #expect(simulator.relayOn == [true, false])
        #expect(rig.driver.ignoredPayloads == 0)
        await simulator.stop()
        await rig.shutdown()
    }
}
