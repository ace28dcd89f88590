import Foundation
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// Snapshots are a shortcut the log must vouch for: one that the log does not agree with is set
/// aside (kept, never used) and the read models come from the log.
@Suite struct SnapshotBindingTests {
    func register(_ hub: Hub, _ id: String, at n: Int64) async throws {
        _ = try await hub.execute(
            .registerDevice(id: id, driver: "virtual", name: id.uppercased(), config: "{}", hardwareId: nil),
            commandId: "register-\(id)", actor: "test", now: t0 + n)
    }

    /// What a replay of the whole log gives, for comparing with what the hub restored.
    func replayed(_ hub: Hub) async throws -> HubState {
        var state = HubState(foldsHistory: false)
        try await Hub.fold(store: hub.store, into: &state, through: hub.store.lastSequence)
        return state
    }

    @Test func aStaleSnapshotIsSetAsideAndTheLogWins() async throws {
        let paths = HubPaths(dataDirectory: temporaryDirectory())
        let first = try await Hub(paths: paths, snapshotEvery: 1_000)
        try await register(first, "a", at: 1)
        try await register(first, "b", at: 2)
        try await first.snapshot()  // covers sequence 2
        await first.store.close()  // a crash: no snapshot on the way out
        // The record the snapshot covers leaves the log (as a cut tail did), and the log grows past it.
        let segment = paths.log + "/00000000000000000001.seg"
        let frames = segmentFrames(segment)
        truncateFile(segment, to: frames[1].offset)
        let second = try await Hub(paths: paths, snapshotEvery: 1_000)
        try await register(second, "c", at: 3)
        try await register(second, "d", at: 4)
        await second.store.close()  // a crash again
        let third = try await Hub(paths: paths, snapshotEvery: 1_000)
        #expect(await third.device("c") != nil, "the stale snapshot hid a device the log registers")
        #expect(await third.device("b") == nil, "a device the log no longer holds")
        #expect(try await third.state == replayed(third))
        let notes = second.openingNotes + third.openingNotes
        #expect(notes.contains { $0.contains("snapshot-00000000000000000002.snap") && $0.contains("set aside") }, "\(notes)")
        #expect(setAsideSnapshots(paths).count == 1, "kept, not deleted")
        try await third.close()
    }

    @Test func aSnapshotEditedWithACorrectCRCIsSetAside() async throws {
        let paths = HubPaths(dataDirectory: temporaryDirectory())
        let first = try await Hub(paths: paths)
        try await register(first, "lamp", at: 1)
        try await first.close()  // snapshot at sequence 1
        let file = paths.snapshots + "/snapshot-00000000000000000001.snap"
        forgeSnapshot(file) { $0.replacingOccurrences(of: #""lamp""#, with: #""phantom""#) }

        let second = try await Hub(paths: paths)
        #expect(await second.device("phantom") == nil, "a device the log never registered")
        #expect(await second.device("lamp") != nil)
        #expect(
            second.openingNotes.contains { $0.contains("snapshot-00000000000000000001.snap") && $0.contains("set aside") },
            "\(second.openingNotes)")
        let outcome = try await second.execute(.switchDevice(id: "phantom", target: .on), actor: "test", now: t0 + 2)
        guard case .rejected = outcome else { Issue.record("a switch of the phantom was accepted: \(outcome)"); return }
        #expect(try await second.state == replayed(second))
        try await second.close()
        // The forgery is not carried into the next snapshot.
        let third = try await Hub(paths: paths)
        #expect(await third.device("phantom") == nil)
        #expect(try await third.state == replayed(third))
        try await third.close()
        #expect(setAsideSnapshots(paths).count == 1)
    }

    /// Someone with the seal key and the log can make a snapshot the hub accepts at start-up; `hub
    /// verify` re-folds the log and names it.
    @Test func verifyCatchesAForgeryThatCarriesTheSealAndTheChainHash() async throws {
        let paths = HubPaths(dataDirectory: temporaryDirectory())
        let hub = try await Hub(paths: paths)
        try await register(hub, "lamp", at: 1)
        try await hub.close()
        let openLog = { try await paths.openEventStore(readOnly: true) }
        let sound = try await SnapshotAudit.check(paths: paths, openStore: openLog)
        #expect(sound.sealsChecked && sound.findings.count == 1 && sound.findings[0].problem == nil)

        let snapshots = try SnapshotStore(directory: paths.snapshots)
        let original = try snapshots.read("snapshot-00000000000000000001.snap").get()
        let forged = String(decoding: original.bytes, as: UTF8.self).replacingOccurrences(of: #""lamp""#, with: #""phantom""#)
        try snapshots.save(sequence: 1, chainHash: original.chainHash, bytes: Array(forged.utf8))
        let audit = try await SnapshotAudit.check(paths: paths, openStore: openLog)
        #expect(audit.findings.count == 1)
        #expect(audit.findings.first?.problem?.contains("differ from the log folded to sequence 1") == true, "\(audit.findings)")
    }

    /// A snapshot that cannot be read, or a snapshots directory that cannot be listed, is said by
    /// `hub verify`: never passed over as if there were no snapshot.
    @Test func verifyNamesASnapshotItCannotRead() async throws {
        let paths = HubPaths(dataDirectory: temporaryDirectory())
        let hub = try await Hub(paths: paths)
        try await register(hub, "lamp", at: 1)
        try await hub.close()
        let openLog = { try await paths.openEventStore(readOnly: true) }
        // A snapshot's name that cannot be read as a file (a directory stands there).
        let unreadable = "snapshot-00000000000000000002.snap"
        try FileManager.default.createDirectory(atPath: paths.snapshots + "/" + unreadable, withIntermediateDirectories: false)
        let audit = try await SnapshotAudit.check(paths: paths, openStore: openLog)
        #expect(audit.findings.map(\.name).contains(unreadable), "\(audit.findings)")
        #expect(audit.findings.first { $0.name == unreadable }?.problem == "the file cannot be read", "\(audit.findings)")
        // The snapshots directory cannot be listed (a file stands there): the error names it.
        try FileManager.default.removeItem(atPath: paths.snapshots)
        FileManager.default.createFile(atPath: paths.snapshots, contents: Data("not a directory".utf8))
        do {
            let found = try await SnapshotAudit.check(paths: paths, openStore: openLog)
            Issue.record("an unlistable snapshots directory answered \(found.findings.count) findings")
        } catch {
            #expect("\(error)".contains(paths.snapshots), "\(error)")
        }
    }
}

/// The frames of a segment file: offset and length (header included).
func segmentFrames(_ path: String) -> [(offset: Int, length: Int)] {
    let bytes = [UInt8](FileManager.default.contents(atPath: path)!)
    var out: [(Int, Int)] = []
    var offset = 16
    while offset + 12 <= bytes.count {
        let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
        out.append((offset, 12 + length))
        offset += 12 + length
    }
    return out
}

func truncateFile(_ path: String, to length: Int) {
    let bytes = [UInt8](FileManager.default.contents(atPath: path)!)
    FileManager.default.createFile(atPath: path, contents: Data(bytes[0..<length]))
}

/// Edits a snapshot's JSON and recomputes its CRC32C, as someone with a hex editor would.
func forgeSnapshot(_ path: String, _ edit: (String) -> String) {
    var bytes = [UInt8](FileManager.default.contents(atPath: path)!)
    // HUBSNAP1: u32 length at 16, CRC at 20, body at 24. HUBSNAP2: length at 48, CRC at 52, body at 88.
    let v2 = bytes[7] == UInt8(ascii: "2")
    let (lengthAt, crcAt, bodyAt) = v2 ? (48, 52, 88) : (16, 20, 24)
    let body = Array(edit(String(decoding: bytes[bodyAt...], as: UTF8.self)).utf8)
    #expect(body != Array(bytes[bodyAt...]), "the forgery changed nothing")
    bytes = Array(bytes[0..<bodyAt]) + body
    withUnsafeBytes(of: UInt32(body.count).littleEndian) { for i in 0..<4 { bytes[lengthAt + i] = $0[i] } }
    withUnsafeBytes(of: CRC32C.checksum(body).littleEndian) { for i in 0..<4 { bytes[crcAt + i] = $0[i] } }
    FileManager.default.createFile(atPath: path, contents: Data(bytes))
}

/// Snapshot files that were set aside (renamed, kept).
func setAsideSnapshots(_ paths: HubPaths) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: paths.snapshots)) ?? [])
        .filter { $0.hasPrefix("snapshot-") && !$0.hasSuffix(".snap") && !$0.hasSuffix(".tmp") }
}

/// Files the log keeps cut bytes in.
func quarantineFiles(_ paths: HubPaths) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: paths.log)) ?? []).filter { $0.hasPrefix("quarantine-") }.sorted()
}
