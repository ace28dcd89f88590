import Crypto
import HubLog

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes of one record's leaf: the record's `hub export` line (given by the caller, which knows
/// how events are rendered), without its newline.
public typealias LeafBytes = (RecordView) -> [UInt8]

/// The audit files of a data directory, `<data-dir>/audit/`:
///
/// - `key`: the Ed25519 signing key (``AuditKey``, mode 0600);
/// - `tree`: the Merkle tree over the log (``TreeFile``), one leaf per record in sequence order
///   (record `seq` is leaf `seq - 1`);
/// - `heads`: every signed tree head (``SignedHead``), one JSON line each, oldest first;
/// - `LOCK`: held (`flock`) by the one process that writes the tree and the heads.
///
/// One task uses a trail at a time (it is handed between tasks, never shared).
public final class AuditTrail: @unchecked Sendable {
    /// The audit directory (`<data>/audit`).
    public let directory: String
    /// The Merkle tree over the log.
    public private(set) var tree: TreeFile
    private var lockFD: Int32 = -1

    /// The audit directory of a data directory: `<data>/audit`.
    public static func directory(dataDirectory: String) -> String { dataDirectory + "/audit" }
    /// The signing key's file.
    public var keyPath: String { directory + "/key" }
    /// The signed tree heads' file.
    public var headsPath: String { directory + "/heads" }
    /// The tree's file.
    public var treePath: String { directory + "/tree" }

    /// Opens the audit files of `dataDirectory`. A writer makes the directory and the tree when
    /// missing and takes the lock; a reader (`readOnly`) needs the tree to exist.
    ///
    /// - Throws: ``AuditError/badFile(_:)`` when another process writes them (or there is no tree
    ///   for a reader); what ``TreeFile`` throws.
    public init(dataDirectory: String, readOnly: Bool) throws {
        directory = Self.directory(dataDirectory: dataDirectory)
        if readOnly {
            guard FileIO.exists(directory + "/tree") else {
                throw AuditError.badFile(
                    "no Merkle tree in \(directory) (the hub makes it when it runs; `hub audit head --sign` makes it now)")
            }
        } else {
            try FileIO.makeDirectory(directory, mode: 0o700)
            lockFD = open(directory + "/LOCK", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard lockFD >= 0, flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
                if lockFD >= 0 { close(lockFD) }
                throw AuditError.badFile("the audit files in \(directory) are kept by another process (a running hub); it signs the heads")
            }
        }
        tree = try TreeFile(path: directory + "/tree", readOnly: readOnly)
    }

    deinit { if lockFD >= 0 { close(lockFD) } }

    /// Why the tree cannot be the tree of this log, or nil when it can: it holds more records than
    /// the log, or its last leaf is not the log's record at that sequence (each leaf holds its
    /// record's chain hash, which commits to every record before it, so one comparison suffices).
    public nonisolated(nonsending) func misfit(store: any EventStore, leaf: LeafBytes) async throws -> String? {
        let size = tree.size
        guard size > 0 else { return nil }
        guard size <= store.lastSequence else {
            return "the tree holds \(size) records, the log \(store.lastSequence)"
        }
        var fits = false
        try await store.readViews(from: size, through: size) { view in
            fits = Merkle.leafHash(leaf(view)) == (try tree.leafHash(size - 1))
            return false
        }
        return fits ? nil : "record \(size) is not the record the tree holds"
    }

    /// Renames the tree to `tree.set-aside-<seconds>` (kept, never used) and starts an empty one.
    ///
    /// - Returns: The name it was set aside as.
    public func setAsideTree(unixSeconds: Int64) throws -> String {
        let name = "tree.set-aside-\(unixSeconds)"
        try FileIO.rename(treePath, directory + "/" + name)
        tree = try TreeFile(path: treePath)
        return name
    }

    /// Adds the durable records the log holds beyond the tree (at most `limit` of them), and writes
    /// them to the file unless `write` is false: they then stay in memory (answered from there, at
    /// most 4,096 leaves' nodes before they are written anyway) until a catch-up that writes.
    ///
    /// - Returns: How many were added.
    @discardableResult
    public nonisolated(nonsending) func catchUp(
        store: any EventStore, leaf: LeafBytes, limit: UInt64 = .max, write: Bool = true
    ) async throws -> UInt64 {
        let from = tree.size + 1, available = store.durableSequence
        guard from <= available, limit > 0 else {
            if write { try tree.flush() }  // what earlier catch-ups kept in memory
            return 0
        }
        let through = available - from + 1 > limit ? from + limit - 1 : available
        try await store.readViews(from: from, through: through) { view in
            tree.append(leafHash: Merkle.leafHash(leaf(view)))
            if tree.size % 4096 == 0 { try tree.flush() }
            return true
        }
        if write { try tree.flush() }
        return tree.size - from + 1
    }

    /// Signs a head for the tree as it is and appends it to `heads` (synced before it returns).
    public func signHead(key: Curve25519.Signing.PrivateKey, unixSeconds: Int64) throws -> SignedHead {
        let head = try SignedHead.sign(size: tree.size, root: try tree.root(), time: HeadTime.format(unixSeconds: unixSeconds), key: key)
        let fd = try FileIO.openFile(headsPath, flags: O_WRONLY | O_CREAT | O_APPEND, mode: 0o644)
        defer { close(fd) }
        try Array((head.line + "\n").utf8).withUnsafeBytes { try FileIO.writeAll(fd: fd, path: headsPath, $0) }
        try FileIO.dataSync(fd: fd, path: headsPath)
        return head
    }

    /// The newest head in `<directory>/heads` (its last line; nil when there is none), read from the
    /// file's end only.
    ///
    /// - Throws: ``AuditError/badFile(_:)`` when the last line is not a head.
    public static func newestHead(directory: String) throws -> SignedHead? {
        let path = directory + "/heads"
        guard FileIO.exists(path) else { return nil }
        let size = try FileIO.size(path: path)
        let tail = try FileIO.readTail(path: path, from: max(0, size - 1024))
        guard let line = String(decoding: tail, as: UTF8.self).split(separator: "\n").last else { return nil }
        do { return try SignedHead(line: String(line)) } catch { throw AuditError.badFile("\(path), last line: \(error)") }
    }

    /// Every head in `<directory>/heads`, oldest first (none when the file is missing).
    ///
    /// - Throws: ``AuditError/badFile(_:)`` naming the first line that is not a head.
    public static func heads(directory: String) throws -> [SignedHead] {
        let path = directory + "/heads"
        guard FileIO.exists(path) else { return [] }
        let text = String(decoding: try FileIO.readAll(path: path), as: UTF8.self)
        var heads: [SignedHead] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            do { heads.append(try SignedHead(line: String(line))) } catch {
                throw AuditError.badFile("\(path) line \(number + 1): \(error)")
            }
        }
        return heads
    }
}
