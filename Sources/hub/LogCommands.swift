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

/// Opens the log read-only (beside a running hub, without repairing anything).
func openLogReadOnly(_ data: DataOptions) async throws -> any EventStore {
    let paths = try data.paths()
    guard paths.mayHoldLog else {
        throw HubError.usage("no event log in \(data.dataDir) (start one with `hub run --data-dir \(data.dataDir)` or `hub import`)")
    }
    return try await paths.openEventStore(readOnly: true)
}

/// Buffered standard output for JSON Lines.
final class StdoutLines {
    var buffer: [UInt8] = []
    func write(_ line: String) {
        buffer += line.utf8
        buffer.append(10)
        if buffer.count > 1 << 16 { flush() }
    }
    func flush() {
        writeStandardOutput(buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "Print events as JSON Lines (the JSON the MQTT surface publishes).")

    @OptionGroup var data: DataOptions
    @Option(help: "Only this stream (e.g. device/lamp); a trailing / or * matches a prefix (device/).")
    var stream: String?
    @Option(help: "Only this event type (e.g. SwitchToggled).")
    var type: String?
    @Option(help: "From this sequence number or ISO-8601 time on.")
    var since: String?
    @Option(help: "Up to and including this sequence number or ISO-8601 time.")
    var until: String?
    @Flag(help: "Keep printing new events as they are appended.")
    var follow = false

    func run() async throws {
        try await Console.guarded {
            let store = try await openLogReadOnly(data)
            let sinceBound = try since.map(LogBound.init(parsing:))
            let untilBound = try until.map(LogBound.init(parsing:))
            var start: UInt64 = 1
            if case .sequence(let n)? = sinceBound { start = max(n, 1) }
            let streamPrefix: String? = stream.flatMap { s in
                s.hasSuffix("*") ? String(s.dropLast()) : (s.hasSuffix("/") ? s : nil)
            }
            let out = StdoutLines()
            // Returns false once the until bound is passed.
            func emit(_ record: EventRecord) -> Bool {
                if let untilBound, !untilBound.admits(sequence: record.sequence, timestamp: record.timestamp) { return false }
                if case .time(let t)? = sinceBound, record.timestamp < t { return true }
                if let stream {
                    if let streamPrefix {
                        if !record.stream.hasPrefix(streamPrefix) { return true }
                    } else if record.stream != stream {
                        return true
                    }
                }
                if let type, record.type != type { return true }
                out.write(EventLines.render(record))
                return true
            }
            if follow {
                for try await record in store.subscribe(from: start) {
                    if !emit(record) { break }
                    out.flush()
                }
            } else {
                try await store.read(from: start, through: store.lastSequence) { emit($0) }
            }
            out.flush()
            await store.close()
        }
    }
}

struct ReplayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay", abstract: "Rebuild every read model from the log as of a point and print them.")

    @OptionGroup var data: DataOptions
    @Option(help: "Stop after this sequence number or ISO-8601 time (default: the whole log).")
    var until: String?
    @Flag(help: "Print JSON instead of tables.")
    var json = false
    @Option(
        help: ArgumentHelp(
            "Print only this history, as of the bound: SUBJECT:QUANTITY:BUCKET (e.g. device/kettle:power:1h).",
            valueName: "subject:quantity:bucket"))
    var history: String?
    @Option(help: "With --history: the range's start (ISO-8601; default: 60 minutes, 24 hours or 30 days before --to).")
    var from: String?
    @Option(help: "With --history: the range's end (ISO-8601; default: the end of the bucket holding the last event folded).")
    var to: String?

    func run() async throws {
        try await Console.guarded {
            let store = try await openLogReadOnly(data)
            let bound = try until.map(LogBound.init(parsing:))
            // The tables show no history; --history folds the one series it asks for.
            let asked = try history.map { try ReplayHistory(spec: $0, from: from, to: to) }
            var state = HubState(foldsHistory: asked?.seriesKey != nil)
            state.history = HistoryModel(only: asked?.seriesKey)
            let unreadable = try await Hub.fold(store: store, into: &state, through: store.lastSequence, until: bound)
            let asOf = bound?.description ?? "the end of the log"
            if let asked {
                try asked.print(state, asOf: asOf, json: json)
            } else if from != nil || to != nil {
                throw HubError.usage("--from and --to go with --history")
            } else if json {
                print(ReadModelReport.json(state, asOf: asOf, vault: OwnerDataVault(dataDirectory: data.dataDir)).serialized())
            } else {
                print(ReadModelReport.table(state, asOf: asOf), terminator: "")
            }
            if unreadable > 0 { Console.note("hub: \(unreadable) events of types this hub version cannot read were skipped") }
            await store.close()
        }
    }
}

struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check every record's frame, the whole hash chain and every snapshot; exit non-zero at the first fault.")

    @OptionGroup var data: DataOptions

    /// Each snapshot must be sealed, bound to the log's chain hash at its sequence, and equal to the
    /// log folded to that sequence; a bad one is named, and nothing is changed.
    func checkSnapshots() async throws {
        let paths = try data.paths()
        let audit = try await SnapshotAudit.check(paths: paths) { try await openLogReadOnly(data) }
        for finding in audit.findings where finding.problem == nil {
            let verdict = finding.skipped.map { "not compared (\($0))" } ?? "matches the log folded to sequence \(finding.sequence ?? 0)"
            print("snapshot \(finding.name): \(verdict)")
        }
        if !audit.sealsChecked, !audit.findings.isEmpty {
            print("note: snapshot seals not checked (\(paths.snapshots)/seal.key cannot be read)")
        }
        let bad = audit.findings.filter { $0.problem != nil }
        for finding in bad { Console.note("hub: snapshot \(paths.snapshots)/\(finding.name) does not match the log: \(finding.problem!)") }
        guard bad.isEmpty else {
            throw HubError.failed(
                "\(bad.count) snapshot(s) do not match the log (named above); the log is sound: "
                    + "move them out of \(paths.snapshots) and the hub replays from the log")
        }
    }

    /// Says whether the next start will use the history files or rebuild them (changes nothing).
    /// Beside a running hub, files it has not synced yet are its to sync, not a fault.
    func checkHistoryFiles(_ store: any EventStore) async throws {
        let paths = try data.paths()
        let directory = paths.history
        guard let found = HistoryFiles.inspect(directory: directory) else { return }
        if let reason = try await HistoryFiles.distrust(found.mark, hasSeries: found.series > 0, store: store) {
            if found.mark == nil, paths.logURL == nil, Self.heldByRunningHub(paths.log + "/LOCK") == true {
                print(
                    "history files: \(found.series) series, being written by the hub running on this log; "
                        + "it syncs them with its next snapshot and when it stops (nothing to do)")
                return
            }
            print("note: the history files in \(directory) are rebuilt from the log at the next start: \(reason)")
        } else if let mark = found.mark {
            print("history files: \(found.series) series, synced at sequence \(mark.sequence) of this log")
        }
    }

    /// Whether a process holds the writer's lock on the segment log (`flock` on `<log>/LOCK`), read
    /// from `/proc/locks` without taking the lock (which would stop a hub starting that instant);
    /// nil when that cannot be told.
    static func heldByRunningHub(_ lockPath: String) -> Bool? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: lockPath),
            let inode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value,
            let locks = try? String(contentsOfFile: "/proc/locks", encoding: .utf8)
        else { return nil }
        // `1: FLOCK  ADVISORY  WRITE 4242 00:2f:1234567 0 EOF`: the file is major:minor:inode.
        return locks.split(separator: "\n").contains { line in
            line.contains("FLOCK")
                && line.split(separator: " ").contains { field in
                    let parts = field.split(separator: ":")
                    return parts.count == 3 && UInt64(parts[2]) == inode
                }
        }
    }

    func run() async throws {
        try await Console.guarded {
            let store = try await openLogReadOnly(data)
            let started = ContinuousClock.now
            let bar = ProgressBar(enabled: Console.stderrIsTerminal)
            let report = try await store.verify { done, total in
                if ContinuousClock.now - started > .milliseconds(500) { bar.show(done: done, total: total) }
            }
            bar.finish()
            let seconds =
                Double((ContinuousClock.now - started).components.attoseconds) / 1e18
                + Double((ContinuousClock.now - started).components.seconds)
            let storage = report.segments > 0 ? " in \(report.segments) segment(s), \(report.bytes) bytes," : ""
            print("log sound: \(report.records) events\(storage) checked in " + String(format: "%.2f", seconds) + " s")
            print("head hash: \(report.headHash) (keep it to detect later truncation or rewriting)")
            if let note = report.incompleteTail { print("note: \(note)") }
            try await checkHistoryFiles(store)
            do { try await checkAudit(store) } catch {
                await store.close()
                throw error
            }
            await store.close()
            try await checkSnapshots()
        }
    }
}

/// A one-line progress bar on stderr.
final class ProgressBar {
    let enabled: Bool
    var shown = false
    init(enabled: Bool) { self.enabled = enabled }

    /// Shows how far a job is; `done` and `total` are in any one unit (bytes, records).
    func show(done: Int, total: Int) {
        guard enabled, total > 0 else { return }
        let fraction = min(1, Double(done) / Double(total))
        let width = 40
        let filled = Int(fraction * Double(width))
        let line =
            "\r[" + String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled) + "] "
            + String(format: "%3.0f%%", fraction * 100)
        FileHandle.standardError.write(Data(line.utf8))
        shown = true
    }

    func finish() {
        if shown { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}

struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write the whole log as JSON Lines with each record's chain hash ('-' for stdout).")

    @OptionGroup var data: DataOptions
    @Argument(help: "The file to write.")
    var file: String

    func run() async throws {
        try await Console.guarded {
            let store = try await openLogReadOnly(data)
            let count = try await LogTransfer.export(store: store, to: file)
            await store.close()
            if file != "-" { Console.note("hub: exported \(count) events to \(file)") }
        }
    }
}

struct ImportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Load an exported JSON Lines file into an empty data directory; nothing is written unless every line checks out.")

    @OptionGroup var data: DataOptions
    @Argument(help: "The file to read.")
    var file: String

    func run() async throws {
        try await Console.guarded {
            let paths = try data.paths()
            let count = try await LogTransfer.importFile(file, into: paths)
            Console.note("hub: imported \(count) events into \(paths.logURL == nil ? data.dataDir : paths.logDescription)")
        }
    }
}
