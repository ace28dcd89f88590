import ArgumentParser
import BeaconSimulator
import BrokerHarness
import CLISupport
import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import MQTT
import Synchronization

/// `hub bench beacons`: sustained BLE beacon traffic (by default 100 beacons x 10 rooms x 2
/// messages/s) from a `hub sim beacons` child through a private mosquitto into a `hub run` child
/// with every beacon's animal admitted. It records the hub's CPU and RSS, how many messages the
/// broker delivered (to a plain subscriber in this process: the peer), and how many events the log
/// grew by — facts (room changes), not observations.
struct BeaconsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacons",
        abstract: "Beacon load through the hub: CPU, RSS, messages in vs events logged (vs a bare subscriber).")

    @Option(help: "Beacons (one admitted animal each).") var animals = 100
    @Option(help: "Rooms (one bridge node each).") var rooms = 10
    @Option(help: "Messages per second per beacon per room.") var rate = 2.0
    @Option(help: "Seconds between an animal's moves.") var moveEvery = 30.0
    @Option(help: "Seconds to measure.") var seconds = 60
    @Option(help: "Where to put the hub's data (removed afterwards).") var dir = "./hub-bench-beacons"

    func run() async throws {
        try await Console.guarded {
            let exe = try hubExecutable()
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let broker = try TestBroker.start()
            defer { broker.stop() }
            var children: [Process] = []
            defer { for child in children where child.isRunning { child.terminate(); child.waitUntilExit() } }

            let hub = try launch(
                exe, ["run", "--data-dir", root + "/data", "--mqtt-port", "\(broker.port)", "--mqtt-client-id", "bench-hub", "--no-http"])
            children.append(hub)
            let watcher = try MQTTClient(options: MQTTOptions(port: broker.port, clientId: "bench-beacons-watch", cleanSession: true))
            for filter in ["hub/status", "hub/events/#", "hub/response/animal/admit", "espresense/#", "home/#"] {
                try watcher.subscribe(filter, qos: 1)
            }
            try watcher.start()
            try await watcher.waitUntilConnected(timeout: .seconds(5))
            let counts = BenchCounts()
            let reader = Task { for await m in watcher.messages { counts.record(m.topic, m.payload) } }
            defer { reader.cancel() }
            let started = ContinuousClock.now
            while !counts.online {
                guard ContinuousClock.now - started < .seconds(60), hub.isRunning else {
                    throw HubError.failed("the hub did not come online")
                }
                try await Task.sleep(for: .milliseconds(100))
            }

            // Admit an animal per beacon (the simulator's beacons are deterministic for a seed).
            var options = BeaconSimulator.Options()
            options.animals = animals
            options.rooms = rooms
            let beaconIds = BeaconSimulator(options: options).beaconIds
            for (i, beacon) in beaconIds.enumerated() {
                try watcher.publish(
                    "hub/animal/admit",
                    Array(#"{"id":"a\#(i)","name":"Animal \#(i)","species":"dog","weight_kg":20,"beacon":"\#(beacon)"}"#.utf8), qos: 1)
            }
            while counts.admitted < animals, ContinuousClock.now - started < .seconds(120) { try await Task.sleep(for: .milliseconds(50)) }
            Console.note("bench: \(counts.admitted) animals admitted")

            children.append(
                try launch(
                    exe,
                    [
                        "sim", "beacons", "--port", "\(broker.port)", "--animals", "\(animals)", "--rooms", "\(rooms)",
                        "--rate", "\(rate)", "--move-every", "\(moveEvery)"
                    ]))
            try await Task.sleep(for: .seconds(10))  // first sightings settle
            let events0 = counts.events, sightings0 = counts.sightings, messages0 = counts.observations
            let cpu0 = try cpuSeconds(hub.processIdentifier)
            let t0 = ContinuousClock.now
            try await Task.sleep(for: .seconds(seconds))
            let elapsed = (ContinuousClock.now - t0).inSeconds
            let cpu = (try cpuSeconds(hub.processIdentifier) - cpu0) / elapsed
            let rss = try memoryKiB(hub.processIdentifier, "VmRSS"), peak = try memoryKiB(hub.processIdentifier, "VmHWM")
            let messages = Double(counts.observations - messages0) / elapsed
            let events = Double(counts.events - events0) * 60 / elapsed
            let sightings = Double(counts.sightings - sightings0) * 60 / elapsed
            let expectedMoves = Double(animals) * 60 / moveEvery
            hub.terminate()
            hub.waitUntilExit()
            await watcher.stop(finalMessage: nil)
            print(
                """
                | \(animals) beacons x \(rooms) rooms x \(rate) msg/s, \(Int(elapsed)) s | value |
                |---|---:|
                | bridge messages delivered by the broker (to a bare subscriber: the peer) | \(Int(messages)) /s |
                | hub CPU (parsing, smoothing, deciding rooms for every message) | \(String(format: "%.1f %%", cpu * 100)) of one core |
                | hub RSS steady / peak | \(rss / 1024) MiB / \(peak / 1024) MiB |
                | events logged | \(Int(events)) per minute (\(String(format: "%.4f", events / 60 / max(messages, 1))) per message) |
                | of which AnimalSighted | \(Int(sightings)) per minute (animals move \(Int(expectedMoves)) times a minute) |
                """)
        }
    }

}

final class BenchCounts: Sendable {
    private struct State { var online = false; var admitted = 0; var events = 0; var sightings = 0; var observations = 0 }
    private let state = Mutex(State())

    func record(_ topic: String, _ payload: [UInt8]) {
        state.withLock { s in
            if topic == "hub/status" {
                s.online = String(decoding: payload, as: UTF8.self) == "online"
            } else if topic == "hub/response/animal/admit" {
                s.admitted += 1
            } else if topic.hasPrefix("hub/events/") {
                s.events += 1
                if topic.hasSuffix("/AnimalSighted") { s.sightings += 1 }
            } else {
                s.observations += 1
            }
        }
    }

    var online: Bool { state.withLock { $0.online } }
    var admitted: Int { state.withLock { $0.admitted } }
    var events: Int { state.withLock { $0.events } }
    var sightings: Int { state.withLock { $0.sightings } }
    var observations: Int { state.withLock { $0.observations } }
}
