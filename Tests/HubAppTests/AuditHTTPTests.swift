import Foundation
import HTTPTypes
import HubAudit
import HubDomain
import Hummingbird
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The audit over HTTP as an auditor's script reads it: the newest head, and proofs that check
/// against it with the public key alone.
@Suite struct AuditHTTPTests {
    @Test func headAndProofsAreReadWithGETAndCheckOut() async throws {
        let hub = try await RouteFixture.start(requireCredential: false, auditHeadSeconds: 1)
        for state in ["ON", "OFF", "ON", "OFF"] {
            try await hub.test { client in
                try await client.execute(uri: "/api/device/lamp/switch", method: .post, body: ByteBuffer(text: state)) {
                    #expect($0.status == .ok, "\($0.text)")
                }
            }
        }
        // The hub signed a head at start (the lamp registered), and signs one a second later over
        // the commands; the tree's file holds what the newest head covers. An auditor proves records
        // in the newest head. The audit follows the log on a low-priority thread: on a busy machine
        // the key, and the heads, come a while after the commands.
        // (The lamp's confirmations are logged after the commands' answers: the log's end is read anew.)
        let store = hub.service.hub.store
        let newest = try await waitFor(hub, "/api/audit/head") { $0["data"]?["size"]?.doubleValue == Double(store.lastSequence) }
        let signed = try SignedHead(line: try #require(newest["data"]).serialized())
        let total = signed.size
        let first = try SignedHead(line: try #require(AuditTrail.heads(directory: hub.dataDirectory + "/audit").first?.line))
        let key = try AuditKey.load(path: hub.dataDirectory + "/audit/key", create: false).publicKey
        #expect(signed.isSigned(by: key) && first.isSigned(by: key) && first.size <= total, "\(newest)")
        let root = try TreeFile(path: hub.dataDirectory + "/audit/tree", readOnly: true).root(size: total)

        for seq in 1...total {
            let proof = try await waitFor(hub, "/api/audit/proof?seq=\(seq)&size=\(total)")["data"]
            let path = (proof?["path"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { Hex.bytes($0, count: 32) } }
            var line: [UInt8] = []
            try await hub.service.hub.store.readViews(from: seq, through: seq) { view in
                line = AuditLeaf.bytes(view)
                return false
            }
            #expect(
                Merkle.rootFromInclusion(leafHash: Merkle.leafHash(line), index: seq - 1, size: total, path: path) == root, "record \(seq)")
        }
        #expect(root == signed.root, "the newest head signs the tree the proofs lead to")
        let consistency = try await waitFor(hub, "/api/audit/consistency?from=\(first.size)&to=\(total)")["data"]
        let path = (consistency?["path"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { Hex.bytes($0, count: 32) } }
        #expect(Merkle.verifyConsistency(old: first.size, new: total, oldRoot: first.root, newRoot: root, path: path))

        // Bad input is refused with a clear answer and changes nothing.
        try await hub.test { client in
            for (uri, status, text) in [
                ("/api/audit/proof?seq=0&size=\(total)", HTTPResponse.Status.notFound, "record 0 is not in the tree"),
                ("/api/audit/proof?seq=2&size=\(total + 1000)", .notFound, "the tree holds"),
                ("/api/audit/proof?size=2", .badRequest, "seq: required"),
                ("/api/audit/proof?seq=abc", .badRequest, "seq: expected a whole number"),
                ("/api/audit/proof?seq=1&colour=red", .badRequest, "colour\\\"; known: seq, size"),
                ("/api/audit/consistency?from=3&to=2", .badRequest, "from: must be from 1 to 2")
            ] {
                try await client.execute(uri: uri, method: .get) { response in
                    #expect(response.status == status, "\(uri): \(response.text)")
                    #expect(response.text.contains(text), "\(uri): \(response.text)")
                }
            }
            try await client.execute(uri: "/api/audit/head", method: .post) { #expect($0.status == .methodNotAllowed) }
        }
        try await hub.stop()
    }

    /// GETs `uri` until it answers 200 with a body `wanted` takes (the audit service follows the
    /// log; wait for the state).
    func waitFor(_ hub: RouteFixture, _ uri: String, until wanted: (JSONValue) -> Bool = { _ in true }) async throws -> JSONValue {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let (status, body) = try await hub.test { client in
                try await client.execute(uri: uri, method: .get) { ($0.status, $0.text) }
            }
            if status == .ok, let value = try? JSONValue.parse(body), wanted(value) { return value }
            guard ContinuousClock.now < deadline else { throw HubError.failed("\(uri) answered \(status): \(body)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
