import Foundation
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// Replay's fold (borrowed record views, event types and actors looked up once) gives the state of
/// decoding and applying each event, wherever it starts and stops.
@Suite struct FoldTests {
    /// 12,788 events of every kind the read models fold (devices, switches, readings of
    /// several quantities, availability, animals), with events this hub cannot read in between.
    static func varied() async throws -> SegmentStore {
        let store = try SegmentStore(directory: temporaryDirectory() + "/log")
        var requests: [AppendRequest] = []
        func add(_ stream: String, _ event: HubEvent?, at n: Int, actor: String) {
            let proposed =
                event.map {
                    ProposedEvent(
                        type: $0.typeName, schemaVersion: $0.schemaVersion, timestamp: t0 + Int64(n) * 1_000_000,
                        payload: $0.encodePayload())
                } ?? ProposedEvent(type: "FromAFutureHub", schemaVersion: 1, timestamp: t0 + Int64(n) * 1_000_000, payload: [1, 2, 3])
            requests.append(
                AppendRequest(
                    stream: stream, expected: .any,
                    causation: Causation(commandId: n % 3 == 0 ? "c-\(n)" : nil, actor: actor), events: [proposed]))
        }
        for d in 0..<20 {
            add(
                "device/d\(d)", .deviceRegistered(DeviceRegistered(device: "d\(d)", driver: "virtual", name: "D \(d)", config: "{}")),
                at: d, actor: "test")
        }
        add(
            "animal/rex",
            .animalAdmitted(
                Admission(
                    animal: "rex", name: "Rex", weightKg: 30, species: "dog",
                    beacon: "910a2dec89025cc1beeb8da1658eec67")), at: 20, actor: "test")
        for n in 21..<(3 * 4096 + 500) {
            let d = "d\(n % 20)"
            switch n % 7 {
            case 0:
                add(
                    "device/\(d)", .switchToggled(SwitchToggled(device: d, state: n % 2 == 0 ? .on : .off, cause: .command)), at: n,
                    actor: "mqtt:ha")
            case 1:
                add(
                    "device/\(d)",
                    .readingRecorded(
                        ReadingRecorded(
                            subject: .device(d), quantity: .energy, value: Double(n),
                            measuredAt: t0 + Int64(n) * 1_000_000)), at: n, actor: "driver:virtual")
            case 2:
                add(
                    "device/\(d)",
                    .readingRecorded(
                        ReadingRecorded(
                            subject: .device(d), quantity: .power, value: Double(n % 90),
                            measuredAt: t0 + Int64(n) * 1_000_000)), at: n, actor: "driver:virtual")
            case 3:
                add(
                    "animal/rex",
                    .readingRecorded(
                        ReadingRecorded(
                            subject: .animal("rex"), quantity: .heartRate, value: Double(60 + n % 40),
                            measuredAt: t0 + Int64(n) * 1_000_000)), at: n, actor: "bridge:ward")
            case 4:
                add("device/\(d)", n % 500 == 4 ? nil : .switchRequested(SwitchRequested(device: d, state: .on)), at: n, actor: "scheduler")
            case 5: add("device/\(d)", .deviceRenamed(DeviceRenamed(device: d, name: "D \(d) at \(n)")), at: n, actor: "mqtt:ha")
            default:
                add("device/\(d)", .switchToggled(SwitchToggled(device: d, state: .off, cause: .manual)), at: n, actor: "driver:virtual")
            }
        }
        for result in await store.appendAll(requests) { _ = try result.get() }
        return store
    }

    @Test func foldGivesTheStateOfDecodingAndApplyingEachEvent() async throws {
        let store = try await Self.varied()
        defer { store.close() }
        // Each record decoded by name with the plain decoder and applied, as the domain defines it.
        func byHand(through: UInt64) throws -> (HubState, Int) {
            var state = HubState(), unreadable = 0
            try store.scanRecords(from: 1, through: through) { record in
                do {
                    let event = try HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
                    state.apply(
                        event,
                        context: EventContext(
                            sequence: record.sequence, timestamp: record.timestamp,
                            actor: record.causation.actor, commandId: record.causation.commandId))
                } catch {
                    state.skip(sequence: record.sequence)
                    unreadable += 1
                }
                return true
            }
            return (state, unreadable)
        }
        let through = store.lastSequence
        let (expected, expectedUnreadable) = try byHand(through: through)
        var folded = HubState()
        let unreadable = try await Hub.fold(store: store, into: &folded, through: through)
        #expect(expectedUnreadable > 0 && unreadable == expectedUnreadable)
        #expect(folded == expected && folded.lastSequence == through)

        // From a state part-way (a snapshot) to a bound; and to an unreadable event.
        var part = HubState()
        try await Hub.fold(store: store, into: &part, through: 1000)
        try await Hub.fold(store: store, into: &part, through: through, until: .sequence(9_000))
        #expect(part == (try byHand(through: 9_000)).0)
        let unreadableAt = try #require(try firstUnreadable(store))
        var end = HubState()
        try await Hub.fold(store: store, into: &end, through: unreadableAt)
        #expect(end == (try byHand(through: unreadableAt)).0 && end.lastSequence == unreadableAt)
    }

    /// The sequence of the first event of a type this hub cannot read.
    func firstUnreadable(_ store: SegmentStore) throws -> UInt64? {
        var found: UInt64?
        try store.scanViews(from: 1, through: store.lastSequence) { view in
            if String(decoding: view.typeBytes, as: UTF8.self) == "FromAFutureHub" { found = view.sequence; return false }
            return true
        }
        return found
    }
}
