import Crypto
import HubLog

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `hub verify`'s audit part: rebuilds the Merkle tree from the log, record by record, compares
/// every node with the tree file, and checks every signed head (its signature, and that the log's
/// tree of that size has that root). It changes nothing.
public enum AuditVerifier {
    /// What the check found.
    public struct Report: Sendable {
        /// Records the tree file holds.
        public var treeSize: UInt64 = 0
        /// Records whose leaves and nodes were compared with the tree file.
        public var compared: UInt64 = 0
        /// Heads checked.
        public var heads = 0
        /// Heads past the log's end, not compared (signed by a running hub after the log was opened).
        public var headsBeyond = 0
        /// The root of the log's whole tree.
        public var root: [UInt8] = Merkle.emptyRoot
        /// What does not match, each naming the record, node or head; empty when all is sound.
        public var problems: [String] = []
    }

    /// Checks the audit files of `dataDirectory` against `store`.
    ///
    /// - Parameters:
    ///   - publicKey: The key the heads must be signed by (nil: the data directory's own key's public half).
    ///   - running: A hub keeps the audit files now: what it added after `store` was opened (a
    ///     longer tree, newer heads) is its progress, not records removed from the log.
    public nonisolated(nonsending) static func check(
        store: any EventStore, dataDirectory: String, leaf: LeafBytes,
        publicKey: Curve25519.Signing.PublicKey? = nil, running: Bool = false
    ) async throws -> Report {
        let directory = AuditTrail.directory(dataDirectory: dataDirectory)
        var report = Report()
        let treePath = directory + "/tree"
        let file: TreeFile? = FileIO.exists(treePath) ? try TreeFile(path: treePath, readOnly: true) : nil
        report.treeSize = file?.size ?? 0
        let heads = try AuditTrail.heads(directory: directory)
        report.heads = heads.count
        let key = try publicKey ?? (heads.isEmpty ? nil : AuditKey.load(path: directory + "/key", create: false).publicKey)
        var headsAt: [UInt64: [Int]] = [:]
        for (i, head) in heads.enumerated() { headsAt[head.size, default: []].append(i) }
        func name(_ i: Int) -> String { "head \(i + 1) in \(directory)/heads (size \(heads[i].size), signed \(heads[i].time))" }
        if let key {
            for (i, head) in heads.enumerated() where !head.isSigned(by: key) {
                report.problems.append("\(name(i)): the signature is not the hub key's")
            }
        }
        var builder = TreeBuilder()
        var compareThrough = min(report.treeSize, store.lastSequence)
        try await store.readViews(from: 1, through: store.lastSequence) { view in
            let emitted = builder.append(Merkle.leafHash(leaf(view)))
            if view.sequence <= compareThrough, let file {
                let first = TreeFile.nodeCount(view.sequence - 1)
                for (offset, node) in emitted.enumerated() {
                    let level = offset, index = (view.sequence >> UInt64(level)) - 1
                    guard try file.node(level: level, index: index) != node else { continue }
                    report.problems.append(
                        offset == 0
                            ? "record \(view.sequence): its leaf in \(treePath) differs from the log's record (the record was changed after the tree took it, or the tree file was)"
                            : "\(treePath): node \(first + UInt64(offset)) (records \((index << UInt64(level)) + 1)...\(view.sequence)) is damaged"
                    )
                    compareThrough = 0  // one named fault; later nodes all differ
                    break
                }
                if compareThrough > 0 { report.compared = view.sequence }
            }
            for i in headsAt[view.sequence] ?? [] where builder.root != heads[i].root {
                report.problems.append(
                    "\(name(i)): the log's tree of \(heads[i].size) records has root \(Hex.string(builder.root)), the head signed \(Hex.string(heads[i].root)): the history up to record \(heads[i].size) was rewritten"
                )
            }
            return true
        }
        report.root = builder.root
        if running { report.headsBeyond = heads.filter { $0.size > store.lastSequence }.count }
        if report.treeSize > store.lastSequence, !running {
            report.problems.append(
                "\(treePath) holds \(report.treeSize) records, the log \(store.lastSequence): records \(store.lastSequence + 1)...\(report.treeSize) were removed from the log (or the tree is another log's)"
            )
        }
        for (i, head) in heads.enumerated() where head.size > store.lastSequence && !running {
            report.problems.append(
                "\(name(i)): the log holds only \(store.lastSequence) records: records \(store.lastSequence + 1)...\(head.size) were removed"
            )
        }
        return report
    }
}

/// Builds a tree leaf by leaf in memory, giving back the nodes each leaf completes in the order
/// ``TreeFile`` stores them.
struct TreeBuilder {
    var frontier: [[UInt8]] = []
    var size: UInt64 = 0

    /// Adds a leaf; returns its hash and the hashes of the subtrees it completes, smallest first.
    mutating func append(_ leafHash: [UInt8]) -> [[UInt8]] {
        var emitted = [leafHash]
        var carry = leafHash
        var c = size
        while c & 1 == 1 {
            carry = Merkle.nodeHash(frontier.removeLast(), carry)
            emitted.append(carry)
            c >>= 1
        }
        frontier.append(carry)
        size += 1
        return emitted
    }

    var root: [UInt8] {
        guard var r = frontier.last else { return Merkle.emptyRoot }
        for left in frontier.dropLast().reversed() { r = Merkle.nodeHash(left, r) }
        return r
    }
}
