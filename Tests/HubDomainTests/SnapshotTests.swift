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
}
