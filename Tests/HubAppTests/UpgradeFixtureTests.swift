import BrokerHarness
import Foundation
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHistory

/// Data directories written by earlier builds of this project (`Tests/Fixtures/datadirs/`, see its
/// README), opened with today's hub: the read models are the ones the old build printed, the log
/// and its chain are sound and unchanged, what today's hub keeps in another format (history, the
/// audit tree, snapshots) is rebuilt or left aside and said, and a second start rebuilds nothing.
/// Every fixture in the folder is a case of its own: a new one is covered by adding its files.
@Suite(.serialized) struct UpgradeFixtureTests {
    /// The repository root (this file is Tests/HubAppTests/UpgradeFixtureTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let folder = root.appendingPathComponent("Tests/Fixtures/datadirs")

    /// `<name>.tar.gz` in the folder, each with `<name>.replay.json` (the old build's `hub replay
    /// --json`), `<name>.verify.txt` (its `hub verify`), `<name>.head.json` (the last line of its
    /// `hub export -`) and `<name>.formats.json` (what the data directory's files are).
    static func fixtureNames() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".tar.gz") }.map { String($0.dropLast(".tar.gz".count)) }.sorted()
    }

    static let companions = [".replay.json", ".verify.txt", ".head.json", ".formats.json"]

    /// What a fixture's `formats.json` says its files are.
    struct Formats {
        var commit: String
        /// The first 8 bytes of its segments (`HUBLOG01`, `HUBLOG02`).
        var segmentMagic: String
        /// The history files' format version (``HistoryFiles/formatVersion``) the old build wrote.
        var historyFormat: Int
        /// The read-model snapshots' format (``Hub/snapshotFormat``) the old build wrote.
        var snapshotFormat: Int
        /// Whether the old build kept a Merkle tree over the log (`audit/tree`).
        var auditTree: Bool

        init(_ json: JSONValue) throws {
            guard let commit = json["commit"]?.stringValue, let magic = json["segment_magic"]?.stringValue,
                let history = json["history_format"]?.doubleValue, let snapshot = json["snapshot_format"]?.doubleValue,
                let audit = json["audit_tree"]?.boolValue
            else {
                throw BrokerHarnessError(
                    "formats.json lacks commit, segment_magic, history_format, snapshot_format or audit_tree: \(json.serialized())")
            }
            (self.commit, segmentMagic, historyFormat, snapshotFormat, auditTree) = (commit, magic, Int(history), Int(snapshot), audit)
        }
    }

    static func read(_ name: String) throws -> String {
        try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
    }

    /// What a finished process printed, and its exit status.
    struct Finished {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> Finished {
        let out = Pipe(), err = Pipe()
        let process = try spawn {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            return process
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Finished(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The first capture group of `pattern` in `text`.
    static func capture(_ pattern: String, in text: String) -> String? {
        let regex = try! NSRegularExpression(pattern: pattern)
        guard let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
            let range = Range(match.range(at: 1), in: text)
        else { return nil }
        return String(text[range])
    }

    /// `log sound: N events` and `head hash: H` of a `hub verify`.
    static func soundness(_ verify: String) -> (events: UInt64, head: String)? {
        guard let events = capture(#"log sound: (\d+) events"#, in: verify).flatMap({ UInt64($0) }),
            let head = capture(#"head hash: ([0-9a-f]{64})"#, in: verify)
        else { return nil }
        return (events, head)
    }

    /// Where `new` lacks or differs from what `old` holds: every key and value of `old` must be in
    /// `new` (keys added since are allowed); arrays must have the same items in the same order.
    static func differences(_ old: JSONValue, _ new: JSONValue?, at path: String = "$") -> [String] {
        guard let new else { return ["\(path): missing (was \(old.serialized().prefix(200)))"] }
        switch old {
        case .object(let members):
            guard case .object(let newMembers) = new else { return ["\(path): was an object, now \(new.serialized().prefix(200))"] }
            return members.flatMap { key, value in
                differences(value, newMembers.first { $0.0 == key }?.1, at: path + "." + key)
            }
        case .array(let items):
            guard case .array(let newItems) = new else { return ["\(path): was an array, now \(new.serialized().prefix(200))"] }
            guard items.count == newItems.count else { return ["\(path): \(items.count) items, now \(newItems.count)"] }
            return zip(items, newItems).enumerated().flatMap { i, pair in differences(pair.0, pair.1, at: path + "[\(i)]") }
        default:
            return old == new ? [] : ["\(path): was \(old.serialized().prefix(200)), now \(new.serialized().prefix(200))"]
        }
    }

    /// The sequence a snapshot file's name carries (`snapshot-00000000000000000123.snap`).
    static func sequence(ofSnapshot name: String) -> UInt64? {
        capture(#"^snapshot-(\d{20})\.snap$"#, in: name).flatMap { UInt64($0) }
    }

    /// `hub run --demo` (as the fixture was made) with no MQTT or HTTP until it runs, a moment more,
    /// then SIGTERM: what it said at start.
    static func runOnce(_ data: String) async throws -> String {
        let hub = try await DocsAndScriptsTests.startDemoHub(["--data-dir", data, "--demo", "--no-mqtt", "--no-http"])
        try await Task.sleep(for: .seconds(2))
        let said = hub.output
        hub.stop()
        #expect(hub.process.terminationStatus == 0, "hub run stopped with \(hub.process.terminationStatus):\n\(said)")
        return said
    }

    /// The folder holds a fixture from before the segment format change (HUBLOG01) and one of the
    /// current format, each with its companions, and the README names each.
    @Test func theFolderKeepsFixturesOfEachSegmentFormat() throws {
        let names = Self.fixtureNames()
        #expect(names.count >= 2, "fixtures: \(names)")
        let readme = try Self.read("README.md")
        #expect(readme.contains("## Adding a fixture"))
        var magics: Set<String> = []
        for name in names {
            for companion in Self.companions {
                #expect(
                    FileManager.default.fileExists(atPath: Self.folder.appendingPathComponent(name + companion).path), "\(name)\(companion)"
                )
            }
            #expect(readme.contains(name + ".tar.gz"), "the README does not name \(name).tar.gz")
            if let formats = try? Formats(JSONValue.parse(try Self.read(name + ".formats.json"))) {
                magics.insert(formats.segmentMagic)
                #expect(readme.contains(formats.commit), "the README does not name \(name)'s commit \(formats.commit)")
            }
        }
        #expect(magics.contains("HUBLOG01"), "no fixture from before the segment format change: \(magics)")
        #expect(
            magics.contains(String(decoding: RecordFormat.segmentMagic, as: UTF8.self)), "no fixture of today's segment format: \(magics)")
    }

    @Test(arguments: fixtureNames()) func todaysHubOpensTheOldBuildsDataDirectory(_ name: String) async throws {
        let hub = try #require(builtExecutable("hub"), "the hub executable was not built")
        let formats = try Formats(JSONValue.parse(try Self.read(name + ".formats.json")))
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let untar = try Self.run("/usr/bin/env", ["tar", "xzf", Self.folder.appendingPathComponent(name + ".tar.gz").path, "-C", dir])
        try #require(untar.status == 0, "tar: \(untar.stderr)")
        let data = dir + "/data"
        let files = FileManager.default

        // The files are what formats.json says.
        let segments = try files.contentsOfDirectory(atPath: data + "/log").filter { $0.hasSuffix(".seg") }.sorted()
        try #require(!segments.isEmpty, "no segment in \(name)")
        let firstSegment = try #require(FileHandle(forReadingAtPath: data + "/log/" + segments[0]))
        let magic = String(decoding: try firstSegment.read(upToCount: 8) ?? Data(), as: UTF8.self)
        try firstSegment.close()
        #expect(magic == formats.segmentMagic, "\(name): the first segment starts \(magic)")
        let oldSnapshots = ((try? files.contentsOfDirectory(atPath: data + "/snapshots")) ?? []).filter {
            Self.sequence(ofSnapshot: $0) != nil
        }.sorted()
        try #require(!oldSnapshots.isEmpty, "\(name) holds no snapshot")
        let newestOld = oldSnapshots.last!
        let snapshotBytes = try Data(contentsOf: URL(fileURLWithPath: data + "/snapshots/" + newestOld))
        #expect(
            snapshotBytes.range(of: Data(#""format":\#(formats.snapshotFormat)"#.utf8)) != nil,
            "\(name): \(newestOld) is not of snapshot format \(formats.snapshotFormat)")
        let historyMark = HistoryFiles.inspect(directory: data + "/history")?.mark
        #expect(historyMark != nil, "\(name): no synced history files")
        #expect((historyMark?.version ?? 1) == formats.historyFormat, "\(name): history files of format \(historyMark?.version ?? 1)")
        #expect(files.fileExists(atPath: data + "/audit/tree") == formats.auditTree, "\(name): audit/tree")

        // What the old build said of it.
        let oldVerify = try #require(Self.soundness(try Self.read(name + ".verify.txt")), "\(name).verify.txt says no log sound/head hash")
        let oldHead = try JSONValue.parse(try Self.read(name + ".head.json").trimmingCharacters(in: .whitespacesAndNewlines))
        let oldHeadSeq = try #require(oldHead["seq"]?.doubleValue.map { UInt64($0) }, "\(name).head.json: no seq")
        let oldHeadHash = try #require(oldHead["hash"]?.stringValue, "\(name).head.json: no hash")
        #expect(oldHeadSeq == oldVerify.events)
        #expect(oldHeadHash == oldVerify.head)
        let oldReplay = try JSONValue.parse(try Self.read(name + ".replay.json"))

        // Today's hub reads the log as the old build wrote it: sound, the same head, the same read models.
        let verify = try Self.run(hub, ["verify", "--data-dir", data])
        #expect(verify.status == 0, "\(name): hub verify: \(verify.stdout)\(verify.stderr)")
        let sound = Self.soundness(verify.stdout)
        #expect(sound?.events == oldVerify.events, "\(name): \(verify.stdout)")
        #expect(sound?.head == oldVerify.head, "\(name): the head hash moved: \(verify.stdout)")
        if formats.snapshotFormat != Hub.snapshotFormat {
            #expect(
                verify.stdout.contains("snapshot \(newestOld): not compared (another read-model format"),
                "\(name): \(verify.stdout)")
        } else {
            #expect(
                verify.stdout.contains(
                    "snapshot \(newestOld): matches the log folded to sequence \(Self.sequence(ofSnapshot: newestOld)!)"),
                "\(name): \(verify.stdout)")
        }
        let replay = try Self.run(hub, ["replay", "--data-dir", data, "--json"])
        #expect(replay.status == 0, "\(name): hub replay: \(replay.stderr)")
        let differences = Self.differences(oldReplay, try? JSONValue.parse(replay.stdout))
        #expect(
            differences.isEmpty,
            "\(name): hub replay --json differs from the old build's:\n\(differences.prefix(20).joined(separator: "\n"))")
        let export = try Self.run(hub, ["export", "--data-dir", data, "-"])
        #expect(export.status == 0, "\(name): hub export: \(export.stderr)")
        let lines = export.stdout.split(separator: "\n")
        #expect(UInt64(lines.count) == oldHeadSeq, "\(name): \(lines.count) exported lines")
        let head = try lines.last.map { try JSONValue.parse(String($0)) }
        #expect(
            head?["seq"] == oldHead["seq"] && head?["hash"] == oldHead["hash"],
            "\(name): the last exported record \(head?.serialized() ?? "none")")

        // The first start: what is of another format is rebuilt from the log, and said.
        let recorded = try DataFormats.read(dataDirectory: data)
        let first = try await Self.runOnce(data)
        if let recorded {
            #expect(first.contains("\(data) was written by \(recorded.writtenBy) in older formats ("), "\(name): \(first)")
        } else {
            #expect(first.contains("\(data) has no format.json (written by a hub before 0.9.0)"), "\(name): \(first)")
        }
        #expect(try DataFormats.read(dataDirectory: data) == .current, "\(name): format.json after the first start")
        let oldSequence = Self.sequence(ofSnapshot: newestOld)!
        if formats.snapshotFormat != Hub.snapshotFormat {
            for old in oldSnapshots {
                #expect(
                    first.contains(
                        "snapshot \(old) set aside as \(old).set-aside (kept, never used): it is from another hub version (read-model format \(formats.snapshotFormat); this hub's is \(Hub.snapshotFormat))"
                    ),
                    "\(name): \(first)")
            }
            #expect(first.contains("replayed \(oldHeadSeq) events; log holds \(oldHeadSeq)"), "\(name): \(first)")
        } else {
            #expect(first.contains("read models restored from the snapshot at sequence \(oldSequence)"), "\(name): \(first)")
            #expect(first.contains("replayed \(oldHeadSeq - oldSequence) events; log holds \(oldHeadSeq)"), "\(name): \(first)")
        }
        let historyRebuilt = first.contains("history files rebuilt from the log")
        #expect(historyRebuilt == (formats.historyFormat != HistoryFiles.formatVersion), "\(name): \(first)")
        #expect(!first.contains("is not this log's"), "\(name): \(first)")
        #expect(first.contains("holds no Merkle tree yet: building it from the log's") == !formats.auditTree, "\(name): \(first)")

        // After it: the log goes on from the old head, and history, the audit tree and a snapshot of
        // today's formats are there, all matching the log.
        let after = try Self.run(hub, ["verify", "--data-dir", data])
        #expect(after.status == 0, "\(name): hub verify after the first start: \(after.stdout)\(after.stderr)")
        let last = try #require(Self.soundness(after.stdout)?.events, "\(name): \(after.stdout)")
        #expect(last >= oldHeadSeq)
        #expect(after.stdout.contains("series, synced at sequence \(last) of this log"), "\(name): \(after.stdout)")
        #expect(after.stdout.contains("audit tree: \(last) records match the log; "), "\(name): \(after.stdout)")
        #expect(after.stdout.contains(": matches the log folded to sequence \(last)"), "\(name): \(after.stdout)")
        let exported = try Self.run(hub, ["export", "--data-dir", data, "-"]).stdout.split(separator: "\n")
        let atOldHead: JSONValue? = try exported.count >= oldHeadSeq ? JSONValue.parse(String(exported[Int(oldHeadSeq) - 1])) : nil
        #expect(atOldHead?["hash"] == oldHead["hash"], "\(name): record \(oldHeadSeq) is now \(atOldHead?.serialized() ?? "missing")")
        #expect(files.fileExists(atPath: data + "/audit/tree"))
        if formats.snapshotFormat != Hub.snapshotFormat {
            // The old build's snapshots are set aside: kept beside, never used or compared again.
            for old in oldSnapshots {
                #expect(!files.fileExists(atPath: data + "/snapshots/" + old), "\(name): \(old) is still in use")
                #expect(files.fileExists(atPath: data + "/snapshots/" + old + ".set-aside"), "\(name): \(old) was not kept")
                #expect(!after.stdout.contains("snapshot \(old):"), "\(name): \(after.stdout)")
            }
        }

        // The second start is quick: restored from the snapshot the first one wrote, nothing replayed or rebuilt.
        let second = try await Self.runOnce(data)
        #expect(second.contains("read models restored from the snapshot at sequence \(last)"), "\(name): \(second)")
        #expect(second.contains("replayed 0 events; log holds \(last)"), "\(name): \(second)")
        #expect(!second.contains("rebuilt"), "\(name): \(second)")
        #expect(!second.contains("from another hub version"), "\(name): \(second)")
        #expect(!second.contains("set aside"), "\(name): \(second)")
        #expect(!second.contains("no Merkle tree yet"), "\(name): \(second)")
        let afterSecond = try Self.run(hub, ["verify", "--data-dir", data])
        #expect(afterSecond.status == 0, "\(name): \(afterSecond.stdout)\(afterSecond.stderr)")
    }
}
