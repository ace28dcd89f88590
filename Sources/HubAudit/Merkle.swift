import Crypto

/// RFC 9162 section 2.1 hashing: the Merkle tree hash of a list of leaves, and the inclusion and
/// consistency proofs over it. Pure functions; where the hashes of subtrees come from is the
/// caller's (``SubtreeHashes``).
///
/// - A leaf's hash is `SHA-256(0x00 || leaf)`.
/// - An inner node's hash is `SHA-256(0x01 || left || right)`.
/// - A tree of `n > 1` leaves splits at `k`, the largest power of two below `n`: the left subtree
///   holds leaves `0..<k`, the right one `k..<n`.
/// - The empty tree's hash is `SHA-256()` of nothing.
public enum Merkle {
    /// The hash of a leaf: `SHA-256(0x00 || leaf)`.
    public static func leafHash<Bytes: Sequence<UInt8>>(_ leaf: Bytes) -> [UInt8] {
        var hasher = SHA256()
        withUnsafeBytes(of: UInt8(0x00)) { hasher.update(bufferPointer: $0) }
        if leaf.withContiguousStorageIfAvailable({ hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }) == nil {
            hasher.update(data: Array(leaf))
        }
        return hasher.finalize().withUnsafeBytes { Array($0) }
    }

    /// The hash of an inner node: `SHA-256(0x01 || left || right)`.
    public static func nodeHash(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] {
        var hasher = SHA256()
        withUnsafeBytes(of: UInt8(0x01)) { hasher.update(bufferPointer: $0) }
        left.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        right.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        return hasher.finalize().withUnsafeBytes { Array($0) }
    }

    /// The root of the empty tree: SHA-256 of no bytes.
    public static var emptyRoot: [UInt8] { Array(SHA256.hash(data: [UInt8]())) }

    /// The largest power of two smaller than `n` (`n` at least 2): where a tree of `n` leaves splits.
    public static func split(_ n: UInt64) -> UInt64 {
        precondition(n >= 2)
        return UInt64(1) << (63 - (n - 1).leadingZeroBitCount)
    }

    /// The root of a list of leaf hashes, by the definition (no storage): for tests and small trees.
    public static func root(leafHashes: ArraySlice<[UInt8]>) -> [UInt8] {
        switch leafHashes.count {
        case 0: return emptyRoot
        case 1: return leafHashes.first!
        default:
            let k = Int(split(UInt64(leafHashes.count)))
            let start = leafHashes.startIndex
            return nodeHash(root(leafHashes: leafHashes[start..<start + k]), root(leafHashes: leafHashes[(start + k)...]))
        }
    }

    /// The audit path of leaf `index` in the tree of the first `size` leaves (RFC 9162 2.1.3.1):
    /// the siblings from the leaf up to the root.
    ///
    /// - Throws: ``AuditError/outOfRange(_:)`` unless `index < size`; what `hashes` throws.
    public static func inclusionProof(index: UInt64, size: UInt64, _ hashes: some SubtreeHashes) throws -> [[UInt8]] {
        guard index < size else { throw AuditError.outOfRange("leaf \(index) is not in a tree of \(size) leaves") }
        var path: [[UInt8]] = []
        func walk(_ lo: UInt64, _ hi: UInt64) throws {
            guard hi - lo > 1 else { return }
            let k = split(hi - lo)
            if index < lo + k {
                try walk(lo, lo + k)
                path.append(try hashes.hash(lo + k, hi))
            } else {
                try walk(lo + k, hi)
                path.append(try hashes.hash(lo, lo + k))
            }
        }
        try walk(0, size)
        return path
    }

    /// The consistency proof between the trees of the first `old` and `new` leaves (RFC 9162
    /// 2.1.4.1): empty when `old` is 0 or equals `new`.
    ///
    /// - Throws: ``AuditError/outOfRange(_:)`` unless `old <= new`; what `hashes` throws.
    public static func consistencyProof(old: UInt64, new: UInt64, _ hashes: some SubtreeHashes) throws -> [[UInt8]] {
        guard old <= new else { throw AuditError.outOfRange("the old tree (\(old)) is larger than the new one (\(new))") }
        guard old > 0, old < new else { return [] }
        var path: [[UInt8]] = []
        func sub(_ m: UInt64, _ lo: UInt64, _ hi: UInt64, _ complete: Bool) throws {
            if m == hi - lo {
                if !complete { path.append(try hashes.hash(lo, hi)) }
                return
            }
            let k = split(hi - lo)
            if m <= k {
                try sub(m, lo, lo + k, complete)
                path.append(try hashes.hash(lo + k, hi))
            } else {
                try sub(m - k, lo + k, hi, false)
                path.append(try hashes.hash(lo, lo + k))
            }
        }
        try sub(old, 0, new, true)
        return path
    }

    /// The root an inclusion proof leads to (RFC 9162 2.1.3.2), or nil when the proof has the wrong
    /// length for `index` and `size`. Compare it with the signed root.
    public static func rootFromInclusion(leafHash: [UInt8], index: UInt64, size: UInt64, path: [[UInt8]]) -> [UInt8]? {
        guard index < size else { return nil }
        var fn = index, sn = size - 1
        var r = leafHash
        for p in path {
            if sn == 0 { return nil }
            if fn & 1 == 1 || fn == sn {
                r = nodeHash(p, r)
                if fn & 1 == 0 { while fn & 1 == 0 && fn != 0 { fn >>= 1; sn >>= 1 } }
            } else {
                r = nodeHash(r, p)
            }
            fn >>= 1; sn >>= 1
        }
        return sn == 0 ? r : nil
    }

    /// Whether a consistency proof shows the tree of `old` leaves with root `oldRoot` is a prefix of
    /// the tree of `new` leaves with root `newRoot` (RFC 9162 2.1.4.2).
    public static func verifyConsistency(old: UInt64, new: UInt64, oldRoot: [UInt8], newRoot: [UInt8], path: [[UInt8]]) -> Bool {
        if old > new { return false }
        if old == new { return path.isEmpty && oldRoot == newRoot }
        if old == 0 { return path.isEmpty }
        var proof = path
        if old & (old - 1) == 0 { proof.insert(oldRoot, at: 0) }  // a power of two: the old root is a node of the new tree
        guard let first = proof.first else { return false }
        var fn = old - 1, sn = new - 1
        while fn & 1 == 1 { fn >>= 1; sn >>= 1 }
        var fr = first, sr = first
        for c in proof.dropFirst() {
            if sn == 0 { return false }
            if fn & 1 == 1 || fn == sn {
                fr = nodeHash(c, fr)
                sr = nodeHash(c, sr)
                if fn & 1 == 0 { while fn & 1 == 0 && fn != 0 { fn >>= 1; sn >>= 1 } }
            } else {
                sr = nodeHash(sr, c)
            }
            fn >>= 1; sn >>= 1
        }
        return sn == 0 && fr == oldRoot && sr == newRoot
    }
}

/// Where a proof's subtree hashes come from: the hash of the tree over leaves `lo..<hi`.
public protocol SubtreeHashes {
    /// The Merkle tree hash of leaves `lo..<hi` (`lo < hi`).
    func hash(_ lo: UInt64, _ hi: UInt64) throws -> [UInt8]
}

/// Subtree hashes computed from leaf hashes held in memory (tests, small trees).
public struct LeafHashList: SubtreeHashes {
    /// The leaves' hashes, in log order.
    public var leafHashes: [[UInt8]]
    /// A list over `leafHashes`.
    public init(_ leafHashes: [[UInt8]]) { self.leafHashes = leafHashes }
    /// The Merkle tree hash of leaves `lo..<hi`, computed from the list.
    public func hash(_ lo: UInt64, _ hi: UInt64) throws -> [UInt8] {
        Merkle.root(leafHashes: leafHashes[Int(lo)..<Int(hi)])
    }
}

/// What the audit parts refuse, each naming what and where.
public enum AuditError: Error, CustomStringConvertible, Equatable {
    /// A sequence, index or size outside the tree.
    case outOfRange(String)
    /// A file that is not what it should be (names the file and the fault).
    case badFile(String)
    /// A proof, head or line that does not check out (says which and why).
    case rejected(String)

    /// The message each case carries.
    public var description: String {
        switch self {
        case .outOfRange(let s), .badFile(let s), .rejected(let s): return s
        }
    }
}
