import BeaconBridge
import BeaconSimulator
import BrokerHarness
import DriverAPI
import Foundation
import HubDomain
import PowerPlug
import PowerPlugSimulator
import Shelly
import ShellySimulator
import Tasmota
import TasmotaSimulator
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// MQTT-native devices and beacon bridges through the hub's own broker connection.
@Suite(.serialized) struct MQTTDeviceSurfaceTests {
    static let factories: [any DriverFactory] = [VirtualDriverFactory(), ShellyDriverFactory(), TasmotaDriverFactory()]

    /// A broker, a simulated Tasmota plug on topic `plug7`, and a hub that registered it (over MQTT)
    /// as `lamp7` and sees it online. `devices` are the hub's configured devices (default: a lamp).
    func hubWithTasmotaPlug7(
        loadWatts: Double? = nil,
        devices: [HubConfig.Device] = [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp", config: "{}")]
    )
        async throws -> (TasmotaSimulator, SurfaceFixture)
    {
        let broker = try TestBroker.start()
        var options = TasmotaSimulator.Options(port: broker.port, topic: "plug7", telePeriod: 0.3)
        if let loadWatts { options.loadWatts = loadWatts }
        let sim = TasmotaSimulator(options: options)
        try await sim.start()
        let f = try await SurfaceFixture.start(broker: broker, devices: devices, factories: Self.factories)
        try await f.watcher.waitFor("hub/status") { $0 == "online" }
        try f.watcher.publish("hub/request/device/add", #"{"id":"lamp7","driver":"tasmota","name":"Lamp 7","config":{"topic":"plug7"}}"#)
        try await f.watcher.waitFor("hub/device/lamp7/availability") { $0 == "online" }
        return (sim, f)
    }

    @Test func tasmotaThroughTheHub() async throws {
        let (sim, f) = try await hubWithTasmotaPlug7(loadWatts: 3_600_000, devices: [])
        let w = f.watcher
        try w.publish("hub/device/lamp7/switch/set", "ON")
        try await w.waitFor("hub/device/lamp7/switch") { $0 == "ON" }
        #expect(sim.relayOn == [true])
        let confirmed = try await w.waitFor("hub/events/device/lamp7/SwitchToggled") { $0.contains(#""state":"on""#) }
        #expect(confirmed.contains(#""cause":"command""#) && confirmed.contains(#""actor":"driver:tasmota""#))
        // A megawatt-hour an hour: the energy ledger moves within the test (Tasmota Total kWh -> Wh).
        try await w.waitFor("hub/device/lamp7/energy", timeout: .seconds(10)) { (Double($0) ?? 0) > 0.1 }
        // Power cycle: the last will says Offline, then Online again.
        try await sim.restart()
        try await w.waitFor("hub/device/lamp7/availability") { $0 == "offline" }
        let seen = w.messages("hub/device/lamp7/availability").count
        try await w.waitFor("hub/device/lamp7/availability", timeout: .seconds(10), skip: seen) { $0 == "online" }
        await sim.stop()
        try await f.stop()
    }

    @Test func shellyThroughTheHubAndDiscovery() async throws {
        let broker = try TestBroker.start()
        let gen2 = ShellySimulator(options: ShellySimulator.Options(port: broker.port, gen: 2, loadWatts: 120, statusPeriod: 0.3))
        try await gen2.start()
        let gen1 = ShellySimulator(options: ShellySimulator.Options(port: broker.port, gen: 1, statusPeriod: 0.3))
        try await gen1.start()
        let f = try await SurfaceFixture.start(broker: broker, devices: [], factories: Self.factories)
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }

        // Both plugs announced themselves: offered for adoption, not added.
        let deadline = ContinuousClock.now + .seconds(8)
        var listed = ""
        while ContinuousClock.now < deadline {
            let before = w.messages("hub/response/discovered").count
            try w.publish("hub/request/discovered", "")
            listed = try await w.waitFor("hub/response/discovered", skip: before)
            if listed.contains(gen2.deviceId) && listed.contains(gen1.deviceId) { break }
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(listed.contains(#""driver":"shelly""#) && listed.contains(gen2.deviceId), "\(listed)")
        #expect(await f.service.hub.state.devices.active.isEmpty)

        try w.publish(
            "hub/request/device/add", #"{"id":"boiler","driver":"shelly","name":"Boiler","config":{"id":"\#(gen2.deviceId)","gen":2}}"#)
        try await w.waitFor("hub/device/boiler/availability") { $0 == "online" }
        try w.publish("hub/device/boiler/switch/set", "ON")
        try await w.waitFor("hub/device/boiler/switch") { $0 == "ON" }
        #expect(gen2.relayOn)
        try await w.waitFor("hub/device/boiler/power") { (Double($0) ?? 0) > 100 }
        // Pressed at the device: reported, not a command.
        gen2.press()
        let manual = try await w.waitFor("hub/events/device/boiler/SwitchToggled") { $0.contains(#""state":"off""#) }
        #expect(manual.contains(#""cause":"device_report""#))
        // Adopted: no longer offered.
        let before = w.messages("hub/response/discovered").count
        try w.publish("hub/request/discovered", "")
        let after = try await w.waitFor("hub/response/discovered", skip: before)
        #expect(!after.contains(gen2.deviceId) && after.contains(gen1.deviceId), "\(after) / before: \(listed)")

        await gen2.stop()
        try await w.waitFor("hub/device/boiler/availability") { $0 == "offline" }
        await gen1.stop()
        try await f.stop()
    }

    /// A Shelly Gen1 with its MQTT "retain" option on publishes every message retained (the Gen1
    /// firmware's `mqtt_retain` setting: shelly-api-docs.shelly.cloud/gen1, "Settings", `mqtt_retain`;
    /// the topics and units as docs/drivers.md and ../shared/reference/mqtt-plugs.md give them:
    /// `shellies/<id>/relay/0/power` in W, `.../energy` in watt-minutes). Its live messages are
    /// readings; what the broker had stored before the hub subscribed is its last known state, never
    /// a reading of now. (Failed before: the hub's one connection subscribed with retain as
    /// published, so every live message of such a device looked retained and no reading was booked.)
    @Test func aShellyThatRetainsItsMessagesGivesLiveReadingsNotStoredOnes() async throws {
        let broker = try TestBroker.start()
        let f = try await SurfaceFixture.start(broker: broker, devices: [], factories: Self.factories)
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        let id = "shelly1pm-84CCA8A11B2C"
        // Stored at the broker before the hub subscribes: an old power figure and the relay's state.
        try w.publish("shellies/\(id)/online", "true", retain: true)
        try w.publish("shellies/\(id)/relay/0", "on", retain: true)
        try w.publish("shellies/\(id)/relay/0/power", "999.5", retain: true)
        try w.publish(
            "hub/request/device/add", #"{"id":"heater","driver":"shelly","name":"Heater","config":{"id":"\#(id)","gen":1}}"#)
        try await w.waitFor("hub/device/heater/availability") { $0 == "online" }
        try await w.waitFor("hub/device/heater/switch") { $0 == "ON" }
        // Live, and retained as this firmware sends everything.
        try w.publish("shellies/\(id)/relay/0/power", "42.5", retain: true)
        try await w.waitFor("hub/device/heater/power", timeout: .seconds(10)) { Double($0) == 42.5 }
        try w.publish("shellies/\(id)/relay/0/energy", "6000", retain: true)  // 6000 Wmin = 100 Wh
        try await waitUntil("the live energy reading is booked") {
            await f.service.hub.state.devices.byId["heater"]?.lastReading(.energy)?.value == 100
        }
        let device = await f.service.hub.state.devices.byId["heater"]
        #expect(device?.lastReading(.power)?.value == 42.5, "\(String(describing: device))")
        let stored = w.messages("hub/device/heater/power").filter { Double(w.text($0)) == 999.5 }
        #expect(stored.isEmpty, "a stored figure was booked as a reading of now")
        try await f.stop()
    }

    @Test func beaconsBecomeSightingsOfAdmittedAnimalsOnly() async throws {
        let broker = try TestBroker.start()
        var options = BeaconSimulator.Options()
        options.port = broker.port
        options.animals = 3
        options.rooms = 3
        options.rate = 5
        options.moveEverySeconds = 0
        let sim = BeaconSimulator(options: options)
        let f = try await SurfaceFixture.start(broker: broker, devices: [], factories: Self.factories)
        // `hub run` passes the bridge factory to the service; here the test starts it the same way.
        let bridge = Task {
            await f.service.bridges.run(
                BeaconBridgeFactory(), settingsJSON: #"{"window_seconds":2,"unseen_seconds":2,"present_every_seconds":1}"#)
        }
        defer { bridge.cancel() }
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        let admitted = sim.beaconIds[0]
        try w.publish(
            "hub/animal/admit", #"{"id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"beacon":"\#(admitted)","owner_name":"Ana"}"#)
        try await w.waitFor("hub/response/animal/admit") { $0.contains(#""status":"ok""#) }
        sim.place(animal: 0, room: 1)
        sim.place(animal: 1, room: 2)
        try await sim.start()
        let sighted = try await w.waitFor("hub/events/animal/rex/AnimalSighted", timeout: .seconds(10))
        #expect(sighted.contains(#""actor":"bridge:beacons""#))
        try await w.waitFor("hub/animal/rex/state", timeout: .seconds(10)) {
            $0.contains(#""room":"\#(sim.roomNames[1])""#) && $0.contains(#""present":true"#)
        }
        // The other beacons are counted and listed, never logged (asked again until the bridge has
        // heard the second beacon: on a loaded machine its first observation may come later).
        var unknown = ""
        try await waitUntil("the second beacon to be listed as unknown") {
            let before = w.messages("hub/response/beacons/unknown").count
            try w.publish("hub/request/beacons/unknown", "")
            unknown = try await w.waitFor("hub/response/beacons/unknown", skip: before)
            return unknown.contains(sim.beaconIds[1])
        }
        #expect(unknown.contains(sim.beaconIds[1]), "\(unknown)")
        #expect(
            w.received.withLock {
                $0.filter { $0.topic.hasPrefix("hub/events/") && $0.topic.contains("Sighted") && !$0.topic.contains("/rex/") }.isEmpty
            })
        // Out of every node's range: unseen after the configured silence.
        sim.place(animal: 0, room: nil)
        let unseen = try await w.waitFor("hub/events/animal/rex/AnimalUnseen", timeout: .seconds(15))
        #expect(unseen.contains(#""last_room":"\#(sim.roomNames[1])""#))
        try await w.waitFor("hub/animal/rex/state") { $0.contains(#""present":false"#) }
        // Owner data stays off the broker, sealed in the event.
        #expect(
            w.received.withLock {
                $0.filter { $0.topic != "hub/animal/admit" }.allSatisfy { !String(decoding: $0.payload, as: UTF8.self).contains("\"Ana\"") }
            })
        await sim.stop()
        try await f.stop()
    }

    /// Home Assistant's view, read as it reads it (the retained config topics, by a client that
    /// subscribes afterwards): the seed's TCP plug, which has no meter, gets a switch and no power or
    /// energy sensor (those an older hub left retained are cleared); a Tasmota plug gets power,
    /// energy, voltage and current; a scene is a `scene` entity whose command the hub carries out.
    @Test func discoveryOffersWhatTheDriverReportsAndScenesToPress() async throws {
        let broker = try TestBroker.start()
        // What an older hub announced for the TCP plug: sensors that stay "unknown" for ever.
        let older = try await Watcher(port: broker.port, filters: [])
        for q in ["power", "energy"] {
            try older.publish(
                "homeassistant/sensor/hub/pump_\(q)/config",
                #"{"name":"\#(q)","unique_id":"hub_pump_\#(q)","state_topic":"hub/device/pump/\#(q)"}"#, retain: true)
        }
        let plug = PowerPlugSimulator(
            options: PowerPlugSimulator.Options(
                port: 0, stateFile: temporaryDirectory() + "/plug.state",
                statusInterval: .milliseconds(300), checkInterval: .seconds(60)))
        let port = try await plug.start()
        let tasmota = TasmotaSimulator(options: TasmotaSimulator.Options(port: broker.port, topic: "plug7", telePeriod: 0.3, loadWatts: 60))
        try await tasmota.start()
        let f = try await SurfaceFixture.start(
            broker: broker,
            devices: [
                HubConfig.Device(id: "pump", driver: "powerplug", name: "Pump", config: #"{"host":"127.0.0.1","port":\#(port)}"#),
                HubConfig.Device(id: "lamp7", driver: "tasmota", name: "Lamp 7", config: #"{"topic":"plug7"}"#)
            ], factories: Self.factories + [PowerPlugDriverFactory()])
        let w = f.watcher
        try await w.waitFor("hub/device/pump/availability") { $0 == "online" }
        try await w.waitFor("hub/device/lamp7/voltage", timeout: .seconds(10)) { (Double($0) ?? 0) > 100 }
        try await w.waitFor("hub/device/lamp7/current") { Double($0) != nil }
        for q in ["power", "energy"] { try await w.waitFor("homeassistant/sensor/hub/pump_\(q)/config") { $0.isEmpty } }

        // A scene, and what Home Assistant now holds.
        try w.publish("hub/request/scene/define", #"{"id":"evening","name":"Evening","states":{"lamp7":"ON","pump":"OFF"}}"#)
        try await w.waitFor("hub/response/scene/define") { $0.contains(#""status":"ok""#) }
        try await w.waitFor("homeassistant/scene/hub/scene_evening/config")
        let ha = try await Watcher(port: broker.port, filters: ["homeassistant/#"])
        try ha.publish("homeassistant/marker", "after the retained ones")
        try await ha.waitFor("homeassistant/marker")
        let configs = ha.received.withLock { $0.filter { $0.retain && !$0.payload.isEmpty }.map(\.topic) }
        let pump = configs.filter { $0.contains("/pump_") }.sorted()
        #expect(pump == ["homeassistant/switch/hub/pump_switch/config"], "\(configs)")
        let lamp = configs.filter { $0.contains("/lamp7_") }.sorted()
        #expect(
            lamp == [
                "homeassistant/sensor/hub/lamp7_current/config", "homeassistant/sensor/hub/lamp7_energy/config",
                "homeassistant/sensor/hub/lamp7_power/config", "homeassistant/sensor/hub/lamp7_voltage/config",
                "homeassistant/switch/hub/lamp7_switch/config"
            ], "\(configs)")
        let voltage = try JSONValue.parse(Array(try await ha.waitFor("homeassistant/sensor/hub/lamp7_voltage/config").utf8))
        #expect(voltage["device_class"] == "voltage" && voltage["unit_of_measurement"] == "V" && voltage["state_class"] == "measurement")
        #expect(voltage["state_topic"] == "hub/device/lamp7/voltage", "\(voltage)")
        let current = try JSONValue.parse(Array(try await ha.waitFor("homeassistant/sensor/hub/lamp7_current/config").utf8))
        #expect(
            current["device_class"] == "current" && current["unit_of_measurement"] == "A"
                && current["state_topic"] == "hub/device/lamp7/current")

        // Pressing the scene in Home Assistant: its payload on its command topic.
        let scene = try JSONValue.parse(Array(try await ha.waitFor("homeassistant/scene/hub/scene_evening/config").utf8))
        #expect(scene["name"] == .null && scene["device"]?["name"] == "Evening", "\(scene)")
        let command = try #require(scene["command_topic"]?.stringValue), payload = try #require(scene["payload_on"]?.stringValue)
        try ha.publish(command, payload)
        try await w.waitFor("hub/device/lamp7/switch") { $0 == "ON" }
        #expect(tasmota.relayOn.last == true)
        // Removed: its entity goes.
        try w.publish("hub/request/scene/remove", #"{"id":"evening"}"#)
        try await w.waitFor("homeassistant/scene/hub/scene_evening/config") { $0.isEmpty }
        await ha.stop()
        await older.stop()
        await tasmota.stop()
        await plug.stop()
        try await f.stop()
    }

    /// A collar heard before its animal is admitted (a clinic's reception) is placed at admission,
    /// without waiting for it to change rooms: ESPresense messages as a room node publishes them,
    /// one admission with the id the bridge lists (the Discovered page's "Admit an animal with it"),
    /// one typed as the console's form suggests (`uuid/major/minor`).
    @Test func aCollarHeardBeforeAdmissionIsPlacedAtAdmission() async throws {
        let broker = try TestBroker.start()
        let f = try await SurfaceFixture.start(broker: broker, devices: [], factories: Self.factories)
        // `present` at most once a minute: only the admission can place the animal within the test.
        let bridge = Task { await f.service.bridges.run(BeaconBridgeFactory(), settingsJSON: #"{"present_every_seconds":60}"#) }
        defer { bridge.cancel() }
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        // Two collars at reception: tom's (major = minor = 0) and rex's (major 1, minor 2).
        let collars = ["iBeacon:2ce4b189-115e-45f6-b44e-509352269977-0-0", "iBeacon:1de4b189-115e-45f6-b44e-509352269977-1-2"]
        let node = Task {
            while !Task.isCancelled {
                for id in collars {
                    try? w.publish(
                        "espresense/devices/\(id)/reception",
                        #"{"mac":"67518126293a","id":"\#(id)","rssi@1m":-65,"rssi":-70.5,"distance":1.2}"#)
                }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        defer { node.cancel() }
        // Heard, and nobody wears them yet.
        let deadline = ContinuousClock.now + .seconds(10)
        var unknown = ""
        while !(unknown.contains("-1-2") && unknown.contains("2ce4b189")) && ContinuousClock.now < deadline {
            let before = w.messages("hub/response/beacons/unknown").count
            try w.publish("hub/request/beacons/unknown", "")
            unknown = try await w.waitFor("hub/response/beacons/unknown", skip: before)
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(unknown.contains(#""beacon":"2ce4b189115e45f6b44e509352269977","room":"reception""#), "\(unknown)")
        #expect(unknown.contains(#""beacon":"1de4b189115e45f6b44e509352269977-1-2","room":"reception""#), "\(unknown)")

        // Admitted with the id the bridge lists.
        try w.publish(
            "hub/animal/admit", #"{"id":"tom","name":"Tom","species":"cat","weight_kg":4.2,"beacon":"2ce4b189115e45f6b44e509352269977"}"#)
        try await w.waitFor("hub/response/animal/admit") { $0.contains(#""status":"ok""#) }
        let tom = try await w.waitFor("hub/events/animal/tom/AnimalSighted", timeout: .seconds(5))
        #expect(tom.contains(#""room":"reception""#) && tom.contains(#""actor":"bridge:beacons""#), "\(tom)")
        try await w.waitFor("hub/animal/tom/state") { $0.contains(#""room":"reception""#) && $0.contains(#""present":true"#) }

        // Admitted with the id typed as the admission form suggests.
        try w.publish(
            "hub/animal/admit",
            #"{"id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"beacon":"1DE4B189-115E-45F6-B44E-509352269977/1/2"}"#)
        let admitted = try await w.waitFor("hub/response/animal/admit", skip: 1)
        #expect(
            admitted.contains(#""status":"ok""#) && admitted.contains(#""beacon":"1de4b189115e45f6b44e509352269977-1-2""#), "\(admitted)")
        let rex = try await w.waitFor("hub/events/animal/rex/AnimalSighted", timeout: .seconds(5))
        #expect(rex.contains(#""room":"reception""#), "\(rex)")

        // Neither is listed as unknown any more.
        let before = w.messages("hub/response/beacons/unknown").count
        try w.publish("hub/request/beacons/unknown", "")
        #expect(try await w.waitFor("hub/response/beacons/unknown", skip: before).contains(#""data":[]"#))
        node.cancel()
        try await f.stop()
    }

    /// A query whose MQTT 5 response topic is a command topic (the hub's own, or a device's)
    /// is refused with an error on its own response topic; nothing is published there, nothing runs.
    @Test func responseTopicsWhereCommandsAreReadAreRefused() async throws {
        let (sim, f) = try await hubWithTasmotaPlug7()
        let w = f.watcher
        try w.publish("hub/device/lamp/switch/set", "ON")
        try await w.waitFor("hub/device/lamp/switch") { $0 == "ON" }
        let commandsToPlug7 = w.messages("cmnd/plug7/POWER").count

        for (index, target) in ["hub/request/all-off", "cmnd/plug7/POWER", "hub/device/lamp/switch/set"].enumerated() {
            let seen = w.messages("hub/response/device/get").count
            try w.client.publish(
                "hub/request/device/get", Array(#"{"id":"lamp","transaction":"t-\#(index)"}"#.utf8), qos: 1,
                responseTopic: target, correlationData: [7])
            let refusal = try await w.waitFor("hub/response/device/get", skip: seen)
            #expect(refusal.hasPrefix(#"{"status":"error","error":"response topic \"\#(target)\" is refused: "#), "\(refusal)")
            #expect(refusal.hasSuffix(#""id":"lamp","transaction":"t-\#(index)"}"#), "\(refusal)")
        }
        // A reply topic of the client's own is still answered there, with the correlation data.
        try w.client.publish(
            "hub/request/device/get", Array(#"{"id":"lamp"}"#.utf8), qos: 1, responseTopic: "app/replies/1", correlationData: [9])
        let answer = try await w.waitFor("app/replies/1")
        #expect(answer.hasPrefix(#"{"status":"ok","data":{"id":"lamp""#) && w.messages("app/replies/1").first?.correlationData == [9])
        // Nothing was published where commands are read, and nothing ran.
        #expect(w.messages("hub/request/all-off").isEmpty)
        #expect(w.messages("hub/device/lamp/switch/set").count == 1)
        #expect(w.messages("cmnd/plug7/POWER").count == commandsToPlug7)
        #expect(await f.service.hub.state.devices["lamp"]?.switchState == .on)
        #expect(w.messages("hub/events/hub/MultiSwitchRequested").isEmpty)
        await sim.stop()
        try await f.stop()
    }
}
