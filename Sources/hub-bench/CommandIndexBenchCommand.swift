import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT

/// `hub-bench command-index`: the command-id index at a large number of commands. Appends N
/// commands, each with its own id (batched, one group commit per batch), to a fresh `SegmentStore`
/// in this process, then reports this process's RSS, the size of `commands.idx` and of the log, a
/// few duplicates of long-gone ids, and the time to open the log again: with its recovery checkpoint
/// and the index, without the checkpoint (a scan of every frame), and without the index.
struct CommandIndexBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "command-index",
        abstract: "Append N commands with ids: RSS, commands.idx size, lookups, re-open with and without the checkpoint and the index.")

    @Option(help: "Commands to append.") var commands = 1_000_000
    @Option(help: "Commands per group commit.") var batch = 2000
    @Option(help: "Where to put the log (removed afterwards).") var dir = "./hub-bench-command-index"

    func run() async throws {
        try await Console.guarded {
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let rss0 = try memoryKiB(getpid(), "VmRSS")
            let store = try SegmentStore(directory: root)
            let t0 = ContinuousClock.now
            var done = 0
            while done < commands {
                let n = min(batch, commands - done)
                let requests = (done..<(done + n)).map { i in
                    AppendRequest(
                        stream: "device/d\(i % 50)", expected: .any, causation: Causation(commandId: "cmd-\(i)", actor: "bench"),
                        events: [ProposedEvent(type: "SwitchToggled", schemaVersion: 1, timestamp: Int64(i), payload: [1, 2, 3, 4])])
                }
                for result in await store.appendAll(requests) { _ = try result.get() }
                done += n
                if done % 1_000_000 == 0 {
                    Console.note("command-index: \(done) appended, RSS \(try memoryKiB(getpid(), "VmRSS") / 1024) MiB")
                }
            }
            let appendSeconds = (ContinuousClock.now - t0).inSeconds
            let rss = try memoryKiB(getpid(), "VmRSS")
            var lookups: [Double] = []
            for i in stride(from: 0, to: commands, by: max(1, commands / 10)) {
                let l0 = ContinuousClock.now
                guard try store.commandResult("cmd-\(i)")?.lastSequence == UInt64(i + 1) else {
                    throw HubError.failed("cmd-\(i) not found")
                }
                lookups.append((ContinuousClock.now - l0).inSeconds)
            }
            store.close()
            let indexBytes = try fileSize(root + "/commands.idx")
            let logBytes = try FileManager.default.contentsOfDirectory(atPath: root).filter { $0.hasSuffix(".seg") }
                .reduce(0) { $0 + (try fileSize(root + "/" + $1)) }
            let o0 = ContinuousClock.now
            let reopened = try SegmentStore(directory: root)
            let openWith = (ContinuousClock.now - o0).inSeconds
            let rssOpen = try memoryKiB(getpid(), "VmRSS")
            let readWith = reopened.recovery.scannedRecords
            reopened.close()
            try FileManager.default.removeItem(atPath: root + "/recovery.ckpt")
            let s0 = ContinuousClock.now
            let scanned = try SegmentStore(directory: root)
            let openScan = (ContinuousClock.now - s0).inSeconds
            let readScan = scanned.recovery.scannedRecords
            scanned.close()
            try FileManager.default.removeItem(atPath: root + "/commands.idx")
            let r0 = ContinuousClock.now
            let rebuilt = try SegmentStore(directory: root)
            let openRebuild = (ContinuousClock.now - r0).inSeconds
            let note = rebuilt.openingNotes.joined(separator: "; ")
            rebuilt.close()
            print(
                """
                | \(commands) commands, each with its own id, \(batch) per commit | value |
                |---|---:|
                | appended in | \(String(format: "%.1f", appendSeconds)) s (\(Int(Double(commands) / appendSeconds)) commands/s) |
                | process RSS before / after appending | \(rss0 / 1024) MiB / \(rss / 1024) MiB |
                | commands.idx / the log's segments | \(indexBytes / 1_048_576) MiB / \(logBytes / 1_048_576) MiB |
                | duplicate lookups of 10 old ids (outside the window), slowest | \(String(format: "%.2f", (lookups.max() ?? 0) * 1000)) ms |
                | re-open with the recovery checkpoint and the index | \(String(format: "%.3f", openWith)) s (\(readWith) records read), RSS then \(rssOpen / 1024) MiB |
                | re-open with recovery.ckpt deleted (every frame scanned) | \(String(format: "%.2f", openScan)) s (\(readScan) records read); ratio \(String(format: "%.3f", openWith / max(openScan, 1e-9))) |
                | re-open with the index deleted (rebuilt by a scan) | \(String(format: "%.1f", openRebuild)) s |
                """)
            Console.note("command-index: the rebuild said: \(note)")
        }
    }

    func fileSize(_ path: String) throws -> Int { (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }
}
