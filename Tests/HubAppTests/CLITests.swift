import BrokerHarness
import Foundation
import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The `hub` executable as a user runs it.
@Suite struct CLITests {
    @Test func execEventsReplayVerify() throws {
        let dir = temporaryDirectory() + "/data"
        let exec = try runHub([
            "exec", "--data-dir", dir,
            #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#,
            #"{"command":"switch","id":"lamp","state":"ON","command_id":"c-1"}"#,
            #"{"command":"switch","id":"lamp","state":"sideways"}"#
        ])
        #expect(exec.status == 1)  // the last one is refused
        let answers = exec.stdout.split(separator: "\n")
        #expect(answers.count == 3)
        #expect(answers[2].contains(#""status":"error""#) && answers[2].contains("ON, OFF or TOGGLE"))
        let events = try runHub(["events", "--data-dir", dir])
        #expect(events.status == 0)
        let lines = events.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[1].hasPrefix(#"{"seq":2,"stream":"device/lamp","version":1,"type":"SwitchRequested""#))
        #expect(lines[1].contains(#""command_id":"c-1""#))
        let filtered = try runHub(["events", "--data-dir", dir, "--type", "DeviceRegistered"])
        #expect(filtered.stdout.split(separator: "\n").count == 1)
        let replay = try runHub(["replay", "--data-dir", dir, "--until", "1", "--json"])
        #expect(replay.status == 0)
        #expect(replay.stdout.contains(#""last_sequence":1"#))
        let verify = try runHub(["verify", "--data-dir", dir])
        #expect(verify.status == 0)
        #expect(verify.stdout.contains("log sound: 2 events"))
        #expect(verify.stdout.contains("history files: 0 series, synced at sequence 2 of this log"), "\(verify.stdout)")
        // Without their sync record, verify says the next start rebuilds them (and changes nothing).
        let exec2 = try runHub([
            "exec", "--data-dir", dir,
            #"{"command":"record_reading","device":"lamp","quantity":"power","value":"7.25"}"#
        ])
        #expect(exec2.status == 0)
        try FileManager.default.removeItem(atPath: dir + "/history/synced")
        let again = try runHub(["verify", "--data-dir", dir])
        #expect(again.status == 0)
        #expect(again.stdout.contains("are rebuilt from the log at the next start: they were not synced"), "\(again.stdout)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/history/synced"))
    }

    /// A declared cause, from `hub exec` to `hub events`, through export and import, and past `hub verify`.
    @Test func aDeclaredCauseIsLoggedShownExportedAndVerified() throws {
        let base = temporaryDirectory()
        let dir = base + "/data"
        let exec = try runHub([
            "exec", "--data-dir", dir,
            #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#,
            #"{"command":"switch","id":"lamp","state":"ON","cause":"automation.porch_lights"}"#,
            #"{"command":"switch","id":"lamp","state":"OFF","cause":"porch lights"}"#
        ])
        #expect(exec.status == 1)  // the bad cause is refused
        #expect(exec.stdout.split(separator: "\n").last?.contains(#""code":"invalid_cause""#) == true, "\(exec.stdout)")
        let events = try runHub(["events", "--data-dir", dir, "--type", "SwitchRequested"]).stdout.split(separator: "\n")
        #expect(events.count == 1)
        #expect(events.first?.contains(#""actor":"cli","cause":"automation.porch_lights","command_id":null"#) == true, "\(events)")
        let registered = try runHub(["events", "--data-dir", dir, "--type", "DeviceRegistered"]).stdout
        #expect(!registered.contains("cause"))
        #expect(try runHub(["verify", "--data-dir", dir]).status == 0)
        #expect(try runHub(["export", "--data-dir", dir, base + "/a.jsonl"]).status == 0)
        #expect(try runHub(["import", "--data-dir", base + "/b", base + "/a.jsonl"]).status == 0)
        #expect(try runHub(["export", "--data-dir", base + "/b", base + "/b.jsonl"]).status == 0)
        let a = try String(contentsOfFile: base + "/a.jsonl", encoding: .utf8)
        #expect(a.contains(#""cause":"automation.porch_lights""#))
        #expect(try String(contentsOfFile: base + "/b.jsonl", encoding: .utf8) == a)
        #expect(try runHub(["verify", "--data-dir", base + "/b"]).status == 0)
    }

    /// `hub replay` names why beside who: its "Last change per stream" table and its JSON say the
    /// declared cause of the command that made each stream's last change.
    @Test func replayShowsTheCauseBesideTheActor() throws {
        let dir = temporaryDirectory() + "/data"
        let exec = try runHub([
            "exec", "--data-dir", dir,
            #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#,
            #"{"command":"register_device","id":"fan","driver":"virtual","name":"Fan"}"#,
            #"{"command":"switch","id":"lamp","state":"ON","cause":"automation.porch_lights"}"#
        ])
        #expect(exec.status == 0, "\(exec.stdout)")
        let table = try runHub(["replay", "--data-dir", dir])
        #expect(table.status == 0)
        let lines = table.stdout.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex(of: "Last change per stream"), "\(table.stdout)")
        func cells(_ line: String) -> [String] { line.split(separator: " ").map(String.init) }
        #expect(cells(lines[start + 1]) == ["stream", "seq", "time", "type", "by", "cause", "command", "id"], "\(lines[start + 1])")
        let lamp = try #require(lines[(start + 3)...].first { $0.hasPrefix("  device/lamp ") })
        #expect(Array(cells(lamp).dropFirst(3)) == ["SwitchRequested", "cli", "automation.porch_lights", "-"], "\(lamp)")
        let fan = try #require(lines[(start + 3)...].first { $0.hasPrefix("  device/fan ") })
        #expect(Array(cells(fan).dropFirst(3)) == ["DeviceRegistered", "cli", "-", "-"], "\(fan)")

        let json = try JSONValue.parse(Array(try runHub(["replay", "--data-dir", dir, "--json"]).stdout.utf8))
        let last = json["audit"]?["last_change"]
        #expect(last?["device/lamp"]?["actor"] == "cli")
        #expect(last?["device/lamp"]?["cause"] == "automation.porch_lights", "\(last?.serialized() ?? "")")
        #expect(last?["device/fan"]?["cause"] == .null)
    }

    @Test func verifyNamesTheDamage() throws {
        let dir = temporaryDirectory() + "/data"
        _ = try runHub([
            "exec", "--data-dir", dir,
            #"{"command":"register_device","id":"a","driver":"virtual","name":"A"}"#,
            #"{"command":"register_device","id":"b","driver":"virtual","name":"B"}"#,
            #"{"command":"register_device","id":"c","driver":"virtual","name":"C"}"#
        ])
        let segment = dir + "/log/00000000000000000001.seg"
        var bytes = [UInt8](FileManager.default.contents(atPath: segment)!)
        bytes[16 + 12 + 40] ^= 0xFF  // inside the first record's body
        FileManager.default.createFile(atPath: segment, contents: Data(bytes))
        let verify = try runHub(["verify", "--data-dir", dir])
        #expect(verify.status != 0)
        #expect(verify.stderr.contains("segment 00000000000000000001.seg offset 16 (sequence 1)"))
        #expect(verify.stderr.split(separator: "\n").count == 1, "one clear line: \(verify.stderr)")
        // The hub refuses to open it, the same way, when opening reads that record: without the
        // recovery checkpoint (with it, opening reads only the records after it; see RecoveryCheckpointTests).
        try FileManager.default.removeItem(atPath: dir + "/log/recovery.ckpt")
        let exec = try runHub(["exec", "--data-dir", dir, #"{"command":"remove_device","id":"a"}"#])
        #expect(exec.status != 0)
        #expect(exec.stderr.contains("corrupt event log"))
    }

    @Test func aFlippedByteInTheLastRecordIsCorruptionForVerifyAndExecAlike() throws {
        let (dir, paths) = try dataDirectory(registering: ["a", "b"])
        let segment = paths.log + "/00000000000000000001.seg"
        var bytes = [UInt8](FileManager.default.contents(atPath: segment)!)
        let last = segmentFrames(segment)[1]
        bytes[bytes.count - 1] ^= 0x01  // the last byte of the acknowledged record 2
        FileManager.default.createFile(atPath: segment, contents: Data(bytes))
        let place = "segment 00000000000000000001.seg offset \(last.offset) (sequence 2)"
        let verify = try runHub(["verify", "--data-dir", dir])
        #expect(verify.status == 1)
        #expect(verify.stderr.contains(place), "\(verify.stderr)")
        let exec = try runHub(["exec", "--data-dir", dir, #"{"command":"remove_device","id":"a"}"#])
        #expect(exec.status != 0, "exec cut an acknowledged event: \(exec.stderr)")
        #expect(exec.stderr.contains("corrupt event log") && exec.stderr.contains(place), "\(exec.stderr)")
        let unchanged = [UInt8](FileManager.default.contents(atPath: segment)!) == bytes
        #expect(unchanged, "a refused open changes nothing")
        #expect(quarantineFiles(paths).isEmpty)
    }

    @Test func aTornTailIsCutIntoAQuarantineFileTheOutputNames() throws {
        let (dir, paths) = try dataDirectory(registering: ["a"])
        let segment = paths.log + "/00000000000000000001.seg"
        let whole = [UInt8](FileManager.default.contents(atPath: segment)!)
        // A crash in the middle of appending a second record: half of a copy of the first is written.
        let first = segmentFrames(segment)[0]
        let torn = Array(whole[first.offset..<(first.offset + first.length / 2)])
        FileManager.default.createFile(atPath: segment, contents: Data(whole + torn))
        let verify = try runHub(["verify", "--data-dir", dir])
        #expect(verify.status == 0)
        #expect(verify.stdout.contains("torn write"), "\(verify.stdout)")
        let exec = try runHub(["exec", "--data-dir", dir, #"{"command":"rename_device","id":"a","name":"Alpha"}"#])
        #expect(exec.status == 0, "\(exec.stderr)")
        let name = "quarantine-00000000000000000001-\(whole.count).bin"
        #expect(quarantineFiles(paths) == [name])
        #expect(exec.stderr.contains(name), "\(exec.stderr)")
        #expect(FileManager.default.contents(atPath: paths.log + "/" + name).map { [UInt8]($0) } == torn, "the cut bytes are kept")
        #expect(try runHub(["verify", "--data-dir", dir]).stdout.contains("log sound: 2 events"))
    }

    @Test func aDeletedCommandIndexIsRebuiltAndExecSaysSo() throws {
        let (dir, paths) = try dataDirectory(registering: ["a"])
        try FileManager.default.removeItem(atPath: paths.log + "/commands.idx")
        let exec = try runHub(["exec", "--data-dir", dir, #"{"command":"rename_device","id":"a","name":"Alpha"}"#])
        #expect(exec.status == 0, "\(exec.stderr)")
        #expect(exec.stderr.contains("hub: the command index commands.idx was missing: rebuilt by a scan of 1 record"), "\(exec.stderr)")
        #expect(FileManager.default.fileExists(atPath: paths.log + "/commands.idx"))
    }

    @Test func verifyNamesAForgedSnapshot() throws {
        let (dir, paths) = try dataDirectory(registering: ["lamp"])
        let file = paths.snapshots + "/snapshot-00000000000000000001.snap"
        #expect(try runHub(["verify", "--data-dir", dir]).status == 0)
        forgeSnapshot(file) { $0.replacingOccurrences(of: #""lamp""#, with: #""phantom""#) }
        let forged = FileManager.default.contents(atPath: file)
        let verify = try runHub(["verify", "--data-dir", dir])
        #expect(verify.status == 1, "\(verify.stdout)")
        #expect(verify.stderr.contains("snapshot-00000000000000000001.snap"), "\(verify.stderr)")
        #expect(FileManager.default.contents(atPath: file) == forged, "verify changes nothing")
    }

    @Test func theProductListsNoBenchmarkAndNoCrashWriter() throws {
        let help = try runHub(["--help"])
        #expect(help.status == 0)
        #expect(help.stdout.contains("verify") && help.stdout.contains("sim"))
        #expect(!help.stdout.contains("bench") && !help.stdout.contains("crash"), "\(help.stdout)")
        #expect(try runHub(["bench", "log"]).status != 0)
        #expect(try runHub(["crash-writer"]).status != 0)
    }

    @Test func errorsAreOneLineAndNeverATrap() throws {
        let dir = temporaryDirectory()
        let cases: [[String]] = [
            ["events", "--data-dir", dir + "/none"],
            ["replay", "--data-dir", dir + "/none"],
            ["verify", "--data-dir", dir + "/none"],
            ["import", "--data-dir", dir + "/x", dir + "/missing.jsonl"],
            ["export", "--data-dir", dir + "/none", dir + "/out.jsonl"]
        ]
        for arguments in cases {
            let result = try runHub(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.stderr.hasPrefix("hub: error: "), "\(arguments): \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1, "\(arguments): \(result.stderr)")
        }
        _ = try runHub(["exec", "--data-dir", dir + "/d", #"{"command":"register_device","id":"a","driver":"v","name":"A"}"#])
        let badBound = try runHub(["replay", "--data-dir", dir + "/d", "--until", "yesterday"])
        #expect(badBound.status == 1)
        #expect(badBound.stderr.contains("neither a sequence number nor an ISO-8601 time"))
    }
}

/// A new data directory in which `hub exec` registered a virtual device for each id (named as its
/// id, capitalised).
func dataDirectory(registering ids: [String]) throws -> (dir: String, paths: HubPaths) {
    let dir = temporaryDirectory() + "/data"
    let commands = ids.map { #"{"command":"register_device","id":"\#($0)","driver":"virtual","name":"\#($0.capitalized)"}"# }
    let exec = try runHub(["exec", "--data-dir", dir] + commands)
    guard exec.status == 0 else { throw HubError.failed("hub exec: \(exec.stderr)") }
    return (dir, HubPaths(dataDirectory: dir))
}
