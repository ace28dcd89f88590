import HubLog

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Merkle tree over the log, kept on disk as every node's hash in post-order, so it only ever
/// grows at the end and any subtree a proof needs is one read away.
///
/// The file is `HUBTREE1` and 24 zero bytes, then 32-byte hashes: leaf 0, leaf 1, their parent,
/// leaf 2, leaf 3, their parent, the parent of the two parents, ... Appending leaf `c` (counting
/// from 1) writes its hash and then the hash of every complete subtree it completes, so the tree of
/// `n` leaves holds `2n - popcount(n)` hashes (64 bytes a leaf, less the frontier's). The complete
/// subtree of `2^l` leaves ending with leaf `c` (counting from 1) is the hash at `2(c-1) - popcount(c-1) + l`.
///
/// The file is derived from the log (``AuditTrail`` keeps it), never fsynced: after a crash a cut
/// tail is dropped at open, and a tree that does not fit the log is rebuilt. One task appends at a
/// time; readers of another process open it read-only.
public final class TreeFile: SubtreeHashes, @unchecked Sendable {
    /// The file's 32-byte header: `HUBTREE1` and 24 zero bytes.
    public static let magic: [UInt8] = Array("HUBTREE1".utf8) + [UInt8](repeating: 0, count: 24)
    static let headerSize = 32

    /// The file's path.
    public let path: String
    private let fd: Int32
    /// Leaves in the tree.
    public var size: UInt64 { builder.size }
    /// The right edge: the complete subtrees whose leaves make up the tree, largest first.
    private var builder = TreeBuilder()
    /// Hashes appended but not yet written.
    private var pending: [UInt8] = []
    private var writtenNodes: UInt64

    /// The number of hashes a tree of `n` leaves stores.
    public static func nodeCount(_ n: UInt64) -> UInt64 { 2 * n - UInt64(n.nonzeroBitCount) }

    /// Opens the tree at `path`, making it when missing (unless `readOnly`). A tail cut by a crash
    /// (a part of a hash, or a leaf without all the parents it completes) is left out; a writer
    /// truncates it.
    ///
    /// - Throws: ``AuditError/badFile(_:)`` when the file is not a tree file; `EventLogError.io`.
    public init(path: String, readOnly: Bool = false) throws {
        self.path = path
        if !readOnly, !FileIO.exists(path) {
            let fd = try FileIO.openFile(path, flags: O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
            defer { close(fd) }
            try Self.magic.withUnsafeBytes { try FileIO.writeAll(fd: fd, path: path, $0, at: 0) }
        }
        let fd = try FileIO.openFile(path, flags: readOnly ? O_RDONLY : O_RDWR)
        self.fd = fd
        let length = try FileIO.size(fd: fd, path: path)
        var header = [UInt8](repeating: 0, count: Self.headerSize)
        let got = try header.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: 0) }
        guard got == Self.headerSize, header == Self.magic else {
            close(fd)
            throw AuditError.badFile("\(path) is not a Merkle tree file (no HUBTREE1 header)")
        }
        let stored = UInt64((length - Self.headerSize) / 32)
        var n = stored / 2 + 64
        while n > 0, Self.nodeCount(n) > stored { n -= 1 }
        builder.size = n
        writtenNodes = Self.nodeCount(n)
        if !readOnly, Self.headerSize + Int(writtenNodes) * 32 != length {
            try FileIO.truncate(fd: fd, path: path, to: Self.headerSize + Int(writtenNodes) * 32)
        }
        builder.frontier = try Self.decomposition(n).map { try node(level: $0.level, index: $0.index) }
    }

    deinit { close(fd) }

    /// The complete subtrees whose leaves make up `0..<n`, largest first, as (level, index).
    static func decomposition(_ n: UInt64) -> [(level: Int, index: UInt64)] {
        var parts: [(level: Int, index: UInt64)] = []
        var start: UInt64 = 0
        for level in stride(from: 63, through: 0, by: -1) where n & (UInt64(1) << level) != 0 {
            parts.append((level, start >> level))
            start += UInt64(1) << level
        }
        return parts
    }

    /// The stored hash of the complete subtree of `2^level` leaves starting at leaf `index << level`.
    public func node(level: Int, index: UInt64) throws -> [UInt8] {
        let end = (index + 1) << level
        guard end <= size else { throw AuditError.outOfRange("no complete subtree \(level)/\(index) in a tree of \(size) leaves") }
        let position = Self.nodeCount(end - 1) + UInt64(level)  // after the nodes before leaf `end`: its leaf, then one a level
        if position >= writtenNodes {
            let offset = Int(position - writtenNodes) * 32
            return Array(pending[offset..<offset + 32])
        }
        var hash = [UInt8](repeating: 0, count: 32)
        let got = try hash.withUnsafeMutableBytes {
            try FileIO.read(fd: fd, path: path, into: $0, at: Self.headerSize + Int(position) * 32)
        }
        guard got == 32 else { throw AuditError.badFile("\(path) ends before node \(position)") }
        return hash
    }

    /// The hash of leaves `lo..<hi`: one stored node when they form a complete aligned subtree,
    /// otherwise split as RFC 9162 splits (at most one read per level).
    public func hash(_ lo: UInt64, _ hi: UInt64) throws -> [UInt8] {
        guard lo < hi, hi <= size else { throw AuditError.outOfRange("leaves \(lo)..<\(hi) are not in a tree of \(size) leaves") }
        let n = hi - lo
        if n & (n - 1) == 0, lo % n == 0 { return try node(level: n.trailingZeroBitCount, index: lo / n) }
        let k = Merkle.split(n)
        return Merkle.nodeHash(try hash(lo, lo + k), try hash(lo + k, hi))
    }

    /// The root of the tree of the first `n` leaves (``size`` when nil).
    public func root(size n: UInt64? = nil) throws -> [UInt8] {
        let n = n ?? size
        if n == size { return builder.root }
        return n == 0 ? Merkle.emptyRoot : try hash(0, n)
    }

    /// The leaf hash of leaf `index`.
    public func leafHash(_ index: UInt64) throws -> [UInt8] { try node(level: 0, index: index) }

    /// Adds a leaf by its hash (kept in memory until ``flush()``).
    public func append(leafHash: [UInt8]) {
        precondition(leafHash.count == 32)
        for node in builder.append(leafHash) { pending += node }
    }

    /// Writes what ``append(leafHash:)`` added (no fsync: the file is derived from the log).
    public func flush() throws {
        guard !pending.isEmpty else { return }
        try pending.withUnsafeBytes { try FileIO.writeAll(fd: fd, path: path, $0, at: Self.headerSize + Int(writtenNodes) * 32) }
        // The file grows: its new blocks are allocated now, with the log's write moment the tree
        // follows, not by the flusher later in a journal commit of their own.
        FileIO.startWriteback(fd: fd)
        writtenNodes += UInt64(pending.count / 32)
        pending.removeAll(keepingCapacity: true)
    }

    /// Bytes the file takes for the tree of ``size`` leaves.
    public var bytes: Int { Self.headerSize + Int(Self.nodeCount(size)) * 32 }
}
