import Foundation
import Testing

@testable import HubAudit

/// RFC 6962 / RFC 9162 test vectors, as published with transparency-dev/merkle (proof/verify_test.go).
enum Vectors {
    static let leaves = ["", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"]
        .map { Hex.bytes($0)! }
    /// The root of the tree of the first n leaves, n = 0...8.
    static let roots = [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"
    ]
    /// (leaf index, tree size, audit path).
    static let inclusion: [(UInt64, UInt64, [String])] = [
        (0, 1, []),
        (
            0, 8,
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"
            ]
        ),
        (
            5, 8,
            [
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"
            ]
        ),
        (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
        (
            1, 5,
            [
                "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"
            ]
        )
    ]
    /// (old size, new size, proof).
    static let consistency: [(UInt64, UInt64, [String])] = [
        (1, 1, []),
        (
            1, 8,
            [
                "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"
            ]
        ),
        (
            6, 8,
            [
                "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"
            ]
        ),
        (
            2, 5,
            [
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"
            ]
        ),
        (
            6, 7,
            [
                "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
                "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"
            ]
        )
    ]
    static var leafHashes: [[UInt8]] { leaves.map { Merkle.leafHash($0) } }
}

func temporaryDirectory(_ name: String = #function) -> String {
    let path = NSTemporaryDirectory() + "hub-audit-\(name.filter(\.isLetter))-\(UUID().uuidString.prefix(8))"
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite struct MerkleTests {
    @Test func rootsAreThePublishedOnes() {
        for n in 0...8 {
            #expect(Hex.string(Merkle.root(leafHashes: Vectors.leafHashes.prefix(n))) == Vectors.roots[n], "size \(n)")
        }
    }

    @Test func theSplitIsTheLargestPowerOfTwoBelow() {
        let expected: [UInt64: UInt64] = [2: 1, 3: 2, 4: 2, 5: 4, 8: 4, 9: 8, 1000: 512, 10_000_000: 8_388_608]
        for (n, k) in expected { #expect(Merkle.split(n) == k, "n = \(n)") }
    }

    @Test func inclusionProofsAreThePublishedOnesAndVerify() throws {
        let hashes = LeafHashList(Vectors.leafHashes)
        for (index, size, path) in Vectors.inclusion {
            let proof = try Merkle.inclusionProof(index: index, size: size, LeafHashList(Array(Vectors.leafHashes.prefix(Int(size)))))
            #expect(proof.map(Hex.string) == path, "leaf \(index) of \(size)")
            let root = Merkle.rootFromInclusion(leafHash: try hashes.hash(index, index + 1), index: index, size: size, path: proof)
            #expect(root.map(Hex.string) == Vectors.roots[Int(size)])
        }
    }

    @Test func consistencyProofsAreThePublishedOnesAndVerify() throws {
        for (old, new, path) in Vectors.consistency {
            let proof = try Merkle.consistencyProof(old: old, new: new, LeafHashList(Array(Vectors.leafHashes.prefix(Int(new)))))
            #expect(proof.map(Hex.string) == path, "\(old) -> \(new)")
            #expect(
                Merkle.verifyConsistency(
                    old: old, new: new, oldRoot: Hex.bytes(Vectors.roots[Int(old)])!,
                    newRoot: Hex.bytes(Vectors.roots[Int(new)])!, path: proof))
        }
    }

    /// The published probes: a proof moved to another index or size, a bit flipped, a hash added or
    /// removed, other roots: each is refused.
    @Test func corruptedProofsAreRefused() throws {
        for (index, size, path) in Vectors.inclusion where !path.isEmpty {
            let proof = path.map { Hex.bytes($0)! }
            let leaf = Vectors.leafHashes[Int(index)], root = Hex.bytes(Vectors.roots[Int(size)])!
            func accepts(_ i: UInt64, _ s: UInt64, _ l: [UInt8], _ p: [[UInt8]]) -> Bool {
                Merkle.rootFromInclusion(leafHash: l, index: i, size: s, path: p) == root
            }
            #expect(accepts(index, size, leaf, proof))
            #expect(!accepts(index &- 1, size, leaf, proof))
            #expect(!accepts(index + 1, size, leaf, proof))
            #expect(!accepts(index ^ 2, size, leaf, proof))
            #expect(!accepts(index, size * 2, leaf, proof))
            #expect(!accepts(index, size / 2, leaf, proof))
            #expect(!accepts(index, size, Merkle.leafHash(Array("WrongLeaf".utf8)), proof))
            #expect(!accepts(index, size, leaf, proof + [root]))
            #expect(!accepts(index, size, leaf, [root] + proof))
            #expect(!accepts(index, size, leaf, Array(proof.dropLast())))
            for i in proof.indices {
                var flipped = proof
                flipped[i][0] ^= 8
                #expect(!accepts(index, size, leaf, flipped))
            }
        }
        for (old, new, path) in Vectors.consistency where !path.isEmpty {
            let proof = path.map { Hex.bytes($0)! }
            let r1 = Hex.bytes(Vectors.roots[Int(old)])!, r2 = Hex.bytes(Vectors.roots[Int(new)])!
            func accepts(_ a: UInt64, _ b: UInt64, _ x: [UInt8], _ y: [UInt8], _ p: [[UInt8]]) -> Bool {
                Merkle.verifyConsistency(old: a, new: b, oldRoot: x, newRoot: y, path: p)
            }
            #expect(accepts(old, new, r1, r2, proof))
            #expect(!accepts(old - 1, new, r1, r2, proof))
            #expect(!accepts(old + 1, new, r1, r2, proof))
            #expect(!accepts(old ^ 2, new, r1, r2, proof))
            #expect(!accepts(old, new * 2, r1, r2, proof))
            #expect(!accepts(old, new / 2, r1, r2, proof))
            #expect(!accepts(old, new, r2, r1, proof))
            #expect(!accepts(old, new, r1, r2, []))
            #expect(!accepts(old, new, r1, r2, proof + [r1]))
            #expect(!accepts(old, new, r1, r2, [r2] + proof))
            #expect(!accepts(old, new, r1, r2, Array(proof.dropLast())))
            for i in proof.indices {
                var flipped = proof
                flipped[i][0] ^= 16
                #expect(!accepts(old, new, r1, r2, flipped))
            }
        }
    }

    /// A tree of three leaves worked by hand: `a`, `b`, `c` are one-byte leaves.
    @Test func aSmallTreeByHand() throws {
        let a = Merkle.leafHash([0x61]), b = Merkle.leafHash([0x62]), c = Merkle.leafHash([0x63])
        let ab = Merkle.nodeHash(a, b)
        let root = Merkle.nodeHash(ab, c)  // 3 splits at 2: ((a b) c)
        #expect(Merkle.root(leafHashes: [a, b, c][...]) == root)
        #expect(try Merkle.inclusionProof(index: 2, size: 3, LeafHashList([a, b, c])) == [ab])
        #expect(try Merkle.inclusionProof(index: 0, size: 3, LeafHashList([a, b, c])) == [b, c])
        #expect(try Merkle.consistencyProof(old: 2, new: 3, LeafHashList([a, b, c])) == [c])
        #expect(try Merkle.consistencyProof(old: 1, new: 3, LeafHashList([a, b, c])) == [b, c])
        // The hash of a leaf is SHA-256 of 0x00 then its bytes: "a" -> SHA-256(00 61).
        #expect(Hex.string(a) == "022a6979e6dab7aa5ae4c3e5e45f7e977112a7e63593820dbec1ec738a24f93c")
    }

    /// Every leaf of every tree size up to 40, and every pair of sizes: the file's proofs equal the
    /// definition's, and verify.
    @Test func theTreeFileAgreesWithTheDefinitionAtEverySize() throws {
        let dir = temporaryDirectory()
        let leafHashes = (0..<40).map { Merkle.leafHash([UInt8($0), UInt8($0 * 7 & 255)]) }
        let tree = try TreeFile(path: dir + "/tree")
        for n in 1...leafHashes.count {
            tree.append(leafHash: leafHashes[n - 1])
            if n % 3 == 0 { try tree.flush() }
            let reference = LeafHashList(Array(leafHashes.prefix(n)))
            let root = try tree.root()
            #expect(root == Merkle.root(leafHashes: leafHashes.prefix(n)))
            for i in 0..<UInt64(n) {
                let proof = try Merkle.inclusionProof(index: i, size: UInt64(n), tree)
                #expect(proof == (try Merkle.inclusionProof(index: i, size: UInt64(n), reference)))
                #expect(Merkle.rootFromInclusion(leafHash: leafHashes[Int(i)], index: i, size: UInt64(n), path: proof) == root)
            }
            for m in 0...UInt64(n) {
                let proof = try Merkle.consistencyProof(old: m, new: UInt64(n), tree)
                #expect(proof == (try Merkle.consistencyProof(old: m, new: UInt64(n), reference)))
                #expect(Merkle.verifyConsistency(old: m, new: UInt64(n), oldRoot: try tree.root(size: m), newRoot: root, path: proof))
            }
        }
        try tree.flush()
        #expect(tree.bytes == 32 + 32 * (2 * 40 - 2))
        let reopened = try TreeFile(path: dir + "/tree", readOnly: true)
        #expect(reopened.size == 40)
        #expect(try reopened.root() == (try tree.root()))
    }

    /// A crash may leave part of a hash, or a leaf without the parents it completes: opening drops
    /// that tail, and appending goes on from the last whole leaf.
    @Test func aCutTailIsDroppedAtOpen() throws {
        let dir = temporaryDirectory()
        let leafHashes = (0..<8).map { Merkle.leafHash([UInt8($0)]) }
        do {
            let tree = try TreeFile(path: dir + "/tree")
            for h in leafHashes { tree.append(leafHash: h) }
            try tree.flush()
        }
        let full = try Data(contentsOf: URL(fileURLWithPath: dir + "/tree"))
        // Leaf 8 completes three parents: cut two of them and half a hash.
        try full.prefix(full.count - 2 * 32 - 16).write(to: URL(fileURLWithPath: dir + "/tree"))
        let tree = try TreeFile(path: dir + "/tree")
        #expect(tree.size == 7)
        #expect(try tree.root() == Merkle.root(leafHashes: leafHashes.prefix(7)))
        tree.append(leafHash: leafHashes[7])
        try tree.flush()
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/tree")) == full)
        try Data("not a tree".utf8).write(to: URL(fileURLWithPath: dir + "/other"))
        #expect(throws: AuditError.self) { try TreeFile(path: dir + "/other") }
    }
}
