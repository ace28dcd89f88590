import DriverAPI
import Testing

@testable import Tasmota

@Suite("Tasmota settings, payload reading and discovery (no broker)")
struct TasmotaSettingsTests {
    let factory = TasmotaDriverFactory()

    func make(_ settings: String) throws -> TasmotaDriver {
        try #require(
            try factory.make(configuration: DriverConfiguration(deviceId: "plug", driver: "tasmota", settingsJSON: settings))
                as? TasmotaDriver)
    }

    @Test func defaultsAndScope() throws {
        #expect(factory.name == "tasmota")
        let driver = try make(#"{"topic":"tasmota_A1B2C3"}"#)
        #expect(driver.capabilities.mqttScope == ["cmnd/tasmota_A1B2C3/#", "stat/tasmota_A1B2C3/#", "tele/tasmota_A1B2C3/#"])
        #expect(driver.topics.commandTopic == "cmnd/tasmota_A1B2C3/POWER")
        #expect(driver.topics.acceptedPowerNames == ["POWER", "POWER1"])
        #expect(driver.energyChannel == 0)
        #expect(!driver.capabilities.storesActivations)
        #expect(driver.capabilities.readings == [.power, .energy, .voltage, .current])
    }

    @Test func multiRelayAndCustomFullTopic() throws {
        let driver = try make(#"{"topic":"sonoff4ch","full_topic":"home/%topic%/%prefix%","relays":4,"relay":3,"energy_channel":2}"#)
        #expect(driver.capabilities.mqttScope == ["home/sonoff4ch/cmnd/#", "home/sonoff4ch/stat/#", "home/sonoff4ch/tele/#"])
        #expect(driver.topics.commandTopic == "home/sonoff4ch/cmnd/POWER3")
        #expect(driver.topics.lwtTopic == "home/sonoff4ch/tele/LWT")
        #expect(driver.topics.acceptedPowerNames == ["POWER3"])
        #expect(driver.energyChannel == 2)
        let first = try make(#"{"topic":"dual","relays":2}"#)
        #expect(first.topics.commandTopic == "cmnd/dual/POWER1")
    }

    /// Tasmota's `GetTopic_P` (arendst/Tasmota `tasmota/tasmota_support/support_tasmota.ino` at
    /// 3fb123109da62cbd8b4f0060a8e8c19ec8131c02; `%id%` is `NetworkUniqueId()`, the MAC): a
    /// FullTopic without `%prefix%` gets `/%prefix%` for commands only; custom prefixes replace
    /// `cmnd`/`stat`/`tele`; a leading `/` stays.
    @Test func fullTopicWithoutPrefixAndCustomPrefixes() throws {
        let noPrefix = try make(#"{"topic":"GARDEN02","full_topic":"XefilHome/%topic%/"}"#)
        #expect(noPrefix.topics.commandTopic == "XefilHome/GARDEN02/cmnd/POWER")
        #expect(noPrefix.topics.statPowerTopics == ["XefilHome/GARDEN02/POWER", "XefilHome/GARDEN02/POWER1"])
        #expect(noPrefix.topics.sensorTopic == "XefilHome/GARDEN02/SENSOR")
        #expect(noPrefix.topics.subscriptions == ["XefilHome/GARDEN02/#"])
        let custom = try make(#"{"topic":"p","prefixes":["befehl","status","tele2"],"full_topic":"/%topic%/%prefix%"}"#)
        #expect(custom.topics.commandTopic == "/p/befehl/POWER")
        #expect(custom.topics.resultTopic == "/p/status/RESULT")
        #expect(custom.topics.lwtTopic == "/p/tele2/LWT")
        #expect(custom.capabilities.mqttScope == ["/p/befehl/#", "/p/status/#", "/p/tele2/#"])
        let topicOnly = try make(#"{"topic":"a","full_topic":"%topic%/x/"}"#)
        #expect(topicOnly.topics.commandTopic == "a/x/cmnd/POWER")
    }

    /// The device's words first (any case), then the usual ones; TOGGLE and HOLD are no state.
    @Test func stateTextWords() throws {
        let german = try #require(TasmotaStateText(["AUS", "EIN", "UMSCHALTEN", "HALTEN"]))
        #expect(german.read("ein") == true && german.read(" AUS ") == false && german.read("ON") == true)
        #expect(german.read("UMSCHALTEN") == nil && german.read("halten") == nil)
        let inverted = try #require(TasmotaStateText(["1", "0"]))
        #expect(inverted.read("1") == false && inverted.read("0") == true && inverted.read("off") == false)
        #expect(TasmotaPayload.power(.number(1), words: inverted) == false)
        #expect(TasmotaPayload.power(in: .object([("POWER1", "EIN")]), names: ["POWER1"], words: german) == true)
        #expect(
            TasmotaStateText(["ON", "on"]) == nil && TasmotaStateText(["", "ON"]) == nil
                && TasmotaStateText(["A", "B", "C", "D", "E"]) == nil)
        #expect(TasmotaStateText.standard.isStandard && !german.isStandard)
        let driver = try make(#"{"topic":"p","state_text":["AUS","EIN","UMSCHALTEN","HALTEN"]}"#)
        #expect(driver.words == german)
    }

    @Test func badSettingsNameTheProblem() {
        func message(_ settings: String) -> String {
            do {
                _ = try factory.make(configuration: DriverConfiguration(deviceId: "plug", driver: "tasmota", settingsJSON: settings))
                return ""
            } catch {
                return "\(error)"
            }
        }
        #expect(message("{}").contains("need \"topic\""))
        #expect(message(#"{"topic":"a","colour":"red"}"#).contains("unknown key \"colour\""))
        #expect(message(#"{"topic":"a/+/b"}"#).contains("\"topic\""))
        #expect(message(#"{"topic":"a","relay":3,"relays":2}"#).contains("\"relay\""))
        #expect(message(#"{"topic":"a","relay":0}"#).contains("\"relay\""))
        #expect(message(#"{"topic":"a","energy_channel":-1}"#).contains("\"energy_channel\""))
        #expect(message(#"{"topic":"a","full_topic":"x/y/"}"#).contains("%prefix%"))
        #expect(message(#"{"topic":"a","full_topic":"x//%topic%"}"#).contains("full_topic"))
        #expect(message(#"{"topic":"a","prefixes":["cmnd","stat"]}"#).contains("\"prefixes\""))
        #expect(message(#"{"topic":"a","prefixes":["cmnd","stat","te#le"]}"#).contains("\"prefixes\""))
        #expect(message(#"{"topic":"a","prefixes":"cmnd"}"#).contains("\"prefixes\""))
        #expect(message(#"{"topic":"a","state_text":["ON","on"]}"#).contains("\"state_text\""))
        #expect(message(#"{"topic":"a","state_text":["OFF"]}"#).contains("\"state_text\""))
        #expect(message(#"{"topic":"a","state_text":[0,1]}"#).contains("\"state_text\""))
        #expect(message(#"{"topic":"a","full_topic":"%prefix%/%hostname%/%topic%/"}"#).contains("full_topic"))
        #expect(message(#"{"topic":"a","full_topic":"%prefix%/#/%topic%"}"#).contains("full_topic"))
        #expect(message(#"{"topic":7}"#).contains("\"topic\""))
        #expect(message("[1]").contains("JSON object"))
    }

    @Test func referenceSensorPayload() throws {
        let text =
            #"{"Time":"2018-02-15T17:37:10","ENERGY":{"TotalStartTime":"2018-11-14T18:39:40","Total":6.294,"Yesterday":5.340,"Today":0.954,"Period":217,"Power":2635,"ApparentPower":2650,"ReactivePower":282,"Factor":0.99,"Voltage":227,"Current":11.661}}"#
        let object = try #require(TasmotaPayload.object(Array(text.utf8)))
        let readings = Dictionary(uniqueKeysWithValues: TasmotaPayload.energyReadings(object, channel: 0))
        #expect(readings.count == 4)
        #expect(readings[.power] == 2635)
        #expect(readings[.voltage] == 227)
        #expect(near(readings[.current] ?? 0, 11.661))
        #expect(near(readings[.energy] ?? 0, 6294))
    }

    @Test func arraysStringsAndMissingFields() throws {
        let text = #"{"ENERGY":{"Total":[2.813,0.254],"Power":[120,"35"],"Voltage":"227","Current":[0.6," 0.2 "]}}"#
        let object = try #require(TasmotaPayload.object(Array(text.utf8)))
        let ch0 = Dictionary(uniqueKeysWithValues: TasmotaPayload.energyReadings(object, channel: 0))
        let ch1 = Dictionary(uniqueKeysWithValues: TasmotaPayload.energyReadings(object, channel: 1))
        let ch2 = Dictionary(uniqueKeysWithValues: TasmotaPayload.energyReadings(object, channel: 2))
        #expect(ch0 == [.energy: 2813, .power: 120, .voltage: 227, .current: 0.6])
        #expect(near(ch1[.energy] ?? 0, 254) && ch1[.power] == 35 && ch1[.voltage] == 227 && ch1[.current] == 0.2)
        #expect(ch2 == [.voltage: 227])  // no such channel: only the shared line voltage
        let partial = try #require(TasmotaPayload.object(Array(#"{"ENERGY":{"Power":"12.5"}}"#.utf8)))
        #expect(TasmotaPayload.energyReadings(partial, channel: 0).map(\.0) == [.power])
        let none = try #require(TasmotaPayload.object(Array(#"{"Time":"x","AM2301":{"Temperature":21}}"#.utf8)))
        #expect(TasmotaPayload.energyReadings(none, channel: 0).isEmpty)
    }

    @Test func absurdValuesAreDropped() throws {
        for text in [
            #"{"ENERGY":{"Power":-20,"Voltage":"abc","Current":-1,"Total":-0.5}}"#,
            #"{"ENERGY":{"Power":150000,"Voltage":1e308,"Current":"1e400","Total":1e300}}"#,
            #"{"ENERGY":{"Power":"Infinity","Voltage":"nan","Current":true,"Total":null}}"#,
            #"{"ENERGY":{"Power":[],"Voltage":{},"Current":[[1]],"Total":"0x10"}}"#,
            #"{"ENERGY":[1,2,3]}"#, #"{"ENERGY":"x"}"#
        ] {
            let object = try #require(TasmotaPayload.object(Array(text.utf8)), "\(text)")
            #expect(TasmotaPayload.energyReadings(object, channel: 0).isEmpty, "\(text)")
        }
        for text in ["{not json", "", "[1,2]", "null", "42", "\"ON\"", String(repeating: "[", count: 70_000)] {
            #expect(TasmotaPayload.object(Array(text.utf8)) == nil, "\(text.prefix(20))")
        }
        #expect(TasmotaPayload.object([0xFF, 0xFE, 0x7B, 0x7D, 0x00]) == nil)
    }

    @Test func powerAndAvailabilityText() {
        #expect(TasmotaPayload.power("ON") == true)
        #expect(TasmotaPayload.power("off") == false)
        #expect(TasmotaPayload.power(" On\n") == true)
        #expect(TasmotaPayload.power("TOGGLE") == nil)
        #expect(TasmotaPayload.power("BANANA") == nil)
        #expect(TasmotaPayload.power(.number(17)) == nil)
        #expect(TasmotaPayload.availability("Online") == true)
        #expect(TasmotaPayload.availability("OFFLINE") == false)
        #expect(TasmotaPayload.availability("Sleeping") == nil)
    }

    @Test func discoveryFromMessages() {
        #expect(factory.discoveryFilters == ["tasmota/discovery/+/config", "tele/+/LWT"])
        let found = factory.discover(DriverMQTTMessage(topic: "tele/tasmota_A1B2C3/LWT", payload: Array("Online".utf8), retained: true))
        #expect(
            found
                == DiscoveredDevice(
                    suggestedId: "tasmota_A1B2C3", driver: "tasmota", name: "tasmota_A1B2C3",
                    settingsJSON: #"{"topic":"tasmota_A1B2C3"}"#, hardwareId: nil))
        let odd = factory.discover(DriverMQTTMessage(topic: "tele/Küche \"plug\"/LWT", payload: Array("online".utf8)))
        #expect(odd?.suggestedId == "Kcheplug")
        #expect(odd?.name == "Küche \"plug\"")
        #expect(odd?.settingsJSON == #"{"topic":"Küche \"plug\""}"#)
        let long = factory.discover(
            DriverMQTTMessage(topic: "tele/\(String(repeating: "x", count: 100))/LWT", payload: Array("Online".utf8)))
        #expect(long?.suggestedId.count == 64)
        #expect(factory.discover(DriverMQTTMessage(topic: "tele/gone/LWT", payload: Array("Offline".utf8))) == nil)
        #expect(factory.discover(DriverMQTTMessage(topic: "tele/a/b/LWT", payload: Array("Online".utf8))) == nil)
        #expect(factory.discover(DriverMQTTMessage(topic: "stat/a/LWT", payload: Array("Online".utf8))) == nil)
        #expect(factory.discover(DriverMQTTMessage(topic: "tele/!!!/LWT", payload: Array("Online".utf8))) == nil)
        #expect(factory.discover(DriverMQTTMessage(topic: "tele/x/LWT", payload: Array(repeating: 0x41, count: 65_536))) == nil)
    }
}
