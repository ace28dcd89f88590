import ArgumentParser
import BrokerHarness
import CLISupport
import Foundation
import HubApp
import HubBench
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import MQTT

/// `hub-bench household`: a reference household (``HouseholdTraffic``) at accelerated time against a
/// real `hub run` process with its own mosquitto, printing per simulated day what the log took
/// (events, their JSON bytes) and what it cost: the hub's `write_bytes`, its fdatasyncs, the bytes
/// the block device under its data directory wrote, CPU seconds and peak RSS, and the write
/// amplification (device bytes / event bytes). Optionally under a CPU quota (a Raspberry Pi-class
/// quarter core) and beside Home Assistant's recorder on the same broker and traffic.
struct HouseholdBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "household",
        abstract:
            "A reference household at accelerated time: bytes written per simulated day, fsyncs, CPU, RSS (vs Home Assistant's recorder).")

    @Option(help: "Real minutes per simulated day, 15 to 1440.") var dayMinutes = 15
    @Flag(help: "Run at the real rate (the same as --day-minutes 1440).") var realTime = false
    @Option(help: "Simulated days to measure (a fraction runs part of one; figures are then scaled to a day).") var days = 1.0
    @Option(help: "Limit the hub to this fraction of one core through a cgroup (as root), e.g. 0.25.") var cpuQuota: Double?
    @Option(help: "Home Assistant's `hass` (installed by scripts/peer-home-assistant) to run beside the hub on the same broker.")
    var homeAssistant: String?
    @Flag(
        inversion: .prefixedNo,
        help:
            "Put the data directory on an ext4 file system of its own (a loop device, as root) so the device counters count only the hub's writes."
    )
    var ownDisk = true
    @Option(
        help:
            "The hub's --observation-commit-delay (seconds; default: the hub's own for its disk, 10 s on a loop device, 300 s on an SD card)."
    ) var observationCommitDelay: Double?
    @Option(help: "Mount options of the own disks (the hub's and Home Assistant's), e.g. lazytime.") var mountOptions: String?
    @Option(help: "First TCP port for the Kasa simulators.") var basePort = 25100
    @Option(help: "Where to put the data, the images and the configuration (removed afterwards).") var dir = "./hub-bench-household"

    func validate() throws {
        guard days > 0, days <= 30 else { throw ValidationError("--days must be above 0 and at most 30") }
        if let cpuQuota, !(0.01...8).contains(cpuQuota) { throw ValidationError("--cpu-quota must be 0.01 to 8 (cores)") }
        do { _ = try HouseholdClock(dayMinutes: realTime ? 1440 : dayMinutes) } catch { throw ValidationError("\(error)") }
    }

    func run() async throws {
        try await Console.guarded {
            let exe = try hubExecutable()
            let clock = try HouseholdClock(dayMinutes: realTime ? 1440 : dayMinutes)
            let root = try Bench.freshDirectory(dir)
            var cleanups: [() -> Void] = []
            defer { for cleanup in cleanups.reversed() { cleanup() }; try? FileManager.default.removeItem(atPath: root) }

            let (dataDir, device) = try disk(root: root, name: "hub", cleanups: &cleanups)
            let broker = try TestBroker.start()
            cleanups.append { broker.stop() }
            let traffic = HouseholdTraffic(clock: clock, brokerPort: broker.port, kasaBasePort: basePort, httpPort: try freeLoopbackPort())
            print(traffic.description)
            switch device {
            case .success(let d):
                print(
                    "Device counters: \(d.name) (\(d.statPath)), holding \(dataDir)\(ownDisk ? ", an ext4 file system of its own on a loop device" : "; shared with every other writer on it")."
                )
            case .failure(let why): print("Device counters: not found: \(why)")
            }
            print(
                "The hub's observation commit delay: \(observationCommitDelay.map { "\($0) s" } ?? "its default for the disk (\(Int(HubConfig.defaultObservationCommitDelaySeconds(on: try? device.get().storage))) s)")."
            )
            if ownDisk { print("Own disks mounted with: \(mountOptions ?? "the default options").") }

            var children: [Process] = []
            cleanups.append { for child in children where child.isRunning { child.terminate(); child.waitUntilExit() } }
            for arguments in traffic.plugSimulators { children.append(try launch(exe, arguments)) }
            try await waitForPort(traffic.kasaBasePort + HouseholdTraffic.kasaCount - 1)

            let seen = HouseholdSeen()
            let watcher = try await Bench.client(broker.port, "household-watch", subscribe: HouseholdSeen.filters)
            let reader = Task { for await m in watcher.messages { seen.record(m) } }
            cleanups.append { reader.cancel() }

            let configPath = root + "/config.json"
            try traffic.configJSON().write(toFile: configPath, atomically: true, encoding: .utf8)
            let started = ContinuousClock.now
            let hubNotes = OutputTail()
            let delay = observationCommitDelay.map { ["--observation-commit-delay", String($0)] } ?? []
            let hub = try launch(exe, ["run", "--data-dir", dataDir, "--config", configPath] + delay, stderr: hubNotes)
            children.append(hub)
            cleanups.append {
                if !hub.isRunning, hub.terminationStatus != 0 { Console.note("bench: the hub's last lines:\n" + hubNotes.text) }
            }
            let pid = hub.processIdentifier
            var quota: CPUQuota?
            if let cpuQuota {
                switch CPUQuota.make(cores: cpuQuota, name: "hub-bench-household-\(getpid())") {
                case .success(let q):
                    try q.add(pid)
                    quota = q
                    cleanups.append { q.remove() }
                    print("CPU quota: \(q.description) (the hub process only)")
                case .failure(let why):
                    print("CPU quota: not set: \(why)")
                }
            }
            try await waitUntil("the hub online with all \(traffic.plugIds.count) plugs", seconds: 120, hub) {
                seen.hubOnline && traffic.plugIds.allSatisfy(seen.isOnline)
            }
            Console.note(
                "bench: hub and \(traffic.plugIds.count) plugs online after \(String(format: "%.1f", (ContinuousClock.now - started).inSeconds)) s"
            )

            var homeAssistant: HomeAssistantPeer?
            if let hass = self.homeAssistant {
                let (haDir, haDevice) = try disk(root: root, name: "home-assistant", cleanups: &cleanups)
                let peer = try HomeAssistantPeer.start(
                    hass: hass, configDirectory: haDir, brokerPort: broker.port, device: try? haDevice.get())
                cleanups.append { peer.stop() }
                homeAssistant = peer
                try await waitUntil("Home Assistant's MQTT birth message", seconds: 300, peer.process) { seen.homeAssistantOnline }
                Console.note("bench: Home Assistant connected (its recorder: \(haDir)/home-assistant_v2.db)")
            }

            // The animals, wearing the simulator's collars, and the schedules.
            for (i, beacon) in traffic.beaconIds.enumerated() {
                try watcher.publish(
                    "hub/animal/admit",
                    Array(#"{"id":"pet-\#(i)","name":"Pet \#(i)","species":"cat","weight_kg":4,"beacon":"\#(beacon)"}"#.utf8), qos: 1)
            }
            try await waitUntil("\(HouseholdTraffic.animals) animals admitted", seconds: 60, hub) {
                seen.okAnswers("admit") >= HouseholdTraffic.animals
            }
            let minute = (Int(Date().timeIntervalSince1970) / 60 + 1) * 60
            for (i, id) in traffic.scheduledIds.enumerated() {
                let start = Date(timeIntervalSince1970: Double(minute + 60 * (i * traffic.schedulePeriodMinutes / 4)))
                let body =
                    #"{"op":"add","name":"daily","start":"\#(ISO8601DateFormatter().string(from: start))","length":\#(traffic.scheduleLengthMinutes),"period":\#(traffic.schedulePeriodMinutes),"id":"schedule-\#(id)"}"#
                try watcher.publish("hub/device/\(id)/activations/set", Array(body.utf8), qos: 1)
            }
            try await waitUntil("4 schedules set", seconds: 60, hub) { seen.okAnswers("set") >= 4 }
            children.append(try launch(exe, traffic.beaconSimulator))
            // Start-up's first readings of every quantity, the collars' first sightings: not a day's traffic.
            try await Task.sleep(for: .seconds(max(5, min(30, clock.real(600)))))

            let httpPort = traffic.httpPort
            func hubCounters() throws -> HouseholdCounters {
                let (events, bytes) = seen.events
                return HouseholdCounters(
                    events: events, eventBytes: bytes, writeBytes: try writeBytes(pid),
                    fsyncs: scrapeMetric(port: httpPort, "hub_fsync_duration_seconds_count"),
                    deviceBytes: try? device.get().bytesWritten(), cpuSeconds: try cpuSeconds(pid))
            }
            let received0 = scrapeMetric(port: httpPort, "hub_mqtt_messages_received_total"), deviceMessages0 = seen.deviceMessages
            let throttled0 = quota?.throttled()
            let first = try hubCounters()
            let peer0 = try homeAssistant?.counters()
            let windowStart = ContinuousClock.now
            let windowSeconds = clock.daySeconds * days

            let commander = HouseholdCommander(seen: seen, client: watcher, ids: traffic.commandedIds, spacing: traffic.commandSpacing)
            let commanding = Task { await commander.run(until: windowStart + .seconds(windowSeconds)) }

            print(
                "\nThe hub, per simulated day (window of \(String(format: "%g", days)) simulated day\(days == 1 ? "" : "s"), \(String(format: "%.0f", windowSeconds)) s real):\n"
            )
            print(HouseholdPeriod.header)
            var last = first
            var day = 1
            while Double(day) <= days {
                try await sleep(until: windowStart + .seconds(clock.daySeconds * Double(day)), hub)
                let now = try hubCounters()
                print(
                    HouseholdPeriod(label: "day \(day)", from: last, to: now, simulatedDays: 1, peakRSSKiB: try memoryKiB(pid, "VmHWM")).row
                )
                last = now
                day += 1
            }
            try await sleep(until: windowStart + .seconds(windowSeconds), hub)
            let end = try hubCounters()
            let peak = try memoryKiB(pid, "VmHWM")
            let hubDay = HouseholdPeriod(label: "mean per day", from: first, to: end, simulatedDays: days, peakRSSKiB: peak)
            print(hubDay.row)
            let peerDay = try homeAssistant.map { peer in
                HouseholdPeriod(
                    label: "Home Assistant", from: peer0!, to: try peer.counters(), simulatedDays: days,
                    peakRSSKiB: (try? memoryKiB(peer.process.processIdentifier, "VmHWM")) ?? 0)
            }
            await commanding.value
            let received = scrapeMetric(port: httpPort, "hub_mqtt_messages_received_total")
            let deviceMessages = seen.deviceMessages - deviceMessages0
            let commands = commander.result
            let throttled = quota?.throttled()

            if let peerDay { printPeer(hub: hubDay, peer: peerDay) }
            print("\nCommands and readings over the window:\n")
            print("| figure | value |\n|---|---:|")
            print("| switch commands sent (one every \(String(format: "%.2f", traffic.commandSpacing)) s real) | \(commands.sent) |")
            print("| confirmed (retained `switch` showing the new state within 10 s) | \(commands.latencies.count) |")
            print("| dropped (not confirmed within 10 s) | \(commands.sent - commands.latencies.count) |")
            print("| command -> confirmed, p50 / p99 | \(ms(commands.percentile(0.5))) ms / \(ms(commands.percentile(0.99))) ms |")
            if let received0, let received {
                // The hub also receives the bench's commands and its own subscriptions' traffic.
                let hubGot = received - received0 - commands.sent
                print(
                    "| device and bridge messages: delivered to a bare subscriber / received by the hub (less the commands) | \(deviceMessages) / \(hubGot) |"
                )
                print("| readings dropped before the hub (bare subscriber minus hub, at least 0) | \(max(0, deviceMessages - hubGot)) |")
            }
            if let quota, let t0 = throttled0, let t1 = throttled {
                print("| CPU quota | \(String(format: "%g", quota.cores)) of one core (cgroup v\(quota.version)) |")
                print(
                    "| times throttled / time throttled | \(t1.times - t0.times) / \(String(format: "%.1f", t1.seconds - t0.seconds)) s |")
            }
            print("| hub CPU seconds per simulated day | \(String(format: "%.1f", hubDay.cpuSecondsPerDay)) |")
            hub.terminate()
            hub.waitUntilExit()
        }
    }

    /// The data directory `<root>/<name>`: on a loop-mounted ext4 of its own when asked and
    /// possible (else on the disk under `root`, with a note), and the block device holding it.
    func disk(root: String, name: String, cleanups: inout [() -> Void]) throws -> (String, Result<BlockDevice, HubError>) {
        var directory = root + "/" + name
        if ownDisk {
            do {
                let loop = try LoopDisk(
                    image: root + "/\(name).img", mountPoint: root + "/\(name)-disk", megabytes: 512, options: mountOptions)
                cleanups.append { loop.remove() }
                directory = loop.mountPoint + "/data"
            } catch {
                print("Own disk for \(name): not made (\(error)); measuring the device under \(root) instead, which other writers share.")
            }
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return (directory, BlockDevice.holding(directory))
    }

    func printPeer(hub: HouseholdPeriod, peer: HouseholdPeriod) {
        func ratio(_ a: Int?, _ b: Int?) -> String {
            guard let a, let b, b > 0 else { return "-" }
            return String(format: "%.3f", Double(a) / Double(b))
        }
        print(
            """

            Beside Home Assistant's recorder on the same broker and traffic, per simulated day:

            | per simulated day | hub | Home Assistant | hub / Home Assistant |
            |---|---:|---:|---:|
            | process wrote (write_bytes) | \(hub.writeBytesPerDay) | \(peer.writeBytesPerDay) | \(ratio(hub.writeBytesPerDay, peer.writeBytesPerDay)) |
            | device wrote | \(hub.deviceBytesPerDay.map(String.init) ?? "not found") | \(peer.deviceBytesPerDay.map(String.init) ?? "not found") | \(ratio(hub.deviceBytesPerDay, peer.deviceBytesPerDay)) |
            | CPU seconds | \(String(format: "%.1f", hub.cpuSecondsPerDay)) | \(String(format: "%.1f", peer.cpuSecondsPerDay)) | \(String(format: "%.3f", peer.cpuSecondsPerDay > 0 ? hub.cpuSecondsPerDay / peer.cpuSecondsPerDay : 0)) |
            | peak RSS | \(String(format: "%.1f MiB", Double(hub.peakRSSKiB) / 1024)) | \(String(format: "%.1f MiB", Double(peer.peakRSSKiB) / 1024)) | |
            """)
    }

    func ms(_ s: Double?) -> String { s.map { String(format: "%.1f", $0 * 1000) } ?? "-" }

    func waitUntil(_ what: String, seconds: Double, _ process: Process, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition() {
            guard process.isRunning else {
                throw HubError.failed("waiting for \(what): the process exited with status \(process.terminationStatus)")
            }
            guard ContinuousClock.now < deadline else { throw HubError.failed("no \(what) after \(Int(seconds)) s") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func sleep(until instant: ContinuousClock.Instant, _ hub: Process) async throws {
        while ContinuousClock.now < instant {
            guard hub.isRunning else { throw HubError.failed("the hub exited with status \(hub.terminationStatus)") }
            try await Task.sleep(for: min(.seconds(1), instant - ContinuousClock.now))
        }
    }
}
