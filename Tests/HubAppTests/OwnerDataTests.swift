import Foundation
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// Owner contact data is logged sealed and erased by deleting its key: the log is never rewritten.
@Suite struct OwnerDataTests {
    let owner = Admission(
        animal: "rex", name: "Rex", weightKg: 23.5, species: "dog", ownerName: "Ana Lima",
        ownerAddress: "Rua das Flores 1, Porto", ownerPhone: "+351 912 345 678", beacon: "b-rex")

    func logBytes(_ dir: String) throws -> Data {
        var all = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: dir + "/log") where name.hasSuffix(".seg") {
            all.append(FileManager.default.contents(atPath: dir + "/log/" + name) ?? Data())
        }
        return all
    }

    @Test func ownerDataIsSealedInTheLogAndErasable() async throws {
        let dir = temporaryDirectory()
        let hub = try await Hub(paths: HubPaths(dataDirectory: dir))
        _ = try await hub.execute(.admitAnimal(owner), actor: "test", now: currentMicros())
        let logged = await hub.state.animals["rex"]!.admission
        #expect(OwnerDataVault.isSealed(logged.ownerName ?? ""))
        #expect(OwnerDataVault.isSealed(logged.ownerPhone ?? ""))
        #expect(logged.name == "Rex" && logged.species == "dog")
        let bytes = try logBytes(dir)
        #expect(!bytes.isEmpty)
        #expect(bytes.range(of: Data("Ana Lima".utf8)) == nil)
        #expect(bytes.range(of: Data("+351 912".utf8)) == nil)
        // With the key, the operator can read it.
        let report = ReadModelReport.json(await hub.state, asOf: "now", vault: hub.vault).serialized()
        #expect(report.contains(#""owner":{"name":"Ana Lima","address":"Rua das Flores 1, Porto","phone":"+351 912 345 678"}"#))

        let before = hub.store.lastSequence
        let erased = try await hub.execute(.eraseOwnerData(id: "rex"), actor: "test", now: currentMicros())
        if case .accepted(let events, _, _) = erased { #expect(events == [.ownerDataErased(OwnerDataErased(animal: "rex"))]) }
        #expect(!hub.vault.hasKey(animal: "rex"))
        #expect(hub.vault.read(logged.ownerName, animal: "rex") == .keyMissing)
        let after = ReadModelReport.json(await hub.state, asOf: "now", vault: hub.vault).serialized()
        #expect(after.contains(#""owner":"erased""#))
        #expect(!after.contains("Ana Lima"))
        // Nothing was rewritten: the earlier records and the chain are intact.
        #expect(hub.store.lastSequence == before + 1)
        try await hub.close()
        let verified = try LogVerifier.verify(directory: dir + "/log")
        #expect(verified.records == before + 1)
    }

    /// A key file that cannot be read (damaged, or the disk failing under it) is never replaced by a
    /// new key, which would make what it sealed unreadable for good; and owner data it cannot open
    /// is said to be unreadable, not erased.
    @Test func aKeyThatCannotBeReadIsNeverReplacedNorShownAsErased() async throws {
        let dir = temporaryDirectory()
        let hub = try await Hub(paths: HubPaths(dataDirectory: dir))
        _ = try await hub.execute(.admitAnimal(owner), actor: "test", now: currentMicros())
        let path = hub.vault.keyPath("rex")
        let key = try #require(FileManager.default.contents(atPath: path))
        let damaged = Data(key.prefix(7))
        try damaged.write(to: URL(fileURLWithPath: path))
        // Sealing for rex again (a retried admission) needs the key: refused, the file untouched.
        #expect(throws: (any Error).self) { try hub.vault.seal("Ana Lima", animal: "rex") }
        #expect(FileManager.default.contents(atPath: path) == damaged)
        let report = ReadModelReport.json(await hub.state, asOf: "now", vault: hub.vault).serialized()
        #expect(!report.contains(#""owner":"erased""#), "\(report)")
        #expect(report.contains(#""owner":"unreadable: the owner key "#) && report.contains("is 7 bytes, not 32"), "\(report)")
        // The key back in place, the data reads again.
        try key.write(to: URL(fileURLWithPath: path))
        let restored = ReadModelReport.json(await hub.state, asOf: "now", vault: hub.vault).serialized()
        #expect(restored.contains(#""owner":{"name":"Ana Lima","#))
        try await hub.close()
    }

    /// A log copied without the data directory's `keys/` (or a key deleted by hand) is not an
    /// erasure: no `OwnerDataErased` was logged, so the report says the key is missing and where it
    /// belongs, as the console does, and the data reads again once the key is put back.
    @Test func aKeyMissingWithoutAnErasureIsNotShownAsErased() async throws {
        let dir = temporaryDirectory()
        let hub = try await Hub(paths: HubPaths(dataDirectory: dir))
        _ = try await hub.execute(.admitAnimal(owner), actor: "test", now: currentMicros())
        let path = hub.vault.keyPath("rex")
        let key = try #require(FileManager.default.contents(atPath: path))
        try FileManager.default.removeItem(atPath: path)
        let report = ReadModelReport.json(await hub.state, asOf: "now", vault: hub.vault).serialized()
        #expect(!report.contains(#""owner":"erased""#), "\(report)")
        #expect(report.contains(#""owner":"key missing: "#) && report.contains("animal-rex.key"), "\(report)")
        try key.write(to: URL(fileURLWithPath: path))
        let restored = ReadModelReport.json(await hub.state, asOf: "now", vault: hub.vault).serialized()
        #expect(restored.contains(#""owner":{"name":"Ana Lima","#))
        try await hub.close()
    }

    @Test func unknownAnimalsCannotBeErased() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        let outcome = try await hub.execute(.eraseOwnerData(id: "ghost"), actor: "test", now: currentMicros())
        if case .rejected(let r, _, _) = outcome { #expect(r.code == "unknown_animal") } else { Issue.record("expected a rejection") }
        try await hub.close()
    }

    @Test func unseenAndSightedAgain() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(.admitAnimal(owner), actor: "test", now: currentMicros())
        _ = try await hub.execute(
            .sightAnimal(id: "rex", room: "ward 2", beacon: "b-rex", at: 1_000), actor: "bridge", now: currentMicros())
        _ = try await hub.execute(.markAnimalUnseen(id: "rex", lastRoom: "ward 2", lastSeen: 2_000), actor: "bridge", now: currentMicros())
        #expect(await hub.state.animals["rex"]?.unseenSince == 2_000)
        let again = try await hub.execute(
            .markAnimalUnseen(id: "rex", lastRoom: "ward 2", lastSeen: 3_000), actor: "bridge", now: currentMicros())
        if case .accepted(let e, _, _) = again { #expect(e.isEmpty) }
        // Heard again in the same room: a fact again.
        let back = try await hub.execute(
            .sightAnimal(id: "rex", room: "ward 2", beacon: "b-rex", at: 4_000), actor: "bridge", now: currentMicros())
        if case .accepted(let e, _, _) = back { #expect(e.count == 1) }
        #expect(await hub.state.animals["rex"]?.unseenSince == nil)
        let json = StateJSON.animal(await hub.state.animals["rex"]!, live: (room: "ward 2", at: 9_000))
        #expect(json["present"] == .bool(true))
        #expect(json["last_seen"] == .string(ISO8601.format(micros: 9_000)))
        try await hub.close()
    }
}
