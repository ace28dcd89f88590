import ArgumentParser
import BeaconSimulator
import BrokerHarness
import CLISupport
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import MQTT
import Synchronization

/// `hub-bench soak`: a whole household at once for N minutes, the hub alone in its own `hub run`
/// process (so the RSS is the hub's), its RSS sampled every 15 s from /proc/<pid>/status. Beacon
/// collars on admitted animals through all three bridge formats (ESPresense, OpenMQTTGateway,
/// Theengs), TCP power plugs and Kasa plugs, Tasmota and Shelly plugs (every device a `hub sim`
/// child), an activation with a window edge every minute, and a switch command over MQTT every
/// 10 s. Prints the RSS after warm-up, its slope (least squares, KB/min), CPU and events per hour.
struct SoakBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "A realistic household for N minutes: the hub's RSS after warm-up, its slope, CPU and events per hour.")

    @Option(help: "Minutes to measure (after the warm-up).") var minutes = 30.0
    @Option(help: "Seconds of warm-up before the measurement starts.") var warmup = 120
    @Option(help: "Seconds between RSS samples.") var sampleEvery = 15
    @Option(help: "Beacon collars (one admitted animal each).") var animals = 10
    @Option(help: "Rooms (one bridge node each; rooms 1-3 are ESPresense, OpenMQTTGateway, Theengs, then again).") var rooms = 3
    @Option(help: "Beacon messages per second per beacon per room.") var rate = 2.0
    @Option(help: "First TCP port for the plug simulators.") var basePort = 25000
    @Option(help: "Where to put the hub's data and config (removed afterwards).") var dir = "./hub-bench-soak"
    @Flag(help: "Print every RSS sample too.") var samples = false

    static let plugs = 2, kasa = 2, tasmota = 2

    func run() async throws {
        try await Console.guarded {
            let exe = try hubExecutable()
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let broker = try TestBroker.start()
            defer { broker.stop() }
            var children: [Process] = []
            defer { for child in children where child.isRunning { child.terminate(); child.waitUntilExit() } }
            children += try await startDeviceSimulators(exe, broker: broker.port)

            let configPath = root + "/config.json"
            try configJSON(broker: broker.port).write(toFile: configPath, atomically: true, encoding: .utf8)
            let watcher = try await Bench.client(broker.port, "soak-watch", subscribe: ["hub/status", "hub/events/#", "hub/response/#"])
            let counts = SoakCounts()
            let reader = Task { for await m in watcher.messages { counts.record(m.topic, m.payload) } }
            defer { reader.cancel() }

            let hub = try launch(exe, ["run", "--data-dir", root + "/data", "--config", configPath, "--no-http"])
            children.append(hub)
            let started = ContinuousClock.now
            while !counts.online {
                guard ContinuousClock.now - started < .seconds(60), hub.isRunning else {
                    throw HubError.failed("the hub did not come online")
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            try await setUpHousehold(watcher, counts: counts)
            var options = BeaconSimulator.Options()
            options.animals = animals
            options.rooms = rooms
            children.append(
                try launch(
                    exe,
                    [
                        "sim", "beacons", "--port", "\(broker.port)", "--animals", "\(animals)", "--rooms", "\(rooms)",
                        "--rate", "\(rate)", "--move-every", "30"
                    ]))
            let commander = Task { await sendCommands(watcher) }
            defer { commander.cancel() }

            Console.note("soak: warming up for \(warmup) s, then measuring for \(minutes) min (a sample every \(sampleEvery) s)")
            try await Task.sleep(for: .seconds(warmup))
            let pid = hub.processIdentifier
            let cpu0 = try cpuSeconds(pid), events0 = counts.events, t0 = ContinuousClock.now
            // RSS, and its two parts: anonymous pages (heap, stacks) and file-backed pages (the
            // program's and libraries' code and data, read in as paths run for the first time).
            var points: [(minutes: Double, kib: Double)] = [], anon: [(minutes: Double, kib: Double)] = [],
                file: [(minutes: Double, kib: Double)] = []
            while true {
                guard hub.isRunning else { throw HubError.failed("the hub exited with status \(hub.terminationStatus)") }
                let elapsed = (ContinuousClock.now - t0).inSeconds / 60
                let rss = try memoryKiB(pid, "VmRSS"), rssAnon = try memoryKiB(pid, "RssAnon"), rssFile = try memoryKiB(pid, "RssFile")
                points.append((elapsed, Double(rss)))
                anon.append((elapsed, Double(rssAnon)))
                file.append((elapsed, Double(rssFile)))
                if samples {
                    Console.note(
                        String(
                            format: "soak: %6.2f min  RSS %d KiB (anonymous %d, file %d)  events %d", elapsed, rss, rssAnon, rssFile,
                            counts.events - events0))
                }
                if elapsed >= minutes { break }
                try await Task.sleep(for: .seconds(sampleEvery))
            }
            let measured = (ContinuousClock.now - t0).inSeconds
            let cpu = try cpuSeconds(pid) - cpu0
            let events = counts.events - events0
            let peak = try memoryKiB(pid, "VmHWM")
            commander.cancel()
            hub.terminate()
            hub.waitUntilExit()
            await watcher.stop(finalMessage: nil)
            let fit = LeastSquares(points), anonFit = LeastSquares(anon), fileFit = LeastSquares(file)
            print(
                """
                | soak: \(animals) collars x \(rooms) rooms x \(rate) msg/s, \(Self.plugs) TCP + \(Self.kasa) Kasa + \(Self.tasmota) Tasmota + 1 Shelly plugs, an edge a minute, a command every 10 s; \(String(format: "%.1f", measured / 60)) min after \(warmup) s warm-up | value |
                |---|---:|
                | hub RSS after warm-up / at the end / peak | \(Int(points.first!.kib) / 1024) MiB / \(Int(points.last!.kib) / 1024) MiB / \(peak / 1024) MiB |
                | RSS slope (least squares over \(points.count) samples, every \(sampleEvery) s) | \(String(format: "%+.1f", fit.slope)) KB/min |
                | of which anonymous (heap, stacks): RssAnon \(Int(anon.first!.kib) / 1024) -> \(Int(anon.last!.kib) / 1024) MiB | \(String(format: "%+.1f", anonFit.slope)) KB/min |
                | of which file-backed (code and data read in): RssFile \(Int(file.first!.kib) / 1024) -> \(Int(file.last!.kib) / 1024) MiB | \(String(format: "%+.1f", fileFit.slope)) KB/min |
                | hub CPU | \(String(format: "%.1f", cpu)) s (\(String(format: "%.2f %%", cpu / measured * 100)) of one core) |
                | events logged | \(events) (\(Int(Double(events) * 3600 / measured)) per hour) |
                | commands answered over MQTT | \(counts.answers) |
                """)
        }
    }

    /// The plug simulators, each kind in one `hub sim` child.
    func startDeviceSimulators(_ exe: String, broker: Int) async throws -> [Process] {
        var children: [Process] = []
        children.append(try launch(exe, ["sim", "powerplug", "--port", "\(basePort)", "--count", "\(Self.plugs)", "--check-interval", "5"]))
        children.append(try launch(exe, ["sim", "kasa", "--port", "\(basePort + 100)", "--count", "\(Self.kasa)"]))
        children.append(
            try launch(
                exe, ["sim", "tasmota", "--port", "\(broker)", "--topic", "soak", "--count", "\(Self.tasmota)", "--tele-period", "10"]))
        children.append(try launch(exe, ["sim", "shelly", "--port", "\(broker)", "--gen", "2", "--status-period", "10"]))
        try await waitForPort(basePort + Self.plugs - 1)
        try await waitForPort(basePort + 100 + Self.kasa - 1)
        return children
    }

    var deviceIds: [String] {
        (0..<Self.plugs).map { "pp-\($0)" } + (0..<Self.kasa).map { "kasa-\($0)" } + (1...Self.tasmota).map { "tasmota-\($0)" } + [
            "shelly", "lamp"
        ]
    }

    func configJSON(broker: Int) -> String {
        let devices =
            (0..<Self.plugs).map { #"{"id":"pp-\#($0)","driver":"powerplug","config":{"host":"127.0.0.1","port":\#(basePort + $0)}}"# }
            + (0..<Self.kasa).map { #"{"id":"kasa-\#($0)","driver":"kasa","config":{"host":"127.0.0.1","port":\#(basePort + 100 + $0)}}"# }
            + (1...Self.tasmota).map { #"{"id":"tasmota-\#($0)","driver":"tasmota","config":{"topic":"soak_\#($0)"}}"# }
            + [
                #"{"id":"shelly","driver":"shelly","config":{"id":"shellyplus1pm-441793ab3fb4","gen":2}}"#,
                #"{"id":"lamp","driver":"virtual","config":{}}"#
            ]
        return #"{"mqtt":{"port":\#(broker),"client_id":"soak-hub"},"devices":[\#(devices.joined(separator: ","))]}"#
    }

    /// Admits an animal per collar and gives the lamp an activation with an edge every minute.
    func setUpHousehold(_ client: MQTTClient, counts: SoakCounts) async throws {
        var options = BeaconSimulator.Options()
        options.animals = animals
        options.rooms = rooms
        for (i, beacon) in BeaconSimulator(options: options).beaconIds.enumerated() {
            try client.publish(
                "hub/animal/admit",
                Array(#"{"id":"pet-\#(i)","name":"Pet \#(i)","species":"cat","weight_kg":4,"beacon":"\#(beacon)"}"#.utf8), qos: 1)
        }
        let start = ISO8601.format(micros: Int64(Date().timeIntervalSince1970 * 1_000_000) + 30_000_000)
        try client.publish(
            "hub/device/lamp/activations/set",
            Array(#"{"op":"add","name":"every-minute","start":"\#(start)","length":1,"period":2,"id":"soak-activation"}"#.utf8), qos: 1)
        let deadline = ContinuousClock.now + .seconds(30)
        while counts.answers < animals + 1, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        Console.note("soak: \(counts.answers) of \(animals + 1) set-up commands answered")
    }

    /// A switch command over MQTT every 10 s, round the devices, each with its own command id.
    func sendCommands(_ client: MQTTClient) async {
        let ids = deviceIds.filter { $0 != "lamp" }
        var n = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(10))
            let id = ids[n % ids.count]
            let state = (n / ids.count) % 2 == 0 ? "ON" : "OFF"
            try? client.publish("hub/device/\(id)/switch/set", Array(#"{"state":"\#(state)","id":"soak-\#(n)"}"#.utf8), qos: 1)
            n += 1
        }
    }

}

/// The least-squares line through (minutes, KiB) samples; `slope` in KB (1000 bytes) per minute.
struct LeastSquares {
    let slope: Double

    init(_ points: [(minutes: Double, kib: Double)]) {
        let n = Double(points.count)
        guard n >= 2 else { slope = 0; return }
        let mx = points.map(\.minutes).reduce(0, +) / n, my = points.map(\.kib).reduce(0, +) / n
        let sxy = points.map { ($0.minutes - mx) * ($0.kib - my) }.reduce(0, +)
        let sxx = points.map { ($0.minutes - mx) * ($0.minutes - mx) }.reduce(0, +)
        slope = sxx > 0 ? sxy / sxx * 1.024 : 0
    }
}

final class SoakCounts: Sendable {
    private struct State { var online = false; var events = 0; var answers = 0 }
    private let state = Mutex(State())

    func record(_ topic: String, _ payload: [UInt8]) {
        state.withLock { s in
            if topic == "hub/status" {
                s.online = String(decoding: payload, as: UTF8.self) == "online"
            } else if topic.hasPrefix("hub/events/") {
                s.events += 1
            } else if topic.hasPrefix("hub/response/") {
                s.answers += 1
            }
        }
    }

    var online: Bool { state.withLock { $0.online } }
    var events: Int { state.withLock { $0.events } }
    var answers: Int { state.withLock { $0.answers } }
}
