import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubAudit
import HubEngine
import HubHTTP
import HubHistory
import HubJSON
import HubLog
import HubMQTT

/// `hub audit`: the Merkle tree over the log, its signed heads, and proofs an outsider checks
/// offline with the public key alone (docs/audit.md).
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Signed tree heads and Merkle proofs of the log an outsider checks with the public key alone.",
        subcommands: [Key.self, Head.self, Prove.self, Consistency.self, Check.self])

    struct Key: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the hub's public key (made in <data-dir>/audit/key, mode 0600, when missing).")
        @OptionGroup var data: DataOptions
        @Flag(help: "Print it as a PEM PUBLIC KEY (for openssl) instead of 64 hex digits.") var pem = false

        func run() async throws {
            try await Console.guarded {
                try FileManager.default.createDirectory(
                    atPath: AuditTrail.directory(dataDirectory: data.dataDir),
                    withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                let key = try AuditKey.load(path: AuditTrail.directory(dataDirectory: data.dataDir) + "/key", create: true)
                print(pem ? AuditKey.publicKeyPEM(key.publicKey) : AuditKey.publicKeyHex(key.publicKey), terminator: pem ? "" : "\n")
            }
        }
    }

    struct Head: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the newest signed tree head (or every one); --sign brings the tree up to the log and signs a new one.")
        @OptionGroup var data: DataOptions
        @Flag(help: "Every head in <data-dir>/audit/heads, oldest first.") var all = false
        @Flag(
            help: "Add the log's new records to the tree and sign a head now (not while a hub runs on this data directory: it signs them).")
        var sign = false

        func run() async throws {
            try await Console.guarded {
                let directory = AuditTrail.directory(dataDirectory: data.dataDir)
                if sign {
                    let store = try await openLogReadOnly(data)
                    let head: SignedHead
                    do { head = try await signNow(store) } catch {
                        await store.close()
                        throw error
                    }
                    await store.close()
                    print(head.line)
                    return
                }
                let heads = try AuditTrail.heads(directory: directory)
                guard let newest = heads.last else {
                    throw HubError.failed(
                        "no signed tree head in \(directory)/heads yet (the running hub signs them; `hub audit head --sign` signs one now)")
                }
                for head in all ? heads : [newest] { print(head.line) }
            }
        }

        /// Brings the tree up to the log and signs a head (the running hub's lock on the audit files refuses it beside one).
        private func signNow(_ store: any EventStore) async throws -> SignedHead {
            let trail = try AuditTrail(dataDirectory: data.dataDir, readOnly: false)
            if let misfit = try await trail.misfit(store: store, leaf: AuditLeaf.bytes) {
                throw HubError.failed("the tree in \(trail.treePath) is not this log's (\(misfit)); `hub verify` names the record")
            }
            try await trail.catchUp(store: store, leaf: AuditLeaf.bytes)
            guard trail.tree.size > 0 else { throw HubError.failed("the log holds no records yet: there is no tree to sign") }
            let key = try AuditKey.load(path: trail.keyPath, create: true)
            return try trail.signHead(key: key, unixSeconds: Int64(Date().timeIntervalSince1970))
        }
    }

    struct Prove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the inclusion proof of record SEQ in the tree of --size records (default: the newest head's size).")
        @OptionGroup var data: DataOptions
        @Argument(help: "The record's sequence number.") var seq: UInt64
        @Option(help: "The tree size (a signed head's size).") var size: UInt64?

        func run() async throws {
            try await Console.guarded {
                let (tree, size) = try openTree(data, size: size)
                guard seq >= 1, seq <= size else {
                    throw HubError.usage("record \(seq) is not in the tree of \(size) records (1...\(size))")
                }
                let path = try Merkle.inclusionProof(index: seq - 1, size: size, tree)
                print(
                    JSONValue.object([
                        ("seq", .number(Double(seq))), ("size", .number(Double(size))),
                        ("path", .array(path.map { .string(Hex.string($0)) }))
                    ]).serialized())
            }
        }
    }

    struct Consistency: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the consistency proof between the trees of OLD and NEW records (two heads' sizes).")
        @OptionGroup var data: DataOptions
        @Argument(help: "The older head's size.") var old: UInt64
        @Argument(help: "The newer head's size.") var new: UInt64

        func run() async throws {
            try await Console.guarded {
                let (tree, _) = try openTree(data, size: new)
                guard old >= 1, old <= new else { throw HubError.usage("OLD must be from 1 to NEW (\(new)), not \(old)") }
                let path = try Merkle.consistencyProof(old: old, new: new, tree)
                print(
                    JSONValue.object([
                        ("from", .number(Double(old))), ("to", .number(Double(new))),
                        ("path", .array(path.map { .string(Hex.string($0)) }))
                    ]).serialized())
            }
        }
    }

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Check offline, with the public key alone: a record's exported line against a head (--line, --proof), or two heads against each other (--head twice, --proof)."
        )
        @Option(help: "The hub's public key: 64 hex digits, a PEM PUBLIC KEY, or a file holding either.") var key: String
        @Option(help: "A file holding a signed head's JSON line (give two, older first, for a consistency proof).") var head: [String]
        @Option(help: "A file holding the proof (the JSON `hub audit prove` or `hub audit consistency` prints).") var proof: String
        @Option(help: "A file holding the record's line from `hub export`.") var line: String?

        func run() async throws {
            try await Console.guarded {
                let publicKey = try AuditKey.publicKey(
                    parsing: FileManager.default.fileExists(atPath: key)
                        ? String(decoding: try read(key), as: UTF8.self) : key)
                let heads = try head.map { file in
                    let head = try SignedHead(
                        line: String(decoding: try read(file), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
                    guard head.isSigned(by: publicKey) else {
                        throw HubError.failed("\(file): the head (size \(head.size), \(head.time)) is not signed by this key")
                    }
                    return head
                }
                let proof = try JSONValue.parse(try read(proof))
                let path = try (proof["path"]?.arrayValue ?? []).map { value in
                    guard let hash = value.stringValue.flatMap({ Hex.bytes($0, count: 32) }) else {
                        throw HubError.usage("\(self.proof): every \"path\" entry must be 64 hex digits")
                    }
                    return hash
                }
                if let line {
                    guard heads.count == 1 else { throw HubError.usage("an inclusion check takes one --head") }
                    try checkInclusion(lineFile: line, head: heads[0], proof: proof, path: path)
                } else {
                    guard heads.count == 2 else {
                        throw HubError.usage("a consistency check takes two --head (older first); an inclusion check takes --line")
                    }
                    try checkConsistency(old: heads[0], new: heads[1], proof: proof, path: path)
                }
            }
        }

        func read(_ file: String) throws -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: file) else { throw HubError.usage("\(file) cannot be read") }
            return [UInt8](data)
        }

        func checkInclusion(lineFile: String, head: SignedHead, proof: JSONValue, path: [[UInt8]]) throws {
            var bytes = try read(lineFile)
            while bytes.last == 10 || bytes.last == 13 { bytes.removeLast() }
            guard let seq = (try? JSONValue.parse(bytes))?["seq"]?.doubleValue.map(UInt64.init) else {
                throw HubError.usage("\(lineFile): not a line of `hub export` (a JSON object with \"seq\")")
            }
            guard proof["seq"]?.doubleValue.map(UInt64.init) == seq, proof["size"]?.doubleValue.map(UInt64.init) == head.size else {
                throw HubError.failed(
                    "the proof is for record \(proof["seq"]?.serialized() ?? "?") in a tree of \(proof["size"]?.serialized() ?? "?"), not record \(seq) in the head's tree of \(head.size)"
                )
            }
            guard let root = Merkle.rootFromInclusion(leafHash: Merkle.leafHash(bytes), index: seq - 1, size: head.size, path: path) else {
                throw HubError.failed("the proof has the wrong length for record \(seq) in a tree of \(head.size)")
            }
            guard root == head.root else {
                throw HubError.failed(
                    "record \(seq) is not in the tree the head signed (size \(head.size), \(head.time)): its line and the proof lead to root \(Hex.string(root)), the head signed \(Hex.string(head.root)); the line was altered, or the log holds another record \(seq)"
                )
            }
            print("ok: record \(seq) is in the tree of \(head.size) records signed at \(head.time) (root \(Hex.string(head.root)))")
        }

        func checkConsistency(old: SignedHead, new: SignedHead, proof: JSONValue, path: [[UInt8]]) throws {
            guard proof["from"]?.doubleValue.map(UInt64.init) == old.size, proof["to"]?.doubleValue.map(UInt64.init) == new.size else {
                throw HubError.failed(
                    "the proof is from \(proof["from"]?.serialized() ?? "?") to \(proof["to"]?.serialized() ?? "?"), the heads' sizes are \(old.size) and \(new.size)"
                )
            }
            guard Merkle.verifyConsistency(old: old.size, new: new.size, oldRoot: old.root, newRoot: new.root, path: path) else {
                throw HubError.failed(
                    "the tree of \(new.size) records signed at \(new.time) does not extend the tree of \(old.size) signed at \(old.time): the history up to record \(old.size) was rewritten (or the proof is not theirs)"
                )
            }
            print("ok: the tree of \(new.size) records signed at \(new.time) extends the tree of \(old.size) signed at \(old.time)")
        }
    }
}

/// The tree (read-only) and the size a proof is for: `size`, or the newest head's.
func openTree(_ data: DataOptions, size: UInt64?) throws -> (TreeFile, UInt64) {
    let trail = try AuditTrail(dataDirectory: data.dataDir, readOnly: true)
    let size = try size ?? AuditTrail.newestHead(directory: trail.directory)?.size ?? trail.tree.size
    guard size <= trail.tree.size else {
        throw HubError.usage(
            "the tree in \(trail.treePath) holds \(trail.tree.size) records, not \(size) (the running hub adds records as they are appended; `hub audit head --sign` without a running hub)"
        )
    }
    return (trail.tree, size)
}

extension VerifyCommand {
    /// Rebuilds the Merkle tree from the log and compares it with `<data-dir>/audit/tree` node by
    /// node, and checks every signed head against the log; a mismatch names the record or head.
    func checkAudit(_ store: any EventStore) async throws {
        let directory = AuditTrail.directory(dataDirectory: data.dataDir)
        guard FileManager.default.fileExists(atPath: directory + "/tree") || FileManager.default.fileExists(atPath: directory + "/heads")
        else { return }
        // Beside a running hub, a tree or heads past the log as it was opened are the hub's progress.
        let running = Self.heldByRunningHub(directory + "/LOCK") == true
        let report = try await AuditVerifier.check(store: store, dataDirectory: data.dataDir, leaf: AuditLeaf.bytes, running: running)
        for problem in report.problems { Console.note("hub: audit: \(problem)") }
        guard report.problems.isEmpty else {
            throw HubError.failed("the audit tree or heads do not match the log (named above)")
        }
        let lag =
            store.lastSequence > report.treeSize && !running
            ? "; records \(report.treeSize + 1)...\(store.lastSequence) are not in it yet (the hub adds them)" : ""
        let beyond = report.headsBeyond > 0 ? " (\(report.headsBeyond) more signed by the running hub since, not compared)" : ""
        print(
            "audit tree: \(report.compared) records match the log\(lag); \(report.heads - report.headsBeyond) signed head(s) match it\(beyond); "
                + "root \(Hex.string(report.root)) at \(store.lastSequence)")
    }
}
