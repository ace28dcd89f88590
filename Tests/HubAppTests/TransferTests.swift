import Foundation
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

@Suite struct TransferTests {
    func exported() async throws -> (dir: String, file: String, text: String) {
        let dir = temporaryDirectory()
        let hub = try await Hub(paths: HubPaths(dataDirectory: dir + "/a"))
        try await populate(hub)
        try await hub.close()
        let store = try SegmentStore(directory: dir + "/a/log", readOnly: true)
        let file = dir + "/export.jsonl"
        try await LogTransfer.export(store: store, to: file)
        return (dir, file, try String(contentsOfFile: file, encoding: .utf8))
    }

    @Test func exportImportExportIsIdentical() async throws {
        let (dir, file, text) = try await exported()
        #expect(text.split(separator: "\n").count == 18)
        let imported = try await LogTransfer.importFile(file, into: HubPaths(dataDirectory: dir + "/b"))
        #expect(imported == 18)
        let store = try SegmentStore(directory: dir + "/b/log", readOnly: true)
        try await LogTransfer.export(store: store, to: dir + "/again.jsonl")
        #expect(try String(contentsOfFile: dir + "/again.jsonl", encoding: .utf8) == text)
        // Idempotency survives the trip: the imported log knows the command ids.
        #expect(try store.commandResult("cmd-0") == nil)  // read-only stores do not index commands
        let writable = try await Hub(paths: HubPaths(dataDirectory: dir + "/b"))
        let retried = try await writable.execute(
            .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: "aa:bb"),
            commandId: "cmd-0", actor: "x", now: t0)
        guard case .accepted(_, _, true) = retried else { Issue.record("expected duplicate: \(retried)"); return }
        try await writable.close()
    }

    @Test func importRefusesBadFilesAndWritesNothing() async throws {
        let (dir, _, text) = try await exported()
        var lines = text.split(separator: "\n").map(String.init)
        let cases: [(String, [String], String)] = [
            ("garbage", [lines[0], "{not json", lines[2]], "line 2: not JSON"),
            ("gap", [lines[0], lines[2]], "line 2: sequence 3 where 2 was expected"),
            ("wrong shape", [lines[0].replacingOccurrences(of: "\"driver\":\"virtual\"", with: "\"driver\":5")], "line 1"),
            (
                "altered", [lines[0], lines[1].replacingOccurrences(of: "\"Pump\"", with: "\"Pimp\""), lines[2]],
                "line 2: hash does not continue the chain"
            ),
            ("empty line", [lines[0], "", lines[1]], "line 2: empty line")
        ]
        for (name, body, message) in cases {
            let file = dir + "/\(name).jsonl"
            try (body.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let target = dir + "/target-\(name.replacingOccurrences(of: " ", with: "-"))"
            do {
                _ = try await LogTransfer.importFile(file, into: HubPaths(dataDirectory: target))
                Issue.record("\(name): import accepted a bad file")
            } catch {
                #expect("\(error)".contains(message), "\(name): \(error)")
            }
            #expect(!FileManager.default.fileExists(atPath: target), "\(name): import wrote something")
        }
        // A data directory that already holds events is refused.
        lines = Array(lines.prefix(3))
        let file = dir + "/ok.jsonl"
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        await #expect(throws: (any Error).self) { try await LogTransfer.importFile(file, into: HubPaths(dataDirectory: dir + "/a")) }
    }

    /// A data directory whose log cannot be read is not taken for an empty one: the import stops
    /// with what failed and where, and the directory is left as it was (no index made beside the damage).
    @Test func importIntoALogThatCannotBeReadSaysSoAndChangesNothing() async throws {
        let (dir, file, _) = try await exported()
        let log = dir + "/a/log"
        let segment = log + "/00000000000000000001.seg"
        var bytes = [UInt8](FileManager.default.contents(atPath: segment)!)
        bytes[16 + 12 + 40] ^= 0xFF  // inside the first record's body
        FileManager.default.createFile(atPath: segment, contents: Data(bytes))
        // Opening must read that record: no recovery checkpoint past it, no command index.
        for name in ["recovery.ckpt", "commands.idx"] where FileManager.default.fileExists(atPath: log + "/" + name) {
            try FileManager.default.removeItem(atPath: log + "/" + name)
        }
        let before = try FileManager.default.contentsOfDirectory(atPath: log).sorted()
        do {
            let count = try await LogTransfer.importFile(file, into: HubPaths(dataDirectory: dir + "/a"))
            Issue.record("import into a damaged log answered \(count)")
        } catch {
            let message = "\(error)"
            #expect(message.contains("cannot tell whether \(dir)/a holds events"), "\(message)")
            #expect(message.contains("segment 00000000000000000001.seg offset 16 (sequence 1)"), "\(message)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: log).sorted() == before)
    }

}
