import DriverAPI
import Testing

@testable import Zigbee2MQTT

@Suite("Zigbee2MQTT settings, outlets and discovery")
struct Zigbee2MQTTSettingsTests {
    func config(_ driver: any Driver) throws -> Zigbee2MQTTConfig { try #require(driver as? Zigbee2MQTTDriver).config }

    @Test func friendlyNameWithSlashesAndSpacesAndBaseTopic() throws {
        let plain = try config(makeDriver(#"{"friendly_name":"living room/tv plug"}"#))
        #expect(plain.deviceTopic == "zigbee2mqtt/living room/tv plug")
        #expect(plain.setTopic == "zigbee2mqtt/living room/tv plug/set")
        #expect(plain.availabilityTopic == "zigbee2mqtt/living room/tv plug/availability")
        #expect(plain.stateKey == "state")
        let custom = try makeDriver(#"{"friendly_name":"desk","base_topic":"house/z2m"}"#)
        #expect(
            custom.capabilities.mqttScope == [
                "house/z2m/desk", "house/z2m/desk/set", "house/z2m/desk/get", "house/z2m/desk/availability", "house/z2m/bridge/state"
            ])
        // The name is the topic, byte for byte: surrounding spaces are kept, not trimmed.
        #expect(try config(makeDriver(#"{"friendly_name":" odd "}"#)).deviceTopic == "zigbee2mqtt/ odd ")
        let gang = try config(makeDriver(#"{"friendly_name":"kitchen/switch","endpoint":"l2"}"#))
        #expect(gang.stateKey == "state_l2")
    }

    @Test func badSettingsSayWhatAndWhere() {
        #expect(
            settingsError(#"{"friendly_name":"x","colour":"red"}"#)
                == #"zigbee2mqtt settings of device "d" have an unknown key "colour" (known: base_topic, endpoint, endpoints, friendly_name, home_assistant, readings)"#
        )
        #expect(settingsError(#"{}"#) == #"zigbee2mqtt settings of device "d" need "friendly_name""#)
        #expect(settingsError(#"{"friendly_name":42}"#)?.contains(#"setting "friendly_name" of device "d" must be"#) == true)
        // Zigbee2MQTT's own rules for friendly names (lib/util/utils.ts validateFriendlyName).
        for bad in ["", "/plug", "plug/", "a/+/b", "a#", "lamp/2", "lamp/", "a//b", "tab\there"] {
            let json = JSONValue.object([("friendly_name", .string(bad))]).serialized()
            #expect(settingsError(json)?.contains(#"setting "friendly_name" of device "d""#) == true, "\(bad)")
        }
        #expect(settingsError(#"{"friendly_name":"lamp/2a"}"#) == nil)
        for bad in ["", "/z2m", "z2m/", "a//b", "z+", "#"] {
            let json = JSONValue.object([("friendly_name", "x"), ("base_topic", .string(bad))]).serialized()
            #expect(settingsError(json) != nil, "\(bad)")
        }
        #expect(settingsError(#"{"friendly_name":"x","endpoint":"l 1"}"#)?.contains(#""endpoint""#) == true)
        #expect(settingsError(#"{"friendly_name":"x","readings":["power","watts"]}"#)?.contains(#"got "watts""#) == true)
        #expect(settingsError(#"{"friendly_name":"x","home_assistant":"yes"}"#) != nil)
        #expect(settingsError(#"{"friendly_name":"x","endpoints":["l1"]}"#)?.contains("2 to 16") == true)
        #expect(settingsError(#"{"friendly_name":"x","endpoints":["l1","l1"]}"#)?.contains("twice") == true)
        #expect(settingsError(#"{"friendly_name":"x","endpoints":["l1","l2"],"endpoint":"l1"}"#) != nil)
        // A strip is registered whole (the hub makes its outlets); its own settings drive no driver.
        #expect(settingsError(#"{"friendly_name":"x","endpoints":["l1","l2"]}"#)?.contains("register it whole") == true)
    }

    @Test func readingsAndHomeAssistantCapabilities() throws {
        let metered = try makeDriver(#"{"friendly_name":"p","readings":["energy","power"]}"#)
        #expect(metered.capabilities.readings == [.power, .energy])
        // Not announced by the hub unless asked: Home Assistant discovers it from Zigbee2MQTT itself.
        #expect(metered.capabilities.announcesToHomeAssistant == false)
        #expect(try makeDriver(#"{"friendly_name":"p","home_assistant":true}"#).capabilities.announcesToHomeAssistant)
        #expect(try makeDriver(#"{"friendly_name":"p"}"#).capabilities.readings.isEmpty)
        // Every other driver keeps the default: announced.
        #expect(DriverCapabilities().announcesToHomeAssistant)
        #expect(DriverCapabilities.switchOnly.announcesToHomeAssistant)
    }

    @Test func twoGangOutlets() throws {
        let factory = Zigbee2MQTTDriverFactory()
        let strip = DriverConfiguration(
            deviceId: "k", driver: "zigbee2mqtt", settingsJSON: #"{"friendly_name":"x","endpoints":["l1","l2"]}"#)
        let outlets = try #require(try factory.outlets(of: strip))
        #expect(
            outlets == [
                DriverOutlet(number: 1, settingsJSON: #"{"friendly_name":"x","endpoint":"l1"}"#),
                DriverOutlet(number: 2, settingsJSON: #"{"friendly_name":"x","endpoint":"l2"}"#)
            ])
        // Each outlet's settings make a driver of its gang.
        for (outlet, key) in zip(outlets, ["state_l1", "state_l2"]) {
            let driver = try factory.make(
                configuration: DriverConfiguration(deviceId: "k-\(outlet.number)", driver: "zigbee2mqtt", settingsJSON: outlet.settingsJSON)
            )
            #expect(try config(driver).stateKey == key)
        }
        // A custom base topic and the Home Assistant choice carry over.
        let custom = DriverConfiguration(
            deviceId: "k", driver: "zigbee2mqtt",
            settingsJSON: #"{"friendly_name":"x","base_topic":"z","endpoints":["left","right"],"home_assistant":true}"#)
        #expect(
            try factory.outlets(of: custom)?.map(\.settingsJSON) == [
                #"{"friendly_name":"x","base_topic":"z","endpoint":"left","home_assistant":true}"#,
                #"{"friendly_name":"x","base_topic":"z","endpoint":"right","home_assistant":true}"#
            ])
        // One device: no outlets; bad settings: the error.
        #expect(
            try factory.outlets(of: DriverConfiguration(deviceId: "p", driver: "zigbee2mqtt", settingsJSON: #"{"friendly_name":"p"}"#))
                == nil)
        #expect(throws: DriverError.self) {
            try factory.outlets(of: DriverConfiguration(deviceId: "p", driver: "zigbee2mqtt", settingsJSON: #"{"endpoints":["l1","l2"]}"#))
        }
    }

    func discover(_ payload: String, topic: String = "zigbee2mqtt/bridge/devices") -> [DiscoveredDevice] {
        Zigbee2MQTTDriverFactory().discoverAll(DriverMQTTMessage(topic: topic, payload: Array(payload.utf8), retained: true))
    }

    /// Zigbee2MQTT's own bridge/devices: of the coordinator, bulbs (lights, not switches), a remote,
    /// an unsupported device, buttons, a weather sensor (whose `voltage` is its battery's), the
    /// ZNCZ02LM power plug and a light/cover controller, only the plug is offered, with the power
    /// and energy it exposes (no voltage or current).
    @Test func discoveryFromZigbee2MQTTsOwnDeviceList() throws {
        let found = discover(Fixtures.bridgeDevices)
        #expect(found.count == 1)
        let plug = try #require(found.first)
        #expect(plug.driver == "zigbee2mqtt")
        #expect(plug.suggestedId == "power_plug")
        #expect(plug.hardwareId == "0x0017880104e45524")
        #expect(plug.settingsJSON == #"{"friendly_name":"power_plug","readings":["power","energy"]}"#)
        #expect(plug.name == "power_plug (Xiaomi ZNCZ02LM)")
        let driver = try makeDriver(plug.settingsJSON)
        #expect(driver.capabilities.readings == [.power, .energy])
        // Only the retained list on the default base topic is read.
        #expect(discover(Fixtures.bridgeDevices, topic: "zigbee2mqtt/bridge/groups").isEmpty)
        #expect(Zigbee2MQTTDriverFactory().discoveryFilters == ["zigbee2mqtt/bridge/devices"])
        #expect(
            Zigbee2MQTTDriverFactory().discover(
                DriverMQTTMessage(topic: "zigbee2mqtt/bridge/devices", payload: Array(Fixtures.bridgeDevices.utf8))) == plug)
    }

    /// A TuYa TS011F plug (full meter) and a Ubisys S2 (two gangs, offered as a strip of two
    /// outlets; its shared meter belongs to no one gang).
    @Test func discoveryOfAMeteredPlugAndATwoGangSwitch() throws {
        let found = discover(Fixtures.tuyaAndUbisysDevices)
        #expect(found.count == 2)
        let plug = try #require(found.first)
        #expect(plug.suggestedId == "living-room-tv-plug")
        #expect(plug.settingsJSON == #"{"friendly_name":"living room/tv plug","readings":["power","voltage","current","energy"]}"#)
        #expect(plug.hardwareId == "0xa4c1389f9e792b7f")
        #expect(try makeDriver(plug.settingsJSON).capabilities.readings == [.power, .voltage, .current, .energy])
        let s2 = try #require(found.last)
        #expect(s2.suggestedId == "Kitchen-S2")
        #expect(s2.settingsJSON == #"{"friendly_name":"Kitchen S2","endpoints":["l1","l2"]}"#)
        #expect(s2.hardwareId == "0x001fee00000044c8")
        let outlets = try Zigbee2MQTTDriverFactory().outlets(
            of: DriverConfiguration(deviceId: s2.suggestedId, driver: "zigbee2mqtt", settingsJSON: s2.settingsJSON))
        #expect(outlets?.count == 2)
    }

    @Test func discoveryIgnoresGarbage() {
        for garbage in [
            "", "garbage[", "{}", "[1,2,null]", #"[{"friendly_name":"x"}]"#, #"[{"friendly_name":"x","definition":null}]"#,
            #"[{"friendly_name":"x","definition":{"exposes":"switch"}}]"#,
            #"[{"friendly_name":"a/+","definition":{"exposes":[{"type":"switch","features":[{"name":"state","property":"state"}]}]}}]"#,
            #"[{"friendly_name":"x","disabled":true,"definition":{"exposes":[{"type":"switch","features":[{"name":"state","property":"state"}]}]}}]"#,
            #"[{"friendly_name":"c","type":"Coordinator","definition":{"exposes":[{"type":"switch","features":[{"name":"state"}]}]}}]"#
        ] {
            #expect(discover(garbage).isEmpty, "\(garbage)")
        }
        // Two names that map to one hub id both get offered, under distinct ids.
        let twins =
            #"[{"friendly_name":"a b","ieee_address":"0x01","definition":{"exposes":[{"type":"switch","features":[{"name":"state"}]}]}},{"friendly_name":"a/b","ieee_address":"0x02","definition":{"exposes":[{"type":"switch","features":[{"name":"state"}]}]}}]"#
        #expect(discover(twins).map(\.suggestedId) == ["a-b", "a-b-0x02"])
    }
}
