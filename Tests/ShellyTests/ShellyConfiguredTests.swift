import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import Testing

@testable import Shelly

/// Shelly devices as they are configured: models without a meter, meters without a relay (PM Mini
/// `pm1`, EM `em1`/`em`), NotifyStatus deltas and full statuses stamped with the device's time,
/// multi-relay models as outlets, and discovery offering what the model has.
///
/// The payloads are real devices' own:
/// - [MB] Luligu/matterbridge-shelly `src/mock/<device>.json` at commit
///   bba3c45ceea7beda2569194227800869a6a88415: `Shelly.GetStatus` (`status`), `/shelly` captures of
///   each device named below.
/// - [AIO] home-assistant-libs/aioshelly `fixtures/gen2_Shelly Pro 3EM_SPEM-003CEBEU_20231219-134001-1.1.0-g34b5d4f.json`
///   at commit ea7a88f477a162fd26bca65e66498253a02d322d (its `status`).
/// - [IOB1592] iobroker-community-adapters/ioBroker.shelly#1592 (Shelly 1PM Mini Gen3's MQTT
///   traffic as the adapter logged it), https://github.com/iobroker-community-adapters/ioBroker.shelly/issues/1592
/// - [IOB813] iobroker-community-adapters/ioBroker.shelly#813 (a Plus 2PM under the custom
///   prefix `shellyplus2pm-Einfahrt`), https://github.com/iobroker-community-adapters/ioBroker.shelly/issues/813
/// - [NTF] the frame of NotifyStatus / NotifyFullStatus (`src`, `dst`, `method`, `params.ts`, one
///   member per component): https://shelly-api-docs.shelly.cloud/gen2/General/Notifications and a
///   Plus H&T's NotifyFullStatus over MQTT, https://gist.github.com/NelsonMinar/494a0f53785c20290b395639548349fa
@Suite("Shelly as configured")
struct ShellyConfiguredTests {
    func make(_ json: String) throws -> any Driver {
        try ShellyDriverFactory().make(configuration: DriverConfiguration(deviceId: "d", driver: "shelly", settingsJSON: json))
    }

    func outlets(_ json: String) throws -> [DriverOutlet]? {
        try ShellyDriverFactory().outlets(of: DriverConfiguration(deviceId: "strip", driver: "shelly", settingsJSON: json))
    }

    /// A model without a meter offers no sensor. Failed before: every Gen2 entry offered power,
    /// voltage, current and energy (sensors that stayed unknown), every Gen1 entry power and energy.
    @Test func modelsWithoutAMeterOfferNoReadings() throws {
        // Default ids of real devices [MB]: Plus 1 (SNSW-001X16EU), Pro 3 (SPSW-003XE16EU), 1 Mini Gen4
        // (S4SW-001X8EU), Gen1 Shelly 1 (SHSW-1): their switch status has no apower.
        #expect(try make(#"{"id":"shellyplus1-e465b8f3028c"}"#).capabilities.readings == [])
        #expect(try make(#"{"id":"shellypro3-c8f09e894168","channel":2}"#).capabilities.readings == [])
        #expect(try make(#"{"id":"shelly1minig4-a085e3bb944c","gen":4}"#).capabilities.readings == [])
        #expect(try make(#"{"id":"shelly1-34945472A643","gen":1}"#).capabilities.readings == [])
        // A custom prefix says nothing of the model: the setting does.
        #expect(try make(#"{"id":"shellies/plus1","meter":false}"#).capabilities.readings == [])
        #expect(try make(#"{"id":"shellies/shelly1","gen":1,"meter":false}"#).capabilities.readings == [])
    }

    @Test func modelsWithAMeterAndMetersWithoutARelay() throws {
        let all: Set<Quantity> = [.power, .voltage, .current, .energy]
        // Unchanged: metered models and ids that name no model.
        #expect(try make(#"{"id":"shellyplus1pm-441793ab3fb4"}"#).capabilities.readings == all)
        #expect(try make(#"{"id":"shellypro4pm-34987a67d7d0","channel":3}"#).capabilities.readings == all)
        #expect(try make(#"{"id":"shellies/mini4","gen":4}"#).capabilities.readings == all)
        #expect(try make(#"{"id":"shellyplug-s-7AB1C2","gen":1}"#).capabilities.readings == [.power, .energy])
        // A setting overrides what the id says.
        #expect(try make(#"{"id":"shellyplus1-e465b8f3028c","meter":true}"#).capabilities.readings == all)
        // Meters: PM Mini Gen3 (pm1), EM Mini Gen4 (em1), Pro 3EM (em: three phases, no one voltage).
        #expect(try make(#"{"id":"shellypmminig3-84fce63957f4"}"#).capabilities.readings == all)
        #expect(try make(#"{"id":"shellyemminig4-d885acef41a8"}"#).capabilities.readings == all)
        #expect(try make(#"{"id":"shellies/em","component":"em1","channel":1}"#).capabilities.readings == all)
        #expect(try make(#"{"id":"shellypro3em-a0dd6ca0c27c"}"#).capabilities.readings == [.power, .current, .energy])
    }

    @Test func settingErrorsNameTheSetting() throws {
        func message(_ json: String) -> String {
            do {
                _ = try make(json)
                return ""
            } catch { return "\(error)" }
        }
        #expect(
            message(#"{"id":"x","component":"relay"}"#).contains(#"setting "component" of device "d" must be one of switch, pm1, em1, em"#))
        #expect(
            message(#"{"id":"x","gen":1,"component":"pm1"}"#).contains(
                #"setting "component" of device "d" must be switch for a Gen1 device"#))
        #expect(message(#"{"id":"x","component":"em","meter":false}"#).contains(#"setting "meter" of device "d" cannot be false"#))
        #expect(message(#"{"id":"x","meter":"no"}"#).contains(#""meter""#))
        #expect(message(#"{"id":"x","channels":0}"#).contains(#""channels""#))
        #expect(message(#"{"id":"x","channels":17}"#).contains(#""channels""#))
    }

    /// A four-channel model is four outlets, each its own relay. Failed before: nil (one device, relay 0).
    @Test func pro4PMOutlets() throws {
        let settings = #"{"id":"shellypro4pm-34987a67d7d0","gen":2,"channels":4}"#
        let found = try #require(try outlets(settings))
        #expect(found.map(\.number) == [1, 2, 3, 4])
        #expect(found.map(\.settingsJSON) == (0..<4).map { #"{"channel":\#($0),"gen":2,"id":"shellypro4pm-34987a67d7d0"}"# })
        #expect(found.allSatisfy { $0.name == nil })
        for outlet in found {
            let driver = try #require(
                try ShellyDriverFactory().make(
                    configuration: DriverConfiguration(
                        deviceId: "strip-\(outlet.number)", driver: "shelly", settingsJSON: outlet.settingsJSON))
                    as? ShellyDriver)
            #expect(driver.config.channel == outlet.number - 1)
            #expect(driver.capabilities.readings == [.power, .voltage, .current, .energy])
        }
        // Other settings go along; a Pro 3 without meters stays without.
        #expect(
            try outlets(#"{"id":"shellypro3-c8f09e894168","channels":3}"#)?.last?.settingsJSON
                == #"{"channel":2,"id":"shellypro3-c8f09e894168"}"#)
        // Single-relay settings keep meaning one device.
        #expect(try outlets(#"{"id":"shellyplus1pm-441793ab3fb4"}"#) == nil)
        #expect(try outlets(#"{"id":"shellypro4pm-34987a67d7d0","channel":2}"#) == nil)
        #expect(try outlets(#"{"id":"shellypro4pm-34987a67d7d0","channels":1}"#) == nil)
        #expect(throws: DriverError.self) { try outlets(#"{"id":"shellypro4pm-34987a67d7d0","channels":4,"channel":1}"#) }
        #expect(throws: DriverError.self) { try outlets(#"{"id":"shellyemg3-84fce636582c","channels":2}"#) }
        #expect(throws: DriverError.self) { try outlets(#"{"id":"x","channels":"4"}"#) }
    }

    /// Discovery offers what the model has. Failed before: every device was offered `{"gen":…,"id":…}`.
    @Test func discoveryOffersTheModelsSettings() throws {
        let f = ShellyDriverFactory()
        func d(_ topic: String, _ payload: String) -> DiscoveredDevice? {
            f.discover(DriverMQTTMessage(topic: topic, payload: Array(payload.utf8)))
        }
        // Gen1 Shelly 1 (SHSW-1): the announce made of its capture [MB] `shelly1-34945472A643.json`
        // (`settings.mqtt.id`, `shelly.type`, `mac`, `status.wifi_sta.ip`, `shelly.fw`), in the
        // fields every Gen1 announce has (the reference Plug S announce below).
        let shelly1 = try #require(
            d(
                "shellies/announce",
                #"{"id":"shelly1-34945472A643","model":"SHSW-1","mac":"34945472A643","ip":"192.168.1.240","new_fw":false,"fw_ver":"20230913-112003/v1.14.0-gcb84623"}"#
            ))
        #expect(shelly1.settingsJSON == #"{"gen":1,"id":"shelly1-34945472A643","meter":false}"#)
        #expect(try make(shelly1.settingsJSON).capabilities.readings == [])
        let plugS = try #require(
            d(
                "shellies/announce",
                #"{"id":"shellyplug-s-7AB1C2","model":"SHPLG-S","mac":"A4CF127AB1C2","ip":"192.168.1.50","new_fw":false,"fw_ver":"20230913-114008/v1.14.0-gcb84623"}"#
            ))
        #expect(plugS.settingsJSON == #"{"gen":1,"id":"shellyplug-s-7AB1C2"}"#)
        // Gen2+: the default prefix names the model [MB].
        let plus1 = try #require(d("shellyplus1-e465b8f3028c/online", "true"))
        #expect(plus1.settingsJSON == #"{"gen":2,"id":"shellyplus1-e465b8f3028c","meter":false}"#)
        #expect(plus1.hardwareId == "E465B8F3028C")
        #expect(try make(plus1.settingsJSON).capabilities.readings == [])
        let plus1pm = try #require(d("shellyplus1pm-441793d69718/online", "true"))
        #expect(plus1pm.settingsJSON == #"{"gen":2,"id":"shellyplus1pm-441793d69718"}"#)
        #expect(try make(plus1pm.settingsJSON).capabilities.readings == [.power, .voltage, .current, .energy])
        let pro4pm = try #require(d("shellypro4pm-34987a67d7d0/online", "true"))
        #expect(pro4pm.settingsJSON == #"{"channels":4,"gen":2,"id":"shellypro4pm-34987a67d7d0"}"#)
        #expect(try outlets(pro4pm.settingsJSON)?.count == 4)
        let pmMini = try #require(d("shellypmminig3-84fce63957f4/online", "true"))
        #expect(pmMini.settingsJSON == #"{"component":"pm1","gen":2,"id":"shellypmminig3-84fce63957f4"}"#)
        let pro3em = try #require(d("shellypro3em-a0dd6ca0c27c/online", "true"))
        #expect(pro3em.settingsJSON == #"{"component":"em","gen":2,"id":"shellypro3em-a0dd6ca0c27c"}"#)
        // A model the table does not know: the defaults.
        #expect(d("shellyfuture9-aabbccddeeff/online", "true")?.settingsJSON == #"{"gen":2,"id":"shellyfuture9-aabbccddeeff"}"#)
    }

    /// The device's own clock, when it has one (a device that has not synchronised counts from 1970).
    @Test func deviceTimeIsPlausibleOrArrival() {
        let now = 1_788_945_300.0
        #expect(ShellyDriver.deviceTime(.number(1_788_945_292.88), now: now) == 1_788_945_292_880_000)
        #expect(ShellyDriver.deviceTime(.number(1.61), now: now) == nil)
        #expect(ShellyDriver.deviceTime(.number(now + 3600), now: now) == nil)
        #expect(ShellyDriver.deviceTime(.string("x"), now: now) == nil)
        #expect(ShellyDriver.deviceTime(nil, now: now) == nil)
    }
}

/// The same, fed raw on a real broker.
extension ShellyConfiguredTests {
    /// PM Mini Gen3: `pm1:0`, no relay. Failed before: the driver read `switch:0`, so nothing.
    @Test func pmMiniPayloads() async throws {
        try await withBroker { broker in
            let p = "shellypmminig3-84fce63957f4"
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(p)"}"#)
            let raw = try await RawClient(port: broker.port)
            // [MB] shellypmminig3-84FCE63957F4.json, status "pm1:0" (status_ntf on publishes it here).
            try await raw.send(
                "\(p)/status/pm1:0",
                #"{"id":0,"voltage":234.5,"current":0.043,"apower":4.4,"freq":50.1,"aenergy":{"total":73112.963,"by_minute":[0,0,213.298],"minute_ts":1779361680},"ret_aenergy":{"total":0,"by_minute":[0,0,0],"minute_ts":1779361680}}"#
            )
            #expect(await rig.wait { $0.readings(.energy) == [73112.963] })
            #expect(rig.readings(.power) == [4.4])
            #expect(rig.readings(.voltage) == [234.5])
            #expect(rig.readings(.current) == [0.043])
            // A delta [NTF] with the PM Mini's own fields [MB]: only apower and current changed.
            try await raw.send(
                "\(p)/events/rpc",
                #"{"src":"\#(p)","dst":"\#(p)/events","method":"NotifyStatus","params":{"ts":1779361683.27,"pm1:0":{"id":0,"apower":0,"current":0}}}"#
            )
            #expect(await rig.wait { $0.readings(.power) == [4.4, 0] })
            #expect(rig.readings(.voltage) == [234.5])
            #expect(rig.readings(.energy) == [73112.963])
            #expect(rig.stamps(.power).last == 1_779_361_683_270_000)
            // No relay: never a switch state, and switching is refused, saying why.
            #expect(rig.switchStates.isEmpty)
            await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: true)) }
            do {
                try await rig.driver.execute(.setSwitch(on: true))
            } catch {
                #expect("\(error)".contains("pm1:0 is a meter without a relay"))
            }
            await raw.stop()
            await rig.stop()
        }
    }

    /// EM Mini Gen4: `em1:0`, its energy in `em1data:0`. Failed before: nothing read.
    @Test func em1Payloads() async throws {
        try await withBroker { broker in
            let p = "shellyemminig4-d885acef41a8"
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(p)"}"#)
            let raw = try await RawClient(port: broker.port)
            // [MB] shellyemminig4-D885ACEF41A8.json, status "em1:0" and "em1data:0".
            try await raw.send(
                "\(p)/status/em1:0", #"{"id":0,"voltage":233,"current":0.028,"act_power":2.6,"freq":50,"calibration":"factory"}"#)
            try await raw.send("\(p)/status/em1data:0", #"{"id":0,"total_act_energy":58.83,"total_act_ret_energy":0}"#)
            #expect(await rig.wait { $0.readings(.energy) == [58.83] })
            #expect(rig.readings(.power) == [2.6])
            #expect(rig.readings(.voltage) == [233])
            #expect(rig.readings(.current) == [0.028])
            // A delta [NTF] of both components, the capture's fields.
            try await raw.send(
                "\(p)/events/rpc",
                #"{"src":"\#(p)","dst":"\#(p)/events","method":"NotifyStatus","params":{"ts":1779357667.5,"em1:0":{"id":0,"act_power":2.6,"current":0.028},"em1data:0":{"id":0,"total_act_energy":58.83}}}"#
            )
            #expect(await rig.wait { $0.readings(.energy).count == 2 })
            #expect(rig.readings(.voltage) == [233])
            #expect(rig.stamps(.energy).last == 1_779_357_667_500_000)
            #expect(rig.switchStates.isEmpty)
            await #expect(throws: DriverError.self) { try await rig.driver.execute(.setSwitch(on: false)) }
            await raw.stop()
            await rig.stop()
        }
    }

    /// Pro 3EM (triphase): `em:0` and `emdata:0`, read from the `Shelly.GetStatus` the driver asks
    /// for (a meter's readings are in two components). Failed before: it asked `Switch.GetStatus`.
    @Test func emPayloadsFromShellyGetStatus() async throws {
        try await withBroker { broker in
            let p = "shellypro3em-aabbccddeeff"
            let raw = try await RawClient(port: broker.port)
            try raw.client.subscribe("\(p)/rpc", qos: 1)
            try await Task.sleep(for: .milliseconds(100))
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(p)"}"#)
            var method = ""
            for await m in raw.client.messages {
                guard let request = try? JSONValue.parse(m.payload), let src = request["src"]?.stringValue,
                    let id = request["id"]?.doubleValue.map({ Int($0) })
                else { continue }
                method = request["method"]?.stringValue ?? ""
                // [AIO] its `status` (em:0, emdata:0 verbatim; the other components left out).
                try await raw.send(
                    "\(src)/rpc",
                    #"{"id":\#(id),"src":"\#(p)","dst":"\#(src)","result":{"em:0":{"a_act_power":375.5,"a_aprt_power":547.4,"a_current":2.392,"a_freq":50.0,"a_pf":0.76,"a_voltage":229.0,"b_act_power":170.8,"b_aprt_power":237.2,"b_current":1.037,"b_freq":50.0,"b_pf":0.78,"b_voltage":229.0,"c_act_power":12.7,"c_aprt_power":97.8,"c_current":0.428,"c_freq":50.0,"c_pf":0.53,"c_voltage":229.2,"id":0,"n_current":null,"total_act_power":558.965,"total_aprt_power":882.413,"total_current":3.856,"user_calibrated_phase":[]},"emdata:0":{"a_total_act_energy":2034616.71,"a_total_act_ret_energy":0.0,"b_total_act_energy":185686.89,"b_total_act_ret_energy":40.7,"c_total_act_energy":369469.8,"c_total_act_ret_energy":985.91,"id":0,"total_act":2589773.39,"total_act_ret":1026.61}}}"#
                )
                break
            }
            #expect(method == "Shelly.GetStatus")
            #expect(await rig.wait { $0.readings(.energy) == [2589773.39] })
            #expect(rig.readings(.power) == [558.965])
            #expect(rig.readings(.current) == [3.856])
            #expect(rig.readings(.voltage).isEmpty)
            #expect(rig.switchStates.isEmpty)
            await raw.stop()
            await rig.stop()
        }
    }

    /// status_ntf off: only NotifyStatus deltas. A delta with only apower and current keeps the
    /// relay state and the other readings, and its readings carry the device's `ts`. Before: the
    /// relay and readings were kept too, but the readings were stamped on arrival.
    @Test func deltaWithOnlyApowerKeepsTheRelay() async throws {
        try await withBroker { broker in
            let p = "shelly1pmminig3-5432044edbc0"
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(p)"}"#)
            let raw = try await RawClient(port: broker.port)
            // [IOB1592], verbatim: the full status, then the delta the device sent.
            try await raw.send(
                "\(p)/status/switch:0",
                #"{"id":0,"source":"MQTT","tag":null, "output":true, "apower":11.5, "voltage":240.3, "freq":50.0, "current":0.073, "aenergy":{"total":152669.987,"by_minute":[0.000,0.000,0.000],"minute_ts":1788945240}, "ret_aenergy":{"total":0.000,"by_minute":[0.000,0.000,0.000],"minute_ts":1788945240},"counts":{"on_time":44340,"on_time_rst_ts":0,"switch_on":539,"switch_on_rst_ts":0,"on_above_thr":0,"on_above_thr_rst_ts":0},"temperature":{"tC":55.0, "tF":131.0}}"#
            )
            #expect(await rig.wait { $0.switchStates == [true] && $0.readings(.energy) == [152669.987] })
            try await raw.send(
                "\(p)/events/rpc",
                #"{"src":"shelly1pmminig3-5432044edbc0","dst":"shelly1pmminig3-5432044edbc0/events","method":"NotifyStatus","params":{"ts":1788945292.88,"switch:0":{"apower":11.5,"current":0.071}}}"#
            )
            #expect(await rig.wait { $0.readings(.current) == [0.073, 0.071] })
            #expect(rig.switchStates == [true])
            #expect(rig.driver.mergedStatus.output == true)
            #expect(rig.driver.mergedStatus.voltage == 240.3)
            #expect(rig.driver.mergedStatus.energyTotal == 152669.987)
            #expect(rig.readings(.power) == [11.5, 11.5])
            #expect(rig.readings(.voltage) == [240.3])
            #expect(rig.stamps(.power).last == 1_788_945_292_880_000)
            #expect(rig.stamps(.current).last == 1_788_945_292_880_000)
            await raw.stop()
            await rig.stop()
        }
    }

    /// A Plus 2PM under a custom prefix: an aenergy-only delta is the energy at the device's time.
    @Test func energyDeltaUnderACustomPrefix() async throws {
        try await withBroker { broker in
            let p = "shellyplus2pm-Einfahrt"
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(p)"}"#)
            let raw = try await RawClient(port: broker.port)
            // [IOB813], verbatim.
            try await raw.send(
                "\(p)/status/switch:0",
                #"{"id":0, "source":"init", "output":false, "apower":0.0, "voltage":230.8, "freq":50.0, "current":0.000, "pf":0.00, "aenergy":{"total":123.585,"by_minute":[0.000,0.000,0.000],"minute_ts":1698999959},"temperature":{"tC":44.9, "tF":112.9}}"#
            )
            try await raw.send(
                "\(p)/events/rpc",
                #"{"src":"shellyplus2pm-3ce90e2f7c34","dst":"shellyplus2pm-Einfahrt/events","method":"NotifyStatus","params":{"ts":1698999960.13,"switch:0":{"id":0,"aenergy":{"by_minute":[0.000,0.000,0.000],"minute_ts":1698999959,"total":123.585}}}}"#
            )
            #expect(await rig.wait { $0.readings(.energy) == [123.585, 123.585] })
            #expect(rig.stamps(.energy).last == 1_698_999_960_130_000)
            #expect(rig.switchStates == [false])
            #expect(rig.readings(.power) == [0])
            await raw.stop()
            await rig.stop()
        }
    }

    /// NotifyFullStatus of a Pro 4PM [NTF] with its four switches [MB] `shellypro4pm-34987A67D7D0.json`
    /// (status "switch:0" to "switch:3", `ts` its `sys.unixtime`): the entry for channel 1 reads
    /// switch:1 alone. Before: read too, but stamped on arrival.
    @Test func notifyFullStatusOfAPro4PM() async throws {
        try await withBroker { broker in
            let p = "shellypro4pm-34987a67d7d0"
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(p)","channel":1}"#)
            let raw = try await RawClient(port: broker.port)
            try await raw.send(
                "\(p)/events/rpc",
                #"{"src":"\#(p)","dst":"\#(p)/events","method":"NotifyFullStatus","params":{"ts":1779361623,"switch:0":{"id":0,"source":"init","output":true,"apower":20.7,"voltage":232.6,"freq":50,"current":0.185,"pf":0.49,"aenergy":{"total":282212.208,"by_minute":[356.924,358.003,357.914],"minute_ts":1779361620},"ret_aenergy":{"total":0,"by_minute":[0,0,0],"minute_ts":1779361620},"temperature":{"tC":57.4,"tF":135.4}},"switch:1":{"id":1,"source":"init","output":true,"apower":6.3,"voltage":232.5,"freq":50,"current":0.064,"pf":0.63,"aenergy":{"total":97722.261,"by_minute":[107.155,107.39,107.361],"minute_ts":1779361620},"ret_aenergy":{"total":0,"by_minute":[0,0,0],"minute_ts":1779361620},"temperature":{"tC":57.4,"tF":135.4}},"switch:2":{"id":2,"source":"init","output":true,"apower":4.5,"voltage":230.6,"freq":50,"current":0.054,"pf":0.59,"aenergy":{"total":61354.393,"by_minute":[69.63,70.133,70.133],"minute_ts":1779361620},"ret_aenergy":{"total":0,"by_minute":[0,0,0],"minute_ts":1779361620},"temperature":{"tC":57.4,"tF":135.4}},"switch:3":{"id":3,"source":"init","output":true,"apower":2.5,"voltage":230.6,"freq":50,"current":0.04,"pf":0.26,"aenergy":{"total":36615.633,"by_minute":[41.683,42.256,42.213],"minute_ts":1779361620},"ret_aenergy":{"total":0,"by_minute":[0,0,0],"minute_ts":1779361620},"temperature":{"tC":57.4,"tF":135.4}}}}"#
            )
            #expect(await rig.wait { $0.readings(.energy) == [97722.261] })
            #expect(rig.switchStates == [true])
            #expect(rig.readings(.power) == [6.3])
            #expect(rig.readings(.voltage) == [232.5])
            #expect(rig.readings(.current) == [0.064])
            #expect(rig.stamps(.energy) == [1_779_361_623_000_000])
            await raw.stop()
            await rig.stop()
        }
    }

    /// A Plus 1 (no meter): its status says output and temperature only; nothing is a reading.
    @Test func plus1StatusReadsTheRelayOnly() async throws {
        try await withBroker { broker in
            let p = "shellyplus1-e465b8f3028c"
            let rig = try await ShellyRig.start(broker: broker, settings: #"{"id":"\#(p)"}"#)
            let raw = try await RawClient(port: broker.port)
            // [MB] shellyplus1-E465B8F3028C.json, status "switch:0", with output on.
            try await raw.send("\(p)/status/switch:0", #"{"id":0,"source":"init","output":true,"temperature":{"tC":38,"tF":100.4}}"#)
            #expect(await rig.wait { $0.switchStates == [true] })
            #expect(rig.driver.mergedStatus.temperatureC == 38)
            #expect(rig.observations.allSatisfy { if case .reading = $0 { return false } else { return true } })
            await raw.stop()
            await rig.stop()
        }
    }
}
