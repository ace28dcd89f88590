import Crypto
import Foundation
import Testing

@testable import HubAudit

@Suite struct SignedHeadTests {
    @Test func aHeadIsSignedOverTheDocumentedBytesAndReadBack() throws {
        let key = Curve25519.Signing.PrivateKey()
        let root = Hex.bytes(Vectors.roots[8])!
        let head = try SignedHead.sign(size: 8, root: root, time: "2026-11-27T12:00:00Z", key: key)
        #expect(
            String(decoding: head.signedBytes, as: UTF8.self)
                == "hub-tree-head/1 8 5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328 2026-11-27T12:00:00Z")
        #expect(head.isSigned(by: key.publicKey))
        let read = try SignedHead(line: head.line)
        #expect(read == head)
        #expect(head.line.hasPrefix("{\"size\":8,\"root\":\"5dc9da79"))
        var forged = read
        forged.size = 9
        #expect(!forged.isSigned(by: key.publicKey))
        #expect(!head.isSigned(by: Curve25519.Signing.PrivateKey().publicKey))
        #expect(throws: AuditError.self) { try SignedHead(line: "{\"size\":8}") }
        #expect(throws: AuditError.self) { try SignedHead(line: "{\"size\":8,\"root\":\"zz\",\"time\":\"t\",\"signature\":\"00\"}") }
    }

    @Test func theKeyIsMadeOnceWithMode0600AndItsPublicHalfReadsBackFromHexAndPEM() throws {
        let dir = temporaryDirectory()
        #expect(throws: AuditError.self) { try AuditKey.load(path: dir + "/key", create: false) }
        let key = try AuditKey.load(path: dir + "/key", create: true)
        let again = try AuditKey.load(path: dir + "/key", create: true)
        #expect(key.rawRepresentation == again.rawRepresentation)
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let hex = AuditKey.publicKeyHex(key.publicKey)
        #expect(try AuditKey.publicKey(parsing: hex).rawRepresentation == key.publicKey.rawRepresentation)
        let pem = AuditKey.publicKeyPEM(key.publicKey)
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA"))
        #expect(try AuditKey.publicKey(parsing: pem).rawRepresentation == key.publicKey.rawRepresentation)
        #expect(throws: AuditError.self) { try AuditKey.publicKey(parsing: "abc") }
    }

    @Test func headTimesAreUTCWholeSeconds() {
        #expect(HeadTime.format(unixSeconds: 0) == "1970-01-01T00:00:00Z")
        #expect(HeadTime.format(unixSeconds: 951_782_400) == "2000-02-29T00:00:00Z")
        #expect(HeadTime.format(unixSeconds: 1_795_780_805) == "2026-11-27T12:00:05Z")
    }
}
