import ArgumentParser
import BrokerHarness
import CLISupport
import DriverAPI
import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import Kasa
import KasaSimulator
import MQTT
import PowerPlug
import PowerPlugSimulator
import Synchronization

/// `hub bench plugs`: one hub serving hundreds of simulated TCP plugs (both kinds), as separate
/// processes: the simulators in two `hub sim` children, the hub in a `hub run` child, a private
/// mosquitto. It records the hub's RSS and CPU while idle and while commanded, and the command
/// latency through MQTT, against the same driver switching a plug directly (no hub, no broker)
/// measured in the same run.
struct PlugsBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugs",
        abstract: "One hub, many simulated plugs: RSS, CPU and command latency (vs the driver alone).")

    @Option(help: "Simulated TCP power plugs.") var powerplugs = 250
    @Option(help: "Simulated Kasa plugs.") var kasa = 250
    @Option(help: "Switch commands to time (half to each kind).") var commands = 200
    @Option(help: "Seconds of idle polling to measure CPU over.") var idleSeconds = 30
    @Option(help: "First TCP port for the simulators (power plugs first, then Kasa).") var basePort = 24000
    @Option(help: "Where to put the hub's data and config (removed afterwards).") var dir = "./hub-bench-plugs"
    @Option(help: "Limit the hub to this fraction of one core through a cgroup (as root), e.g. 0.25.") var cpuQuota: Double?

    func run() async throws {
        try await Console.guarded {
            let exe = try hubExecutable()
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let broker = try TestBroker.start()
            defer { broker.stop() }
            let total = powerplugs + kasa
            let kasaBase = basePort + powerplugs

            var children: [Process] = []
            defer { for child in children where child.isRunning { child.terminate(); child.waitUntilExit() } }
            if powerplugs > 0 {
                children.append(try launch(exe, ["sim", "powerplug", "--port", "\(basePort)", "--count", "\(powerplugs)"]))
                try await waitForPort(basePort + powerplugs - 1)
            }
            if kasa > 0 {
                children.append(try launch(exe, ["sim", "kasa", "--port", "\(kasaBase)", "--count", "\(kasa)"]))
                try await waitForPort(kasaBase + kasa - 1)
            }
            Console.note("bench: \(powerplugs) power plug and \(kasa) Kasa simulators listening")

            let devices: [String] =
                (0..<powerplugs).map { #"{"id":"pp-\#($0)","driver":"powerplug","config":{"host":"127.0.0.1","port":\#(basePort + $0)}}"# }
                + (0..<kasa).map { #"{"id":"kasa-\#($0)","driver":"kasa","config":{"host":"127.0.0.1","port":\#(kasaBase + $0)}}"# }
            let configPath = root + "/config.json"
            try #"{"mqtt":{"port":\#(broker.port),"client_id":"bench-hub"},"devices":[\#(devices.joined(separator: ","))]}"#
                .write(toFile: configPath, atomically: true, encoding: .utf8)

            let watcher = try MQTTClient(options: MQTTOptions(port: broker.port, clientId: "bench-plugs-watch", cleanSession: true))
            try watcher.subscribe("hub/device/+/availability", qos: 1)
            try watcher.subscribe("hub/device/+/switch", qos: 1)
            try watcher.subscribe("hub/events/#", qos: 1)
            try watcher.start()
            try await watcher.waitUntilConnected(timeout: .seconds(5))
            let seen = Seen()
            let reader = Task { for await m in watcher.messages { seen.record(m) } }
            defer { reader.cancel() }

            let started = ContinuousClock.now
            let hub = try launch(exe, ["run", "--data-dir", root + "/data", "--config", configPath, "--no-http"])
            children.append(hub)
            let pid = hub.processIdentifier
            var quota: CPUQuota?
            if let cpuQuota {
                switch CPUQuota.make(cores: cpuQuota, name: "hub-bench-plugs-\(getpid())") {
                case .success(let q): try q.add(pid); quota = q; Console.note("bench: CPU quota: \(q.description)")
                case .failure(let why): Console.note("bench: CPU quota not set: \(why)")
                }
            }
            defer { quota?.remove() }
            while seen.online < total {
                guard ContinuousClock.now - started < .seconds(180) else {
                    throw HubError.failed("only \(seen.online) of \(total) devices online after 180 s")
                }
                guard hub.isRunning else { throw HubError.failed("the hub exited with status \(hub.terminationStatus)") }
                try await Task.sleep(for: .milliseconds(100))
            }
            let startup = (ContinuousClock.now - started).inSeconds
            Console.note("bench: all \(total) devices online after \(String(format: "%.1f", startup)) s")

            // Everything on at once (a household's "all on"), so meters draw and report while idle.
            let burstSender = try MQTTClient(options: MQTTOptions(port: broker.port, clientId: "bench-plugs-burst", cleanSession: true))
            try burstSender.start()
            try await burstSender.waitUntilConnected(timeout: .seconds(5))
            let ids = (0..<powerplugs).map { "pp-\($0)" } + (0..<kasa).map { "kasa-\($0)" }
            let burstStart = ContinuousClock.now
            for id in ids { try burstSender.publish("hub/device/\(id)/switch/set", Array("ON".utf8), qos: 1) }
            while ids.contains(where: { seen.switchState($0) != "ON" }), ContinuousClock.now - burstStart < .seconds(60) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let burst = (ContinuousClock.now - burstStart).inSeconds
            let burstOn = ids.filter { seen.switchState($0) == "ON" }.count
            await burstSender.stop(finalMessage: nil)
            Console.note("bench: \(burstOn) of \(total) switched on in \(String(format: "%.2f", burst)) s")

            try await Task.sleep(for: .seconds(5))  // let start-up settle
            let idleEvents0 = seen.events
            let idleCPU0 = try cpuSeconds(pid)
            try await Task.sleep(for: .seconds(idleSeconds))
            let idleCPU = (try cpuSeconds(pid) - idleCPU0) / Double(idleSeconds)
            let idleEventsPerMinute = Double(seen.events - idleEvents0) * 60 / Double(idleSeconds)
            let idleRSS = try memoryKiB(pid, "VmRSS")
            // File-backed pages (the binary, libswiftCore, Foundation...) are shared with every other
            // process mapping them; anonymous pages and PSS are what this hub alone costs.
            let idleAnon = try memoryKiB(pid, "RssAnon"), idleFile = try memoryKiB(pid, "RssFile")
            let idlePSS = try smapsRollupKiB(pid, "Pss")
            Console.note(
                "bench: idle CPU \(percent(idleCPU)), RSS \(idleRSS / 1024) MiB (anonymous \(mib(idleAnon)), "
                    + "file-backed \(mib(idleFile)), PSS \(mib(idlePSS))), \(Int(idleEventsPerMinute)) events/min")

            let sender = try MQTTClient(options: MQTTOptions(port: broker.port, clientId: "bench-plugs-send", cleanSession: true))
            try sender.start()
            try await sender.waitUntilConnected(timeout: .seconds(5))
            let throttled0 = quota?.throttled()
            let commandCPU0 = try cpuSeconds(pid)
            let commandStart = ContinuousClock.now
            var plugLatencies: [Double] = [], kasaLatencies: [Double] = []
            var failures = 0
            for i in 0..<commands {
                let useKasa = kasa > 0 && (powerplugs == 0 || i % 2 == 1)
                let id = useKasa ? "kasa-\(Int.random(in: 0..<kasa))" : "pp-\(Int.random(in: 0..<powerplugs))"
                let target = seen.switchState(id) == "ON" ? "OFF" : "ON"
                let t0 = ContinuousClock.now
                try sender.publish("hub/device/\(id)/switch/set", Array(target.utf8), qos: 1)
                while seen.switchState(id) != target, ContinuousClock.now - t0 < .seconds(10) {
                    try await Task.sleep(for: .milliseconds(1))
                }
                guard seen.switchState(id) == target else { failures += 1; continue }
                let s = (ContinuousClock.now - t0).inSeconds
                if useKasa { kasaLatencies.append(s) } else { plugLatencies.append(s) }
            }
            let commandCPU = (try cpuSeconds(pid) - commandCPU0) / (ContinuousClock.now - commandStart).inSeconds
            // The commands run code the idle hub did not: mapped again since the last trim.
            let commandsRSS = try memoryKiB(pid, "VmRSS"), commandsFile = try memoryKiB(pid, "RssFile")
            let peakRSS = try memoryKiB(pid, "VmHWM")
            let throttled = quota?.throttled()
            await sender.stop(finalMessage: nil)
            await watcher.stop(finalMessage: nil)
            hub.terminate()
            hub.waitUntilExit()

            let direct = try await directLatencies()
            let pp = Stats(plugLatencies), ks = Stats(kasaLatencies)
            print(
                """
                | \(powerplugs) TCP power plugs + \(kasa) Kasa plugs, one hub | value |
                |---|---:|
                | all devices online after start | \(String(format: "%.1f", startup)) s |
                | hub RSS idle / peak | \(idleRSS / 1024) MiB / \(peakRSS / 1024) MiB |
                | hub RSS idle: anonymous / file-backed; PSS | \(mib(idleAnon)) / \(mib(idleFile)); \(mib(idlePSS)) |
                | hub RSS right after the commands (file-backed) | \(mib(commandsRSS)) (\(mib(commandsFile))) |
                | all \(total) switched ON in one burst -> all confirmed | \(String(format: "%.2f", burst)) s (\(burstOn) confirmed) |
                | hub CPU steady, all on (Kasa polled every 5 s, plug status every 2 s) | \(percent(idleCPU)) of one core |
                | hub CPU while switching (one command at a time) | \(percent(commandCPU)) of one core |
                | events logged while steady (readings past the deadbands) | \(Int(idleEventsPerMinute)) per minute |
                | commands not confirmed within 10 s | \(failures) of \(commands) |
                | hub CPU seconds per day at the steady rate | \(String(format: "%.0f", idleCPU * 86_400)) |
                \(quotaRows(quota, throttled0, throttled))

                | switch command -> confirmed state | p50 | p99 | driver alone p50 | hub / driver alone |
                |---|---:|---:|---:|---:|
                | TCP power plug, MQTT switch/set -> retained `switch` (\(pp.count)) | \(ms(pp.p50)) ms | \(ms(pp.p99)) ms | \(ms(direct.plug.p50)) ms | \(ratio(pp.p50, direct.plug.p50)) |
                | Kasa, MQTT switch/set -> retained `switch` (\(ks.count)) | \(ms(ks.p50)) ms | \(ms(ks.p99)) ms | \(ms(direct.kasa.p50)) ms | \(ratio(ks.p50, direct.kasa.p50)) |
                """)
        }
    }

    // MARK: - The peer: the drivers alone, switching one simulator each in this process.

    func directLatencies() async throws -> (plug: Stats, kasa: Stats) {
        let plugSim = PowerPlugSimulator(
            options: {
                var o = PowerPlugSimulator.Options(); o.port = 0; return o
            }())
        let kasaSim = KasaSimulator(
            options: {
                var o = KasaSimulator.Options(); o.port = 0; return o
            }())
        let plugPort = try await plugSim.start(), kasaPort = try await kasaSim.start()
        defer {
            Task {
                await plugSim.stop(); await kasaSim.stop()
            }
        }
        let plug = try await timeDriver(PowerPlugDriverFactory(), driver: "powerplug", port: plugPort)
        let kasa = try await timeDriver(KasaDriverFactory(), driver: "kasa", port: kasaPort)
        return (plug, kasa)
    }

    func timeDriver(_ factory: any DriverFactory, driver name: String, port: Int) async throws -> Stats {
        let context = LastSwitch(deviceId: "direct")
        let driver = try factory.make(
            configuration: DriverConfiguration(
                deviceId: "direct", driver: name, settingsJSON: #"{"host":"127.0.0.1","port":\#(port)}"#))
        return try await withThrowingTaskGroup { group in
            group.addTask { try await driver.run(context: context) }
            defer { group.cancelAll() }
            return try await time(driver, context: context)
        }
    }

    func time(_ driver: any Driver, context: LastSwitch) async throws -> Stats {
        let deadline = ContinuousClock.now + .seconds(10)
        while context.state == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        var samples: [Double] = []
        for _ in 0..<max(1, commands / 2) {
            let target = !(context.state ?? false)
            let t0 = ContinuousClock.now
            try await driver.execute(.setSwitch(on: target))
            while context.state != target, ContinuousClock.now - t0 < .seconds(10) { try await Task.sleep(for: .milliseconds(1)) }
            samples.append((ContinuousClock.now - t0).inSeconds)
        }
        return Stats(samples)
    }

    // MARK: - Helpers

    func quotaRows(_ quota: CPUQuota?, _ before: (times: Int, seconds: Double)?, _ after: (times: Int, seconds: Double)?) -> String {
        guard let quota else { return "| CPU quota | none |" }
        let throttled =
            before.flatMap { b in
                after.map { a in "throttled \(a.times - b.times) times, \(String(format: "%.1f", a.seconds - b.seconds)) s while switching"
                }
            } ?? ""
        return "| CPU quota (the hub process, cgroup v\(quota.version)) | \(String(format: "%g", quota.cores)) of one core; \(throttled) |"
    }

    func ms(_ s: Double) -> String { String(format: "%.1f", s * 1000) }
    func mib(_ kib: Int) -> String { String(format: "%.1f MiB", Double(kib) / 1024) }
    func percent(_ fraction: Double) -> String { String(format: "%.1f %%", fraction * 100) }
    func ratio(_ a: Double, _ b: Double) -> String { b > 0 ? String(format: "%.2fx", a / b) : "-" }

    struct Stats {
        let sorted: [Double]
        init(_ samples: [Double]) { sorted = samples.sorted() }
        var count: Int { sorted.count }
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        var p50: Double { percentile(0.5) }
        var p99: Double { percentile(0.99) }
    }
}

/// What the watcher has seen: devices online, the last `switch` of each, events published.
final class Seen: Sendable {
    private struct State { var online = Set<String>(); var switches: [String: String] = [:]; var events = 0 }
    private let state = Mutex(State())

    func record(_ m: MQTTMessage) {
        let parts = m.topic.split(separator: "/")
        let text = String(decoding: m.payload, as: UTF8.self)
        state.withLock { s in
            if parts.count == 4, parts[1] == "device", parts[3] == "availability" {
                if text == "online" { s.online.insert(String(parts[2])) } else { s.online.remove(String(parts[2])) }
            } else if parts.count == 4, parts[1] == "device", parts[3] == "switch" {
                s.switches[String(parts[2])] = text
            } else if parts.count > 1, parts[1] == "events" {
                s.events += 1
            }
        }
    }

    var online: Int { state.withLock { $0.online.count } }
    var events: Int { state.withLock { $0.events } }
    func switchState(_ id: String) -> String? { state.withLock { $0.switches[id] } }
}

/// The direct peer's context: remembers the last relay state the driver reported.
final class LastSwitch: DriverContext {
    let deviceId: String
    private let last = Mutex<Bool?>(nil)
    init(deviceId: String) { self.deviceId = deviceId }
    var state: Bool? { last.withLock { $0 } }
    func report(_ observation: Observation) async {
        if case .switchState(let on, _) = observation { last.withLock { $0 = on } }
    }
}
