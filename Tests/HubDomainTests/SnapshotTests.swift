import Foundation
import Testing

@testable import HubDomain

@Suite struct SnapshotTests {
    @Test func hubStateSurvivesJSONEncoder() throws {
        var s = HubState(auditCapacity: 4)
        register("p", &s)
        run(.switchDevice(id: "p", target: .on), &s, commandId: "c1")
        run(.recordReading(subject: .device("p"), quantity: .energy, value: 10, measuredAt: t0), &s)
        run(.recordReading(subject: .device("p"), quantity: .energy, value: 15, measuredAt: t0 + 1), &s)
        run(.setActivation(device: "p", op: .add, name: "lawn", start: 1, lengthMinutes: 2, periodMinutes: 3), &s)
        run(.admitAnimal(admission("rex")), &s)
        run(.sightAnimal(id: "rex", room: "ward", beacon: "", at: t0), &s)
        let data = try JSONEncoder().encode(s)
        var restored = try JSONDecoder().decode(HubState.self, from: data)
        #expect(restored == s)
        #expect(restored.audit.recent == s.audit.recent)
        // The restored state keeps folding like the original.
        let e = HubEvent.switchToggled(SwitchToggled(device: "p", state: .on, cause: .command))
        var original = s
        original.apply(e, context: ctx(100))
        restored.apply(e, context: ctx(100))
        #expect(restored == original)
        #expect(restored.devices["p"]?.pending == nil)
    }

    /// The audit trail keeps streams by key, but its encoding still names them, as snapshots
    /// written before did: such a snapshot restores, and a name that is no stream fails the decoding
    /// (the hub then replays the log instead of guessing).
    @Test func theAuditTrailIsEncodedWithStreamNames() throws {
        var s = HubState(auditCapacity: 4)
        register("p", &s)
        run(.switchDevice(id: "p", target: .on), &s, commandId: "c1")
        let object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(s.audit)) as? [String: Any])
        let last = try #require(object["lastByStream"] as? [String: Any])
        #expect(Set(last.keys) == ["device/p"])
        let ring = try #require(object["ring"] as? [[String: Any]])
        #expect(ring.compactMap { $0["stream"] as? String } == ["device/p", "device/p"])

        let written =
            #"{"capacity":2,"head":0,"totalEvents":1,"countsByActor":{"alice":1},"#
            + #""lastByStream":{"animal/rex":{"sequence":7,"timestamp":5,"type":"AnimalAdmitted","actor":"alice"}},"#
            + #""ring":[{"sequence":7,"timestamp":5,"stream":"animal/rex","type":"AnimalAdmitted","actor":"alice","commandId":"c9"}]}"#
        let restored = try JSONDecoder().decode(AuditTrail.self, from: Data(written.utf8))
        #expect(restored.lastByStreamKey[.animal("rex")]?.sequence == 7)
        #expect(restored.recent.map(\.streamKey) == [.animal("rex")])
        #expect(restored.recent.first?.commandId == "c9")

        let damaged = written.replacingOccurrences(of: #""lastByStream":{"animal/rex""#, with: #""lastByStream":{"rex""#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AuditTrail.self, from: Data(damaged.utf8)) }
    }
}
