import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT

/// `hub-bench startup`: the hub's start-up with a fresh snapshot, at a log of N events. Writes N
/// real domain events (the log benchmark's workload, `--per-append` events per command), starts
/// the hub once (replaying everything, then a snapshot at close), and then times starting it again:
/// with the log's recovery checkpoint, and with it deleted (every frame scanned, as before it).
struct StartupBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "startup",
        abstract: "Hub start-up with a fresh snapshot at N events: with the log's recovery checkpoint and without it.")

    @Option(help: "Events in the log.") var events = 2_000_000
    @Option(help: "Events per append (one command id each).") var perAppend = 10
    @Option(help: "Appends per group commit.") var batch = 200
    @Option(help: "Where to put the data directory (removed afterwards).") var dir = "./hub-bench-startup"

    func run() async throws {
        try await Console.guarded {
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let paths = HubPaths(dataDirectory: root)
            let written = try await write(paths)
            let logBytes = try FileManager.default.contentsOfDirectory(atPath: paths.log).filter { $0.hasSuffix(".seg") }
                .reduce(0) { $0 + ((try FileManager.default.attributesOfItem(atPath: paths.log + "/" + $1)[.size] as? Int) ?? 0) }
            let (replayAll, _) = try await start(paths)
            var withCheckpoint: [Double] = [], withoutCheckpoint: [Double] = []
            var notes = ""
            for _ in 0..<3 {
                withCheckpoint.append(try await start(paths).seconds)
                try FileManager.default.removeItem(atPath: paths.log + "/recovery.ckpt")
                let (seconds, said) = try await start(paths)
                withoutCheckpoint.append(seconds)
                notes = said
            }
            let fast = withCheckpoint.sorted()[1], slow = withoutCheckpoint.sorted()[1]
            print(
                """
                | hub start-up, \(written) events (\(logBytes / 1_048_576) MiB of segments), \(perAppend) per command | seconds |
                |---|---:|
                | first start, no snapshot (replays every event) | \(String(format: "%.2f", replayAll)) |
                | with a fresh snapshot and the recovery checkpoint (median of 3: \(list(withCheckpoint))) | \(String(format: "%.3f", fast)) |
                | with a fresh snapshot, recovery.ckpt deleted (every frame scanned; median of 3: \(list(withoutCheckpoint))) | \(String(format: "%.3f", slow)) |
                | ratio | \(String(format: "%.3f", fast / max(slow, 1e-9))) |
                """)
            Console.note("startup: without the checkpoint the hub said: \(notes)")
        }
    }

    /// Appends the workload's events straight to the segment log in the data directory.
    func write(_ paths: HubPaths) async throws -> Int {
        try FileManager.default.createDirectory(atPath: paths.log, withIntermediateDirectories: true)
        let store = try SegmentStore(directory: paths.log)
        let workload = DomainWorkload.make()
        var appended = 0, appendNumber = 0
        var next: [String: Int] = [:]
        while appended < events {
            var requests: [AppendRequest] = []
            for _ in 0..<batch where appended < events {
                let stream = workload.stream(forAppend: appendNumber)
                let count = min(perAppend, events - appended)
                let first = next[stream, default: 0]
                requests.append(workload.request(appendNumber: appendNumber, firstIndex: first, count: count))
                next[stream] = first + count
                appended += count
                appendNumber += 1
            }
            for result in await store.appendAll(requests) { _ = try result.get() }
            if appended % 1_000_000 < perAppend * batch { Console.note("startup: \(appended) events written") }
        }
        store.close()
        return appended
    }

    /// Starts the hub on the data directory and closes it: the time to start, and its opening notes.
    func start(_ paths: HubPaths) async throws -> (seconds: Double, notes: String) {
        let t0 = ContinuousClock.now
        let hub = try await Hub(paths: paths)
        let elapsed = ContinuousClock.now - t0
        let notes = hub.openingNotes.joined(separator: "; ")
        try await hub.close()
        return (elapsed.inSeconds, notes)
    }

    func list(_ values: [Double]) -> String { values.map { String(format: "%.3f", $0) }.joined(separator: ", ") }
}
