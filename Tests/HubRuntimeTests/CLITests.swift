import Foundation
import Testing
@testable import HubRuntime

/// The `hub` executable as a user runs it.
@Suite struct CLITests {
    @Test func execEventsReplayVerify() throws {
        let dir = temporaryDirectory() + "/data"
        let exec = try runHub(["exec", "--data-dir", dir,
                               #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#,
                               #"{"command":"switch","id":"lamp","state":"ON","command_id":"c-1"}"#,
                               #"{"command":"switch","id":"lamp","state":"sideways"}"#])
        #expect(exec.status == 1) // the last one is refused
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
    }

    @Test func verifyNamesTheDamage() throws {
        let dir = temporaryDirectory() + "/data"
        _ = try runHub(["exec", "--data-dir", dir,
                        #"{"command":"register_device","id":"a","driver":"virtual","name":"A"}"#,
                        #"{"command":"register_device","id":"b","driver":"virtual","name":"B"}"#,
                        #"{"command":"register_device","id":"c","driver":"virtual","name":"C"}"#])
        let segment = dir + "/log/00000000000000000001.seg"
        var bytes = [UInt8](FileManager.default.contents(atPath: segment)!)
        bytes[16 + 12 + 40] ^= 0xFF // inside the first record's body
        FileManager.default.createFile(atPath: segment, contents: Data(bytes))
        let verify = try runHub(["verify", "--data-dir", dir])
        #expect(verify.status != 0)
        #expect(verify.stderr.contains("segment 00000000000000000001.seg offset 16 (sequence 1)"))
        #expect(verify.stderr.split(separator: "\n").count == 1, "one clear line: \(verify.stderr)")
        // The hub refuses to open it, the same way.
        let exec = try runHub(["exec", "--data-dir", dir, #"{"command":"remove_device","id":"a"}"#])
        #expect(exec.status != 0)
        #expect(exec.stderr.contains("corrupt event log"))
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
            ["export", "--data-dir", dir + "/none", dir + "/out.jsonl"],
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
