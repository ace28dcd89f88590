import BeaconBridge
import BeaconSimulator
import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import Synchronization
import Testing

/// A bridge reading a real mosquitto through `ClientDriverMQTT` (subscribed to the bridge's scope,
/// as the hub does), reporting to a `CollectingBridgeContext`.
struct BridgeRig {
    let broker: TestBroker
    let mqtt: ClientDriverMQTT
    let bridge: BeaconBridge
    let context: CollectingBridgeContext
    let running: Running

    static func make(_ settingsJSON: String) async throws -> BridgeRig {
        let broker = try await TestBroker.startAsync()
        let bridge = BeaconBridge(settings: try BeaconSettings(json: settingsJSON), checkInterval: .milliseconds(250))
        let mqtt = try await ClientDriverMQTT(port: broker.port, scope: bridge.mqttScope)
        for filter in bridge.mqttScope { try mqtt.subscribe(filter) }
        let context = CollectingBridgeContext(mqtt: mqtt)
        let running = await Running(bridge, context: context)
        // Probe until the subscription is active: a foreign-but-in-scope message counted as dropped.
        let probe = try MQTTClient(
            options: MQTTOptions(port: broker.port, clientId: "probe-\(UUID().uuidString.prefix(6))", cleanSession: true))
        try probe.start()
        try await probe.waitUntilConnected(timeout: .seconds(5))
        let deadline = ContinuousClock.now + .seconds(10)
        while bridge.counters.messages == 0 && ContinuousClock.now < deadline {
            try probe.publish("home/probe/BTtoMQTT/x", Array("probe".utf8), qos: 1)
            try await Task.sleep(for: .milliseconds(50))
        }
        await probe.stop()
        try await Task.sleep(for: .milliseconds(100))
        #expect(bridge.counters.messages > 0)
        return BridgeRig(broker: broker, mqtt: mqtt, bridge: bridge, context: context, running: running)
    }

    func stop() async {
        await running.stop()
        await mqtt.stop()
        await broker.killAsync()  // nothing to save; SIGTERM costs mosquitto ~2 s
    }

    /// Waits until the bridge has counted `count` messages.
    func waitForMessages(_ count: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while bridge.counters.messages < count {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }
}

@Suite(.serialized) struct BeaconIntegrationTests {
    @Test func simulatorToBridgeSightingsMoveAndUnseen() async throws {
        let rig = try await BridgeRig.make(#"{"window_seconds":3,"unseen_seconds":2,"present_every_seconds":1}"#)
        var o = BeaconSimulator.Options()
        o.port = rig.broker.port
        o.animals = 3
        o.rooms = 3
        o.rate = 5
        o.moveEverySeconds = 0
        o.format = .all
        o.seed = 42
        let sim = BeaconSimulator(options: o)
        #expect(sim.beaconIds.count == 3 && Set(sim.beaconIds).count == 3)
        #expect(sim.beaconIds == BeaconSimulator(options: o).beaconIds)  // deterministic
        try await sim.start()

        // Each beacon in its room (animal i starts in room i % 3), across the three formats.
        for (i, beacon) in sim.beaconIds.enumerated() {
            let room = sim.roomNames[i % 3]
            let hit = await rig.context.waitFor(timeout: .seconds(15)) { fact in
                if case .sighted(beacon, room, _) = fact { return true }
                return false
            }
            #expect(hit != nil, "\(beacon) not sighted in \(room): \(rig.context.facts)")
        }
        // A move.
        let before = rig.context.facts.count
        sim.place(animal: 0, room: 2)
        let moved = await rig.context.waitFor(timeout: .seconds(15)) { fact in
            if case .sighted(sim.beaconIds[0], "room-3", _) = fact { return true }
            return false
        }
        #expect(moved != nil, "move not reported: \(rig.context.facts.dropFirst(before))")
        #expect(
            await rig.context.waitFor(timeout: .seconds(5)) { fact in
                if case .present(sim.beaconIds[0], "room-3", _) = fact { return true }
                return false
            } != nil)

        // Silence.
        await sim.stop()
        for (i, beacon) in sim.beaconIds.enumerated() {
            let lastRoom = i == 0 ? "room-3" : sim.roomNames[i % 3]
            let hit = await rig.context.waitFor(timeout: .seconds(10)) { fact in
                if case .unseen(beacon, lastRoom, _) = fact { return true }
                return false
            }
            #expect(hit != nil, "\(beacon) not unseen")
        }
        let c = rig.bridge.counters
        print("integration: sent \(sim.messagesSent), bridge \(c)")
        #expect(c.observations == sim.messagesSent)
        #expect(c.tracked == 0)
        await rig.stop()
    }

    @Test func floodOfUnknownBeaconsAndGarbageStaysBounded() async throws {
        let rig = try await BridgeRig.make(#"{"max_beacons":500}"#)
        let base = rig.bridge.counters.messages
        let client = try MQTTClient(options: MQTTOptions(port: rig.broker.port, clientId: "flood", cleanSession: true))
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(5))
        var rng = TestRNG(state: 99)
        var sent = 0
        for i in 0..<2000 {
            let mac = String(format: "%012llx", rng.next() & 0xFFFF_FFFF_FFFF)
            let topic = i % 2 == 0 ? "home/gw\(i % 7)/BTtoMQTT/\(mac)" : "espresense/devices/\(mac)/room\(i % 5)"
            try client.publish(topic, Array(#"{"id":"\#(mac)","rssi":\#(-40 - Int(rng.next() % 60))}"#.utf8), qos: 1)
            sent += 1
        }
        let junk = String(repeating: "\u{1}junk", count: 13_108)  // ~64 KiB
        let garbage: [(String, String)] = [
            ("home/gw/BTtoMQTT/aa", junk), ("home/gw/BTtoMQTT/aa", "{" + junk), ("espresense/devices/x/y", "NaN"),
            ("espresense/devices/x/y", #"{"rssi":50}"#), ("espresense/devices/x/y", #"{"rssi":-500}"#),
            ("espresense/devices/x", #"{"rssi":-50}"#), ("home/gw/BTtoMQTT", #"{"rssi":-50}"#),
            ("espresense/devices/x/y/z", "{}"), ("home/gw/BTtoMQTT/aa", #"{"rssi":"loud"}"#), ("home/gw/BTtoMQTT/aa", "")
        ]
        for (topic, payload) in garbage {
            try client.publish(topic, Array(payload.utf8), qos: 1)
            sent += 1
        }
        #expect(await rig.waitForMessages(base + sent, timeout: .seconds(20)))
        let c = rig.bridge.counters
        print("flood: sent \(sent), bridge \(c)")
        #expect(c.tracked <= 500)
        #expect(c.evicted >= 1500)
        #expect(c.dropped == base + garbage.count)
        #expect(c.observations == 2000)
        await client.stop()
        await rig.stop()
    }

    @Test func runForeverPrintsTheUuidsToAdmit() async throws {
        let broker = try await TestBroker.startAsync()
        var o = BeaconSimulator.Options()
        o.port = broker.port
        o.animals = 2
        o.rooms = 4
        let lines = Mutex<[String]>([])
        let task = Task { try await BeaconSimulator.runForever(options: o) { line in lines.withLock { $0.append(line) } } }
        let deadline = ContinuousClock.now + .seconds(10)
        while lines.withLock({ $0.count }) < 4 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        task.cancel()
        try await task.value
        let text = lines.withLock { $0.joined(separator: "\n") }
        print(text)
        for uuid in BeaconSimulator(options: o).uuids { #expect(text.contains(uuid)) }
        #expect(text.contains("room-4=espresense"))
        await broker.killAsync()
    }

    @Test func loadHundredBeaconsTenRooms() async throws {
        let rig = try await BridgeRig.make("")
        var o = BeaconSimulator.Options()
        o.port = rig.broker.port
        o.animals = 100
        o.rooms = 10
        o.rate = 2
        o.moveEverySeconds = 2.5
        o.seed = 7
        let sim = BeaconSimulator(options: o)
        let started = ContinuousClock.now
        try await sim.start()
        try await Task.sleep(for: .seconds(5))
        await sim.stop()
        let sent = sim.messagesSent
        let elapsed = ContinuousClock.now - started
        let base = 1  // at least the probe
        let drained = await rig.waitForMessages(sent + base, timeout: .seconds(20))
        let c = rig.bridge.counters
        print(
            "load: 100 beacons x 10 rooms x 2 msg/s for \(elapsed): sent \(sent), bridge counted \(c.observations) observations of \(c.messages) messages, facts \(c.facts) (sighted \(c.sighted), present \(c.present), unseen \(c.unseen)), tracked \(c.tracked)"
        )
        #expect(drained)
        #expect(Double(c.observations) >= 0.99 * Double(sent))
        #expect(sent >= 5000)  // ~10 000 expected; a busy machine may lag a little
        #expect(c.tracked == 100)
        #expect(c.sighted >= 100)
        #expect(c.facts * 10 < c.observations)
        await rig.stop()
    }
}
