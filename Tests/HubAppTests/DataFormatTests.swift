import BrokerHarness
import Foundation
import HubRelease
import Testing

@testable import HubApp

/// `hub --version` and the data directory's `format.json`: what wrote it, and a directory a newer
/// hub wrote refused by every command, changing nothing.
@Suite struct DataFormatTests {
    /// Every file under `dir` with its bytes (directories listed too).
    static func tree(_ dir: String) -> [String: Data] {
        var out: [String: Data] = [:]
        let enumerator = FileManager.default.enumerator(atPath: dir)
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            FileManager.default.fileExists(atPath: dir + "/" + path, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                out[path] = Data("directory".utf8)
            } else {
                out[path] = FileManager.default.contents(atPath: dir + "/" + path) ?? Data()
            }
        }
        return out
    }

    @Test func versionNamesTheReleaseAndTheCommit() throws {
        let version = try runHub(["--version"])
        #expect(version.status == 0)
        let line = version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line == HubRelease.description)
        #expect(line.hasPrefix("hub \(HubRelease.version) (commit "), "\(line)")
        // The commit this checkout is at (12 hex digits), when the tests run in a git checkout.
        let git = Process()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        git.arguments = ["-C", URL(fileURLWithPath: #filePath).deletingLastPathComponent().path, "rev-parse", "--short=12", "HEAD"]
        let out = Pipe()
        git.standardOutput = out
        git.standardError = Pipe()
        if (try? git.run()) != nil {
            git.waitUntilExit()
            let head = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            if git.terminationStatus == 0 { #expect(HubRelease.commit == head, "built from \(HubRelease.commit), checkout at \(head)") }
        }
        // scripts/package names the .deb after the same release number.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        if let file = try? String(contentsOf: root.appendingPathComponent("VERSION"), encoding: .utf8) {
            #expect(file.trimmingCharacters(in: .whitespacesAndNewlines) == HubRelease.version)
        }
    }

    @Test func aWriterRecordsItsFormatsAndTheHubThatWroteThem() throws {
        let dir = temporaryDirectory() + "/data"
        let exec = try runHub(["exec", "--data-dir", dir, #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#])
        #expect(exec.status == 0, "\(exec.stderr)")
        let record = try #require(try DataFormats.read(dataDirectory: dir))
        #expect(record == DataFormats.Record.current)
        #expect(record.formats["log"] == 2 && record.writtenBy == HubRelease.description)
        // A reader leaves it as it is; an unchanged record is not written again.
        let before = try FileManager.default.attributesOfItem(atPath: dir + "/format.json")[.modificationDate] as? Date
        #expect(try runHub(["verify", "--data-dir", dir]).status == 0)
        #expect(try runHub(["exec", "--data-dir", dir, #"{"command":"rename_device","id":"lamp","name":"Lamp"}"#]).status == 0)
        let after = try FileManager.default.attributesOfItem(atPath: dir + "/format.json")[.modificationDate] as? Date
        #expect(before == after)
    }

    /// A directory whose log a newer hub wrote (format 3): every command that opens it says so,
    /// with both versions and the hub that wrote it, exits 1 and changes no byte.
    @Test func aDirectoryANewerHubWroteIsRefusedByEveryCommandAndNothingChanges() throws {
        let dir = temporaryDirectory() + "/data"
        #expect(
            try runHub(["exec", "--data-dir", dir, #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#]).status
                == 0)
        var formats = DataFormats.current
        formats["log"] = 3
        let newer =
            #"{"formats":{"# + formats.keys.sorted().map { #""\#($0)":\#(formats[$0]!)"# }.joined(separator: ",")
            + #"},"written_by":"hub 1.4.0 (commit 0123456789ab)"}"#
        try newer.write(toFile: dir + "/format.json", atomically: true, encoding: .utf8)
        let before = Self.tree(dir)
        let commands: [[String]] = [
            ["run", "--no-mqtt"], ["exec", #"{"command":"rename_device","id":"lamp","name":"Lamp"}"#], ["verify"], ["replay"],
            ["events"], ["export", "-"], ["audit", "head", "--sign"]
        ]
        for command in commands {
            let result = try runHub(command + ["--data-dir", dir])
            #expect(result.status == 1, "\(command): \(result.stdout) \(result.stderr)")
            #expect(
                result.stderr.contains(
                    "was written by a newer hub (hub 1.4.0 (commit 0123456789ab)): log format 3 (this hub reads log formats up to 2); this is \(HubRelease.description)"
                ), "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("corrupt"), "\(command): \(result.stderr)")
            #expect(Self.tree(dir) == before, "\(command) changed the directory")
        }
        // A part this hub does not know is refused the same way.
        try #"{"formats":{"log":2,"garden":1},"written_by":"hub 1.4.0 (commit 0123456789ab)"}"#.write(
            toFile: dir + "/format.json", atomically: true, encoding: .utf8)
        let unknown = try runHub(["verify", "--data-dir", dir])
        #expect(unknown.status == 1 && unknown.stderr.contains("garden format 1 (a part this hub does not know)"), "\(unknown.stderr)")
        // A damaged record is named, not taken for an old directory.
        try "{not json".write(toFile: dir + "/format.json", atomically: true, encoding: .utf8)
        let damaged = try runHub(["replay", "--data-dir", dir])
        #expect(damaged.status == 1 && damaged.stderr.contains("format.json is not a format record"), "\(damaged.stderr)")
    }

    /// A directory of older formats (its history written by format 1) opens: the hub says what it
    /// upgrades, and records its own formats.
    @Test func olderFormatsAreReadAndSaid() throws {
        let dir = temporaryDirectory() + "/data"
        #expect(
            try runHub(["exec", "--data-dir", dir, #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#]).status
                == 0)
        try #"{"formats":{"log":1,"history":1},"written_by":"hub 0.8.0 (commit 0123456789ab)"}"#.write(
            toFile: dir + "/format.json", atomically: true, encoding: .utf8)
        let exec = try runHub(["exec", "--data-dir", dir, #"{"command":"rename_device","id":"lamp","name":"Lamp"}"#])
        #expect(exec.status == 0, "\(exec.stderr)")
        #expect(
            exec.stderr.contains("was written by hub 0.8.0 (commit 0123456789ab) in older formats (history 1 -> 2, log 1 -> 2)"),
            "\(exec.stderr)")
        #expect(try DataFormats.read(dataDirectory: dir) == DataFormats.Record.current)
    }
}
