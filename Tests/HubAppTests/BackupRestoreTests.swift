import BrokerHarness
import Foundation
import Synchronization
import Testing

@testable import HubApp

/// The restore drill: a live `hub backup` of a running hub that keeps taking commands, restored
/// elsewhere and started again; and `hub backup --check` and `hub restore` refusing what they must.
@Suite(.serialized) struct BackupRestoreTests {
    /// `hub run` on loopback HTTP (no broker), signing a head every second.
    func startHub(_ dir: String) async throws -> (RunningHub, Int) {
        let hub = try await RunningHub.start(["--data-dir", dir, "--config", dir + "/hub.json", "--no-mqtt", "--http", "127.0.0.1:0"])
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let range = hub.output.range(of: "console and API on http://127.0.0.1:"),
                let port = Int(hub.output[range.upperBound...].prefix { $0.isNumber })
            {
                return (hub, port)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BrokerHarnessError("hub run did not say where it serves:\n\(hub.output)")
    }

    /// Waits for `condition`, checking every 50 ms, for at most `timeout`.
    func waitFor(_ what: String, timeout: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await !condition() {
            guard ContinuousClock.now < deadline else { throw BrokerHarnessError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The size of the running hub's newest signed head (0 before the first).
    func headSize(port: Int) async throws -> UInt64 {
        let reply = try await HTTPProbe.request(port: port, method: "GET", path: "/api/audit/head")
        guard reply.status == 200, let range = reply.body.range(of: #""size":"#) else { return 0 }
        return UInt64(reply.body[range.upperBound...].prefix { $0.isNumber }) ?? 0
    }

    func lastLine(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").last.map(String.init) ?? ""
    }

    func number(after prefix: String, in text: String) -> UInt64? {
        guard let range = text.range(of: prefix) else { return nil }
        return UInt64(text[range.upperBound...].prefix { $0.isNumber })
    }

    @Test func aLiveBackupRestoresToItsHeadAndTheRestoredHubExtendsItsHeads() async throws {
        let root = temporaryDirectory()
        let dir = root + "/data", tar = root + "/backup.tar", restored = root + "/restored"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        // The configuration file lies in the data directory: the backup carries it.
        try #"{"audit_head_seconds": 1}"#.write(toFile: dir + "/hub.json", atomically: true, encoding: .utf8)

        let (hub, port) = try await startHub(dir)
        let added = try await HTTPProbe.request(
            port: port, method: "POST", path: "/api/request/device/add", body: #"{"id":"lamp","driver":"virtual","name":"Lamp"}"#)
        #expect(added.status == 200, "\(added)")
        // Renames, one after another, until told to stop: the log grows while the backup is taken.
        let renamed = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        let renamer = Task {
            var n = 0
            while !stop.load(ordering: .relaxed) {
                n += 1
                let reply = try await HTTPProbe.request(
                    port: port, method: "POST", path: "/api/request/device/rename", body: #"{"id":"lamp","name":"Lamp \#(n)"}"#)
                guard reply.status == 200 else { throw BrokerHarnessError("rename \(n): \(reply)") }
                renamed.store(n, ordering: .relaxed)
            }
        }
        try await waitFor("20 renames and a signed head") { renamed.load(ordering: .relaxed) >= 20 }
        try await waitFor("a signed head") { try await headSize(port: port) > 0 }

        let before = renamed.load(ordering: .relaxed)
        let backup = try await onOwnThread { try runHub(["backup", tar, "--data-dir", dir]) }
        #expect(backup.status == 0, "\(backup)")
        let head = try #require(number(after: "the log up to record ", in: backup.stderr), "\(backup)")
        #expect(renamed.load(ordering: .relaxed) > before, "the renames went on while the backup was taken")

        // The hub goes on after the backup: more records, and a head signed past the backup's head.
        let after = renamed.load(ordering: .relaxed)
        try await waitFor("20 more renames") { renamed.load(ordering: .relaxed) >= after + 20 }
        try await waitFor("a head past the backup's") { try await headSize(port: port) > head }
        stop.store(true, ordering: .relaxed)
        try await renamer.value
        hub.stop()
        let laterHead = root + "/later-head.json"
        try lastLine(dir + "/audit/heads").write(toFile: laterHead, atomically: true, encoding: .utf8)
        let laterSize = try #require(number(after: #""size":"#, in: try lastLine(laterHead)))
        #expect(laterSize > head)

        // The check: sound, and the later head (an auditor's) named as missing from it, not a fault.
        let check = try runHub(["backup", "--check", tar, "--head", laterHead])
        #expect(check.status == 0, "\(check)")
        #expect(check.stdout.contains("backup sound: ") && check.stdout.contains("log up to record \(head) "), "\(check.stdout)")
        let missing =
            "is past the end of the backup (record \(head)): records \(head + 1)...\(laterSize) it signed are missing from the backup"
        #expect(check.stdout.contains(missing), "\(check.stdout)")

        let restore = try runHub(["restore", tar, restored, "--head", laterHead])
        #expect(restore.status == 0, "\(restore)")
        #expect(restore.stdout.contains(missing) && restore.stdout.contains("the log up to record \(head) "), "\(restore.stdout)")
        #expect(!FileManager.default.fileExists(atPath: restored + "/MANIFEST.json"))
        #expect(
            FileManager.default.contents(atPath: restored + "/hub.json") == FileManager.default.contents(atPath: dir + "/hub.json"))
        #expect(
            FileManager.default.contents(atPath: restored + "/audit/key") == FileManager.default.contents(atPath: dir + "/audit/key"))

        // Every record up to the backup's head is there, with its hash; nothing after it.
        let original = try runHub(["export", "-", "--data-dir", dir]).stdout.split(separator: "\n")
        let copy = try runHub(["export", "-", "--data-dir", restored]).stdout.split(separator: "\n")
        #expect(original.count > Int(head))
        #expect(copy == Array(original.prefix(Int(head))), "the restored log is not the original's first \(head) records")
        let verify = try runHub(["verify", "--data-dir", restored])
        #expect(verify.status == 0 && verify.stdout.contains("log sound: \(head) events"), "\(verify)")

        // The restored hub runs on it, and its heads extend the backup's last head.
        let backupHead = root + "/backup-head.json"
        try lastLine(restored + "/audit/heads").write(toFile: backupHead, atomically: true, encoding: .utf8)
        let backupHeadSize = try #require(number(after: #""size":"#, in: try lastLine(backupHead)))
        #expect(backupHeadSize > 0 && backupHeadSize <= head)
        let (second, port2) = try await startHub(restored)
        for n in 1...5 {
            let reply = try await HTTPProbe.request(
                port: port2, method: "POST", path: "/api/request/device/rename", body: #"{"id":"lamp","name":"Restored \#(n)"}"#)
            #expect(reply.status == 200, "\(reply)")
        }
        try await waitFor("a head past the backup's from the restored hub") { try await headSize(port: port2) > head }
        second.stop()
        let newHead = root + "/new-head.json"
        try lastLine(restored + "/audit/heads").write(toFile: newHead, atomically: true, encoding: .utf8)
        let newSize = try #require(number(after: #""size":"#, in: try lastLine(newHead)))
        let proof = try runHub(["audit", "consistency", "\(backupHeadSize)", "\(newSize)", "--data-dir", restored])
        #expect(proof.status == 0, "\(proof)")
        try proof.stdout.write(toFile: root + "/proof.json", atomically: true, encoding: .utf8)
        let key = try runHub(["audit", "key", "--data-dir", restored]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let extends = try runHub(["audit", "check", "--key", key, "--head", backupHead, "--head", newHead, "--proof", root + "/proof.json"])
        #expect(extends.status == 0 && extends.stdout.contains("extends the tree of \(backupHeadSize)"), "\(extends)")
        #expect(try runHub(["verify", "--data-dir", restored]).status == 0)
        try? FileManager.default.removeItem(atPath: root)
    }

    @Test func theCheckNamesAChangedByteAndRestoreRefusesANonEmptyTarget() async throws {
        let root = temporaryDirectory()
        let dir = root + "/data", backup = root + "/backup", tar = root + "/backup.tar"
        let exec = try runHub([
            "exec", "--data-dir", dir, #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#,
            #"{"command":"switch","id":"lamp","state":"ON","command_id":"c-1"}"#
        ])
        #expect(exec.status == 0, "\(exec)")
        #expect(try runHub(["backup", backup, "--data-dir", dir]).status == 0)
        #expect(try runHub(["backup", tar, "--data-dir", dir]).status == 0)
        let sound = try runHub(["backup", "--check", backup])
        #expect(sound.status == 0 && sound.stdout.hasPrefix("backup sound: "), "\(sound)")

        // One byte flipped in the segment copy: named by its sum, and by the log's own check.
        let segment = "log/00000000000000000001.seg"
        var bytes = try #require(FileManager.default.contents(atPath: backup + "/" + segment))
        bytes[40] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: backup + "/" + segment))
        let flipped = try runHub(["backup", "--check", backup])
        #expect(flipped.status == 1, "\(flipped)")
        #expect(
            flipped.stderr.contains("hub: error: the backup \(backup) is not sound: \(segment): SHA-256 differs from the manifest"),
            "\(flipped.stderr)")
        #expect(flipped.stderr.contains("hub: log: "), "\(flipped.stderr)")

        // In the tar: a byte of the segment's content (the block after its header).
        var archive = try #require(FileManager.default.contents(atPath: tar))
        let name = try #require(archive.range(of: Data(segment.utf8)))
        archive[name.lowerBound + 512 + 40] ^= 0x80
        try archive.write(to: URL(fileURLWithPath: tar))
        let flippedTar = try runHub(["backup", "--check", tar])
        #expect(flippedTar.status == 1 && flippedTar.stderr.contains("\(segment): SHA-256 differs from the manifest"), "\(flippedTar)")

        // A restore of a backup that is not sound writes nothing.
        let target = root + "/target"
        let refusedBad = try runHub(["restore", tar, target])
        #expect(refusedBad.status == 1 && refusedBad.stderr.contains("nothing was restored into \(target)"), "\(refusedBad)")
        #expect(!FileManager.default.fileExists(atPath: target))

        // A target that holds anything is refused, and left as it was.
        let good = root + "/good"
        #expect(try runHub(["backup", good, "--data-dir", dir]).status == 0)
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        try "keep me".write(toFile: target + "/notes.txt", atomically: true, encoding: .utf8)
        let refused = try runHub(["restore", good, target])
        #expect(refused.status == 1, "\(refused)")
        #expect(
            refused.stderr.hasPrefix(
                "hub: error: \(target) is not empty (it holds notes.txt): a restore writes only into a new or empty directory"),
            "\(refused.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: target) == ["notes.txt"])
        // An empty directory is fine.
        try FileManager.default.removeItem(atPath: target + "/notes.txt")
        let restored = try runHub(["restore", good, target])
        #expect(restored.status == 0, "\(restored)")
        #expect(try runHub(["verify", "--data-dir", target]).status == 0)
        try? FileManager.default.removeItem(atPath: root)
    }
}
