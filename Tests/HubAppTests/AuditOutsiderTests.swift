import BrokerHarness
import Foundation
import Testing

/// The audit as an outsider uses it: a real log made by the `hub` binary, its signed heads and
/// proofs checked by `Tests/outside-verifier/verify.py` (written from RFC 9162 and docs/audit.md,
/// not from the hub's code) and by `hub audit check`; tampering is found and named.
@Suite struct AuditOutsiderTests {
    static let verifier = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("outside-verifier/verify.py").path

    /// Runs the outside verifier; its status and what it printed.
    func outside(_ arguments: [String], openssl: Bool = false) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.verifier] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["VERIFY_WITH_OPENSSL": openssl ? "1" : "0"]) { _, new in new }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func write(_ text: String, _ path: String) throws { try text.write(toFile: path, atomically: true, encoding: .utf8) }

    func exec(_ dir: String, _ commands: [String]) throws {
        let result = try runHub(["exec", "--data-dir", dir] + commands)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    }

    /// Switches of one lamp, `count` of them, with command ids from `first`.
    func switches(_ first: Int, _ count: Int) -> [String] {
        (first..<first + count).map {
            #"{"command":"switch","id":"lamp","state":"\#($0 % 3 == 0 ? "ON" : "OFF")","command_id":"c-\#($0)"}"#
        }
    }

    @Test func anOutsiderChecksProofsAndTheSignatureAndTamperingIsNamed() throws {
        let base = temporaryDirectory()
        let dir = base + "/data"
        try exec(dir, [#"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#] + switches(1, 30))
        let head1 = try runHub(["audit", "head", "--sign", "--data-dir", dir])
        #expect(head1.status == 0, "\(head1.stderr)")
        try write(head1.stdout, base + "/head1.json")
        try exec(dir, switches(31, 25))
        let head2 = try runHub(["audit", "head", "--sign", "--data-dir", dir])
        try write(head2.stdout, base + "/head2.json")
        #expect(head1.stdout.hasPrefix(#"{"size":31,"#) && head2.stdout.hasPrefix(#"{"size":56,"#), "\(head1.stdout)\(head2.stdout)")
        let key = try runHub(["audit", "key", "--data-dir", dir]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(key.count == 64)
        #expect(try runHub(["export", "--data-dir", dir, base + "/export.jsonl"]).status == 0)
        let lines = try String(contentsOfFile: base + "/export.jsonl", encoding: .utf8).split(separator: "\n").map(String.init)
        #expect(lines.count == 56)

        // The whole export hashes to each head's root, rebuilt by the outsider from the lines alone.
        for head in ["head1", "head2"] {
            let root = try outside(["root", "--key", key, "--head", base + "/\(head).json", "--export", base + "/export.jsonl"])
            #expect(root.status == 0, "\(root.output)")
        }
        // Inclusion of random records, by both verifiers; the signature by python and by openssl.
        var generator = SystemRandomNumberGenerator()
        for round in 0..<6 {
            let seq = Int.random(in: 1...56, using: &generator)
            let proof = try runHub(["audit", "prove", "\(seq)", "--data-dir", dir])
            #expect(proof.status == 0, "\(proof.stderr)")
            try write(proof.stdout, base + "/proof.json")
            try write(lines[seq - 1] + "\n", base + "/line.json")
            let checked = try outside(
                [
                    "inclusion", "--key", key, "--head", base + "/head2.json", "--proof", base + "/proof.json",
                    "--line", base + "/line.json"
                ], openssl: round % 2 == 1)
            #expect(checked.status == 0 && checked.output.contains("ok: record \(seq) is in the tree of 56"), "\(checked.output)")
            let hubCheck = try runHub([
                "audit", "check", "--key", key, "--head", base + "/head2.json", "--proof", base + "/proof.json",
                "--line", base + "/line.json"
            ])
            #expect(hubCheck.status == 0, "\(hubCheck.stderr)")
        }
        // The newer head extends the older one.
        let consistency = try runHub(["audit", "consistency", "31", "56", "--data-dir", dir])
        try write(consistency.stdout, base + "/consistency.json")
        let extends = try outside(
            [
                "consistency", "--key", key, "--old", base + "/head1.json", "--new", base + "/head2.json",
                "--proof", base + "/consistency.json"
            ], openssl: true)
        #expect(extends.status == 0, "\(extends.output)")
        #expect(
            try runHub([
                "audit", "check", "--key", key, "--head", base + "/head1.json", "--head", base + "/head2.json",
                "--proof", base + "/consistency.json"
            ]).status == 0)
        #expect(
            try runHub(["verify", "--data-dir", dir]).stdout.contains("audit tree: 56 records match the log; 2 signed head(s) match it"))

        // A flipped byte in a record's line: both verifiers refuse it and name the record.
        let proof17 = try runHub(["audit", "prove", "17", "--data-dir", dir])
        try write(proof17.stdout, base + "/proof17.json")
        var flipped = Array(lines[16].utf8)
        flipped[flipped.count - 80] ^= 0x01
        try write(String(decoding: flipped, as: UTF8.self), base + "/line17.json")
        let refused = try outside([
            "inclusion", "--key", key, "--head", base + "/head2.json", "--proof", base + "/proof17.json",
            "--line", base + "/line17.json"
        ])
        #expect(refused.status == 1 && refused.output.contains("FAIL: record 17"), "\(refused.output)")
        let hubRefused = try runHub([
            "audit", "check", "--key", key, "--head", base + "/head2.json", "--proof", base + "/proof17.json",
            "--line", base + "/line17.json"
        ])
        #expect(
            hubRefused.status == 1 && hubRefused.stderr.contains("record 17 is not in the tree the head signed"), "\(hubRefused.stderr)")
        // A head with another key's signature, or edited, is refused.
        let forged = try String(contentsOfFile: base + "/head2.json", encoding: .utf8).replacingOccurrences(
            of: #""size":56"#, with: #""size":55"#)
        try write(forged, base + "/forged.json")
        #expect(
            try outside([
                "consistency", "--key", key, "--old", base + "/head1.json", "--new", base + "/forged.json",
                "--proof", base + "/consistency.json"
            ]).output.contains("the signature is not the hub key's"))
        #expect(
            try runHub([
                "audit", "check", "--key", key, "--head", base + "/head1.json", "--head", base + "/forged.json",
                "--proof", base + "/consistency.json"
            ]).stderr.contains("is not signed by this key"))

        // A flipped byte in a record on disk: hub verify names it.
        try FileManager.default.copyItem(atPath: dir, toPath: base + "/flipped")
        let segment = base + "/flipped/log/00000000000000000001.seg"
        var bytes = [UInt8](FileManager.default.contents(atPath: segment)!)
        let at = bytes.count / 2
        bytes[at] ^= 0x01
        FileManager.default.createFile(atPath: segment, contents: Data(bytes))
        let damaged = try runHub(["verify", "--data-dir", base + "/flipped"])
        #expect(damaged.status == 1 && damaged.stderr.contains("sequence"), "\(damaged.stderr)")

        // Records removed from the end (a log restored from the export without its last three):
        // the tree and the heads are longer than the log, and hub verify says which records went.
        try write(lines.prefix(53).joined(separator: "\n") + "\n", base + "/short.jsonl")
        #expect(try runHub(["import", "--data-dir", base + "/short", base + "/short.jsonl"]).status == 0)
        try FileManager.default.copyItem(atPath: dir + "/audit", toPath: base + "/short/audit")
        let short = try runHub(["verify", "--data-dir", base + "/short"])
        #expect(short.status == 1, "\(short.stdout)")
        #expect(short.stderr.contains("records 54...56 were removed from the log"), "\(short.stderr)")

        // A rewritten history (record 5 changed and every chain hash recomputed, so the log itself
        // is sound): the tree names record 5; with the tree rebuilt and re-signed too, the old heads
        // no longer match, and a consistency proof from a head an auditor kept fails.
        var rewritten = lines.map { $0.replacingOccurrences(of: #",\"hash\":\"[0-9a-f]{64}\""#, with: "", options: .regularExpression) }
        #expect(rewritten[4].contains(#""state":"off""#), "\(rewritten[4])")
        rewritten[4] = rewritten[4].replacingOccurrences(of: #""state":"off""#, with: #""state":"on""#)
        try write(rewritten.joined(separator: "\n") + "\n", base + "/rewritten.jsonl")
        let imported = try runHub(["import", "--data-dir", base + "/rewritten", base + "/rewritten.jsonl"])
        #expect(imported.status == 0, "\(imported.stderr)")
        try FileManager.default.copyItem(atPath: dir + "/audit", toPath: base + "/rewritten/audit")
        let named = try runHub(["verify", "--data-dir", base + "/rewritten"])
        #expect(named.status == 1 && named.stderr.contains("record 5: its leaf"), "\(named.stderr)")
        try FileManager.default.removeItem(atPath: base + "/rewritten/audit/tree")
        let resigned = try runHub(["audit", "head", "--sign", "--data-dir", base + "/rewritten"])
        try write(resigned.stdout, base + "/head3.json")
        let heads = try runHub(["verify", "--data-dir", base + "/rewritten"])
        #expect(
            heads.status == 1 && heads.stderr.contains("head 1 in") && heads.stderr.contains("the history up to record 31 was rewritten"),
            "\(heads.stderr)")
        try write(try runHub(["audit", "consistency", "31", "56", "--data-dir", base + "/rewritten"]).stdout, base + "/consistency3.json")
        let broken = try outside([
            "consistency", "--key", key, "--old", base + "/head1.json", "--new", base + "/head3.json",
            "--proof", base + "/consistency3.json"
        ])
        #expect(broken.status == 1 && broken.output.contains("FAIL"), "\(broken.output)")
        let hubBroken = try runHub([
            "audit", "check", "--key", key, "--head", base + "/head1.json", "--head", base + "/head3.json",
            "--proof", base + "/consistency3.json"
        ])
        #expect(hubBroken.status == 1 && hubBroken.stderr.contains("does not extend the tree of 31"), "\(hubBroken.stderr)")
    }

    /// `hub run` signs a head at start, as records come (here at most every second) and when it
    /// stops; an outsider checks that the last extends the first, and the last covers the log.
    @Test func theRunningHubSignsHeadsThatExtendEachOther() async throws {
        let base = temporaryDirectory()
        let dir = base + "/data"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try write(#"{"audit_head_seconds": 1, "devices": [{"id": "lamp", "driver": "virtual"}]}"#, base + "/hub.json")
        let hub = try await RunningHub.start(["--data-dir", dir, "--config", base + "/hub.json", "--no-mqtt", "--http", "127.0.0.1:0"])
        let headsPath = dir + "/audit/heads"
        func heads() -> [String] {
            ((try? String(contentsOfFile: headsPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func waitFor(_ condition: () -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(30)
            while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        }
        func port() throws -> String {
            let output = hub.output
            guard let range = output.range(of: "on http://127.0.0.1:") else { throw BrokerHarnessError("no HTTP address in: \(output)") }
            return String(output[range.upperBound...].prefix { $0.isNumber })
        }
        func switchLamp(_ state: String) throws {
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            curl.arguments = [
                "curl", "-sf", "-X", "POST", "-H", "Content-Type: text/plain", "--data", state,
                "http://127.0.0.1:\(try port())/api/device/lamp/switch"
            ]
            curl.standardOutput = FileHandle.nullDevice
            try curl.run()
            curl.waitUntilExit()
            #expect(curl.terminationStatus == 0)
        }
        try await waitFor { heads().count >= 1 }  // signed at start: the lamp's registration
        try switchLamp("ON")
        try await waitFor { heads().count >= 2 }  // at most a second later
        try switchLamp("OFF")
        hub.stop()  // and once more when it stops
        let signed = heads()
        #expect(signed.count >= 2, "\(signed)")
        guard signed.count >= 2 else { return }
        try write(signed.first!, base + "/first.json")
        try write(signed.last!, base + "/last.json")
        let sizes = try signed.map { try #require(($0.split(separator: ",").first?.split(separator: ":").last).flatMap { Int($0) }) }
        #expect(sizes == sizes.sorted() && sizes.first! < sizes.last!, "\(sizes)")
        let events = try runHub(["events", "--data-dir", dir]).stdout.split(separator: "\n").count
        #expect(sizes.last == events, "the head signed at the stop covers the whole log: \(sizes) of \(events)")
        let key = try runHub(["audit", "key", "--data-dir", dir]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try write(try runHub(["audit", "consistency", "\(sizes.first!)", "\(sizes.last!)", "--data-dir", dir]).stdout, base + "/proof.json")
        let extends = try outside([
            "consistency", "--key", key, "--old", base + "/first.json", "--new", base + "/last.json", "--proof", base + "/proof.json"
        ])
        #expect(extends.status == 0, "\(extends.output)")
        let verify = try runHub(["verify", "--data-dir", dir])
        #expect(verify.status == 0 && verify.stdout.contains("\(signed.count) signed head(s) match it"), "\(verify.stdout)\(verify.stderr)")
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/audit/key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }
}
