import Foundation
import HubLog
import Testing

@testable import HubAudit

/// The audit files of a data directory over a real segment log: catching up, signing, a tree that
/// is not the log's, and `hub verify`'s check naming what differs. The leaf here is the record's
/// chain hash in hex with its sequence (the hub's is its export line: HubApp's `AuditLeaf`).
@Suite struct AuditTrailTests {
    static func leaf(_ view: RecordView) -> [UInt8] { Array("\(view.sequence) \(Hex.string(view.hash))".utf8) }

    func log(_ dir: String, records: Int, payload: UInt8 = 0) async throws -> SegmentStore {
        let store = try SegmentStore(directory: dir + "/log")
        for n in 0..<records {
            _ = try await store.append(
                AppendRequest(
                    stream: "device/lamp", expected: .any, causation: Causation(actor: "test"),
                    events: [
                        ProposedEvent(
                            type: "SwitchRequested", schemaVersion: 1,
                            timestamp: 1_795_000_000_000_000 + Int64(n), payload: [UInt8(n & 255), payload])
                    ]))
        }
        return store
    }

    @Test func catchingUpSigningAndVerifying() async throws {
        let dir = temporaryDirectory()
        let store = try await log(dir, records: 21)
        let trail = try AuditTrail(dataDirectory: dir, readOnly: false)
        #expect(try await trail.catchUp(store: store, leaf: Self.leaf, limit: 5) == 5)
        #expect(try await trail.catchUp(store: store, leaf: Self.leaf) == 16)
        #expect(try await trail.catchUp(store: store, leaf: Self.leaf) == 0)
        #expect(try await trail.misfit(store: store, leaf: Self.leaf) == nil)
        let key = try AuditKey.load(path: trail.keyPath, create: true)
        let head = try trail.signHead(key: key, unixSeconds: 1_795_780_805)
        #expect(head.size == 21 && head.time == "2026-11-27T12:00:05Z" && head.isSigned(by: key.publicKey))
        var views: [[UInt8]] = []
        try await store.readViews(from: 1, through: 21) {
            views.append(Merkle.leafHash(Self.leaf($0))); return true
        }
        #expect(head.root == Merkle.root(leafHashes: views[...]))
        #expect(try AuditTrail.newestHead(directory: trail.directory) == head)
        // A second writer is refused while this one holds the lock.
        #expect(throws: AuditError.self) { try AuditTrail(dataDirectory: dir, readOnly: false) }
        let report = try await AuditVerifier.check(store: store, dataDirectory: dir, leaf: Self.leaf)
        #expect(report.problems == [] && report.compared == 21 && report.heads == 1, "\(report.problems)")
        store.close()
    }

    /// Another log under the same audit files: the misfit is seen at once, verify names the first
    /// record that differs and the head it breaks, and the tree is set aside and rebuilt.
    @Test func aTreeOfAnotherLogIsNamedAndSetAside() async throws {
        let dir = temporaryDirectory()
        let store = try await log(dir, records: 12)
        let trail = try AuditTrail(dataDirectory: dir, readOnly: false)
        try await trail.catchUp(store: store, leaf: Self.leaf)
        _ = try trail.signHead(key: try AuditKey.load(path: trail.keyPath, create: true), unixSeconds: 1_795_780_805)
        store.close()
        try FileManager.default.removeItem(atPath: dir + "/log")
        let other = try await log(dir, records: 12, payload: 1)  // every record differs
        #expect(try await trail.misfit(store: other, leaf: Self.leaf) == "record 12 is not the record the tree holds")
        let report = try await AuditVerifier.check(store: other, dataDirectory: dir, leaf: Self.leaf)
        #expect(report.problems.first?.hasPrefix("record 1: its leaf in") == true, "\(report.problems)")
        #expect(
            report.problems.contains { $0.contains("head 1 in") && $0.contains("the history up to record 12 was rewritten") },
            "\(report.problems)")
        let name = try trail.setAsideTree(unixSeconds: 1_795_780_900)
        #expect(name == "tree.set-aside-1795780900" && FileManager.default.fileExists(atPath: trail.directory + "/" + name))
        #expect(trail.tree.size == 0)
        try await trail.catchUp(store: other, leaf: Self.leaf)
        #expect(try await trail.misfit(store: other, leaf: Self.leaf) == nil)
        other.close()
    }

    /// A catch-up that does not write keeps the new nodes in memory (the file, and a reader of it,
    /// stay where they were) and answers roots and proofs from there; the next that writes (as the
    /// running hub's at each signed head) writes them all, the same as one catch-up writing at once.
    @Test func aCatchUpThatDoesNotWriteKeepsTheNodesForTheNextThatDoes() async throws {
        let dir = temporaryDirectory()
        let store = try await log(dir, records: 13)
        let trail = try AuditTrail(dataDirectory: dir, readOnly: false)
        #expect(try await trail.catchUp(store: store, leaf: Self.leaf, limit: 5) == 5)
        let written = try FileIO.size(path: trail.treePath)
        #expect(written == trail.tree.bytes)
        #expect(try await trail.catchUp(store: store, leaf: Self.leaf, write: false) == 8)
        #expect(try FileIO.size(path: trail.treePath) == written, "nothing written")
        #expect(try AuditTrail(dataDirectory: dir, readOnly: true).tree.size == 5, "a reader of the file sees what was written")
        var leaves: [[UInt8]] = []
        try await store.readViews(from: 1, through: 13) {
            leaves.append(Merkle.leafHash(Self.leaf($0))); return true
        }
        #expect(try trail.tree.size == 13 && trail.tree.root() == Merkle.root(leafHashes: leaves[...]))
        #expect(try trail.tree.hash(4, 12) == Merkle.root(leafHashes: leaves[4..<12]), "nodes in memory answer")
        #expect(try await trail.catchUp(store: store, leaf: Self.leaf) == 0)
        #expect(try FileIO.size(path: trail.treePath) == trail.tree.bytes, "written by the next catch-up that writes")
        let reader = try AuditTrail(dataDirectory: dir, readOnly: true)
        #expect(try reader.tree.size == 13 && reader.tree.root() == Merkle.root(leafHashes: leaves[...]))
        let whole = temporaryDirectory()
        try FileManager.default.createDirectory(atPath: whole + "/audit", withIntermediateDirectories: true)
        let once = try TreeFile(path: whole + "/audit/tree")
        for leaf in leaves { once.append(leafHash: leaf) }
        try once.flush()
        #expect(FileManager.default.contents(atPath: trail.treePath) == FileManager.default.contents(atPath: whole + "/audit/tree"))
        store.close()
    }

    /// A damaged inner node (its leaves intact) is named as the tree file's fault, with its records.
    @Test func aDamagedNodeIsNamed() async throws {
        let dir = temporaryDirectory()
        let store = try await log(dir, records: 8)
        do {
            let trail = try AuditTrail(dataDirectory: dir, readOnly: false)
            try await trail.catchUp(store: store, leaf: Self.leaf)
        }
        // Node 2 is the parent of records 1 and 2 (post-order: leaf, leaf, parent).
        let path = dir + "/audit/tree"
        var bytes = [UInt8](FileManager.default.contents(atPath: path)!)
        bytes[32 + 2 * 32] ^= 0x01
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let report = try await AuditVerifier.check(store: store, dataDirectory: dir, leaf: Self.leaf)
        #expect(report.problems == ["\(path): node 2 (records 1...2) is damaged"], "\(report.problems)")
        store.close()
    }
}
