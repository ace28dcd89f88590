import BeaconBridge
import DriverAPI
import Foundation
import Testing

@Suite struct BeaconParserTests {
    let parser = BeaconParser(gatewayRooms: ["gw1": "ward"])

    func parse(_ topic: String, _ payload: String, _ p: BeaconParser? = nil) -> Result<BeaconObservation, BeaconDropReason> {
        (p ?? parser).parse(topic: topic, payload: Array(payload.utf8))
    }

    func ok(_ topic: String, _ payload: String, _ p: BeaconParser? = nil) throws -> BeaconObservation {
        try parse(topic, payload, p).get()
    }

    @Test func espresenseCurrentFirmware() throws {
        let o = try ok(
            "espresense/devices/apple:1006:10-12/kitchen",
            #"{"mac":"67518126293a","id":"apple:1006:10-12","rssi@1m":-65,"rssi":-84.77,"rxAdj":0,"rssiVar":9.56,"distance":2.49,"var":0.16,"int":626}"#
        )
        #expect(o == BeaconObservation(beacon: "apple:1006:10-12", room: "kitchen", distance: 2.49, rssi: -84.77, format: .espresense))
    }

    @Test func espresenseOlderFirmware() throws {
        let o = try ok(
            "espresense/devices/244b03d72780/office",
            #"{"id":"244b03d72780","idType":55,"rssi@1m":-71,"rssi":-84,"raw":2.35,"distance":2.25,"speed":0.02,"mac":"244b03d72780","interval":615}"#
        )
        #expect(o == BeaconObservation(beacon: "244b03d72780", room: "office", distance: 2.25, rssi: -84, format: .espresense))
    }

    @Test func openMQTTGatewayIBeacon() throws {
        let o = try ok(
            "home/gw1/BTtoMQTT/6087574C9BC2",
            #"{"id":"60:87:57:4C:9B:C2","mac_type":1,"rssi":-78,"distance":7.85288,"brand":"GENERIC","model":"iBeacon","model_id":"IBEACON","mfid":"4c00","uuid":"1de4b189115e45f6b44e509352269977","major":0,"minor":0,"txpower":-66}"#
        )
        #expect(
            o
                == BeaconObservation(
                    beacon: "1de4b189115e45f6b44e509352269977", room: "ward", distance: 7.85288, rssi: -78, format: .openMQTTGateway))
    }

    @Test func theengsWithoutDistanceUsesTxPower() throws {
        let o = try ok(
            "home/TheengsGateway/BTtoMQTT/6087574C9BC2",
            #"{"id":"60:87:57:4C:9B:C2","rssi":-78,"brand":"GENERIC","model":"iBeacon","model_id":"IBEACON","mfid":"4c00","uuid":"1DE4B189-115E-45F6-B44E-509352269977","major":3,"minor":7,"txpower":-66}"#
        )
        #expect(o.beacon == "1de4b189115e45f6b44e509352269977-3-7")
        #expect(o.room == "TheengsGateway")  // not in gateway_rooms: its own name
        #expect(o.format == .theengs)
        #expect(abs(o.distance - pow(10, 12.0 / 27)) < 1e-9)  // 2.78 m
    }

    @Test func espresenseIBeaconIdMapsToTheGatewayIdentity() throws {
        let plain = try ok(
            "espresense/devices/x/hall", #"{"id":"iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0","rssi":-70,"rssi@1m":-59}"#)
        #expect(plain.beacon == "1de4b189115e45f6b44e509352269977")
        #expect(abs(plain.distance - pow(10, 11.0 / 27)) < 1e-9)  // computed from rssi@1m
        let numbered = try ok("espresense/devices/iBeacon:1de4b189-115e-45f6-b44e-509352269977-3-7/hall", #"{"rssi":-70}"#)
        #expect(numbered.beacon == "1de4b189115e45f6b44e509352269977-3-7")  // id from the topic
        #expect(abs(numbered.distance - pow(10, 11.0 / 27)) < 1e-9)  // -59 default
    }

    @Test func configuredIds() throws {
        let p = BeaconParser(beaconIds: [
            "24:4B:03:D7:27:80": "collar-7", "apple:1006:10-12": "phone-ann",
            "1DE4B189-115E-45F6-B44E-509352269977": "rex"
        ])
        #expect(try ok("espresense/devices/244b03d72780/office", #"{"id":"244b03d72780","rssi":-80}"#, p).beacon == "collar-7")
        #expect(try ok("espresense/devices/a/office", #"{"id":"apple:1006:10-12","rssi":-80}"#, p).beacon == "phone-ann")
        #expect(
            try ok(
                "home/gw/BTtoMQTT/AABBCCDDEEFF",
                #"{"id":"AA:BB:CC:DD:EE:FF","rssi":-80,"uuid":"1de4b189115e45f6b44e509352269977","major":0,"minor":0}"#, p
            ).beacon == "rex")
        // A plain BLE device without uuid: its MAC.
        #expect(try ok("home/gw/BTtoMQTT/AABBCCDDEEFF", #"{"id":"AA:BB:CC:DD:EE:FF","rssi":-80}"#, p).beacon == "aabbccddeeff")
    }

    @Test func customPrefixes() throws {
        let p = BeaconParser(espresensePrefix: "site/esp", gatewayPrefix: "omg")
        #expect(try ok("site/esp/devices/b1/lab", #"{"rssi":-60}"#, p).room == "lab")
        #expect(try ok("omg/g/BTtoMQTT/aa", #"{"rssi":-60}"#, p).room == "g")
        #expect(parse("espresense/devices/b1/lab", #"{"rssi":-60}"#, p) == .failure(.topic))
    }

    @Test func garbageIsDropped() {
        let junk = String(repeating: "x", count: 65_536)
        let cases: [(String, String, BeaconDropReason)] = [
            ("espresense/devices/b/room", "not json", .notJSON),
            ("espresense/devices/b/room", "[1,2]", .notJSON),
            ("espresense/devices/b/room", "", .notJSON),
            ("espresense/devices/b/room", #"{"rssi":NaN}"#, .notJSON),
            ("espresense/devices/b/room", #"{"rssi":"-70"}"#, .badSignal),
            ("espresense/devices/b/room", #"{"rssi":true}"#, .badSignal),
            ("espresense/devices/b/room", #"{"rssi":50}"#, .badSignal),
            ("espresense/devices/b/room", #"{"rssi":-500}"#, .badSignal),
            ("espresense/devices/b/room", #"{"rssi":-70,"distance":-1}"#, .badSignal),
            ("espresense/devices/b/room", #"{"rssi":-70,"distance":1e300}"#, .badSignal),
            ("espresense/devices/b/room", #"{"id":"b"}"#, .badSignal),
            ("espresense/devices/b/room", #"{"id":12,"rssi":-70}"#, .noIdentity),
            ("espresense/devices/b/room", junk, .tooLarge),
            ("espresense/devices/b/room", "{" + junk, .tooLarge),
            ("espresense/devices/b", #"{"rssi":-70}"#, .topic),
            ("espresense/devices//room", #"{"rssi":-70}"#, .topic),
            ("espresense/devices/b/room/extra", #"{"rssi":-70}"#, .topic),
            ("home/gw/BTtoMQTT", #"{"rssi":-70}"#, .topic),
            ("home//BTtoMQTT/aa", #"{"rssi":-70}"#, .topic),
            ("home/gw/other/aa", #"{"rssi":-70}"#, .topic),
            ("home/gw/BTtoMQTT/aa", #"{"rssi":-70,"uuid":42}"#, .noIdentity),
            ("home/gw/BTtoMQTT/aa", #"{"rssi":-70,"uuid":"abc"}"#, .noIdentity),
            ("home/gw/BTtoMQTT/aa", #"{"rssi":-70,"uuid":"1de4b189115e45f6b44e509352269977","major":-1}"#, .noIdentity),
            ("home/gw/BTtoMQTT/aa", #"{"rssi":{"a":1}}"#, .badSignal)
        ]
        for (topic, payload, reason) in cases {
            #expect(parse(topic, payload) == .failure(reason), "\(topic) \(payload.prefix(40))")
        }
        // Binary junk.
        var bytes = [UInt8](repeating: 0, count: 1000)
        for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 7919) }
        #expect((try? parser.parse(topic: "espresense/devices/b/r", payload: bytes).get()) == nil)
    }

    @Test func distanceModel() {
        #expect(BeaconParser.distance(rssi: -59, measuredPower: -59, pathLoss: 2.7) == 1)
        #expect(abs(BeaconParser.distance(rssi: -86, measuredPower: -59, pathLoss: 2.7) - 10) < 1e-9)
    }
}

@Suite struct BeaconSettingsTests {
    @Test func defaults() throws {
        let s = try BeaconSettings(json: "")
        #expect(s == BeaconSettings())
        #expect(s.mqttScope == ["espresense/devices/#", "home/+/BTtoMQTT/#"])
        #expect(s.hysteresis == .metres(1.0) && s.confirmations == 2 && s.maxBeacons == 5000)
        #expect(s.unseenSeconds == 300 && s.presentEverySeconds == 30 && s.windowSeconds == 10 && s.pathLoss == 2.7)
    }

    @Test func allKeys() throws {
        let s = try BeaconSettings(
            json:
                #"{"espresense_prefix":"esp","gateway_prefix":"omg","gateway_rooms":{"gw1":"ward"},"beacon_ids":{"aa":"rex"},"path_loss":3,"window_seconds":5,"hysteresis_db":3,"hysteresis_confirmations":3,"unseen_seconds":60,"present_every_seconds":10,"max_beacons":100}"#
        )
        #expect(s.mqttScope == ["esp/devices/#", "omg/+/BTtoMQTT/#"])
        #expect(s.gatewayRooms == ["gw1": "ward"] && s.beaconIds == ["aa": "rex"])
        #expect(s.hysteresis == .decibels(3) && s.confirmations == 3 && s.maxBeacons == 100 && s.pathLoss == 3)
        let bridge = try BeaconBridgeFactory().make(settingsJSON: #"{"gateway_prefix":"omg"}"#)
        #expect(bridge.mqttScope == ["espresense/devices/#", "omg/+/BTtoMQTT/#"])
        #expect(BeaconBridgeFactory().name == "beacons")
    }

    @Test func errors() {
        for bad in [
            #"{"unknown":1}"#, #"{"hysteresis_m":1,"hysteresis_db":2}"#, #"{"gateway_rooms":["a"]}"#,
            #"{"beacon_ids":{"a":1}}"#, #"{"max_beacons":0}"#, #"{"path_loss":"x"}"#, #"{"gateway_prefix":"a/+"}"#,
            "[]", "nope", #"{"unseen_seconds":-1}"#
        ] {
            #expect(throws: DriverError.self, "\(bad)") { try BeaconSettings(json: bad) }
        }
    }
}
