import Foundation
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

@Suite struct HubTests {
    @Test func commandsBecomeEventsAndRejectionsAreRecorded() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        let registered = try await hub.execute(
            .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil),
            commandId: "c1", actor: "test", now: t0)
        guard case .accepted(let events, let result, false) = registered else { Issue.record("not accepted: \(registered)"); return }
        #expect(events.count == 1 && result?.firstSequence == 1)
        let rejected = try await hub.execute(.switchDevice(id: "nope", target: .on), commandId: "c2", actor: "test", now: t0)
        guard case .rejected(let rejection, let recorded, false) = rejected else { Issue.record("not rejected: \(rejected)"); return }
        #expect(rejection.code == "unknown_device")
        #expect(recorded?.firstSequence == 2)
        var types: [String] = []
        try await hub.store.read(from: 1, through: 10) {
            types.append($0.type); return true
        }
        #expect(types == ["DeviceRegistered", "CommandRejected"])
        try await hub.close()
    }

    /// Two commands on different streams whose clocks were read in the other order than they
    /// committed: the log's time of the second is not before the first's (it was seq 29 dated
    /// before seq 28 in the demo), and what the read models fold is that record time.
    @Test func theLogsTimeNeverGoesBackwardsAcrossStreams() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(
            .registerDevice(id: "a", driver: "virtual", name: "A", config: "{}", hardwareId: nil),
            actor: "test", now: t0 + 10_000_000)
        _ = try await hub.execute(
            .registerDevice(id: "b", driver: "virtual", name: "B", config: "{}", hardwareId: nil),
            actor: "test", now: t0)
        var times: [Int64] = []
        try await hub.store.read(from: 1, through: 10) {
            times.append($0.timestamp); return true
        }
        #expect(times == [t0 + 10_000_000, t0 + 10_000_000])
        #expect(await hub.device("b")?.registeredAt == t0 + 10_000_000)
        try await hub.close()
    }

    @Test func aRetriedCommandReturnsTheOriginalOutcome() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        let register = HubCommand.registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil)
        _ = try await hub.execute(register, commandId: "c1", actor: "test", now: t0)
        // The same command id again: not "device_exists", but the original acceptance, and nothing appended.
        let again = try await hub.execute(register, commandId: "c1", actor: "test", now: t0 + 1)
        guard case .accepted(let events, let result, true) = again else { Issue.record("expected duplicate acceptance: \(again)"); return }
        #expect(events.count == 1 && result?.lastSequence == 1)
        // A rejected command retried stays rejected with the same reason.
        _ = try await hub.execute(.switchDevice(id: "x", target: .on), commandId: "c2", actor: "test", now: t0)
        let retried = try await hub.execute(.switchDevice(id: "x", target: .on), commandId: "c2", actor: "test", now: t0)
        guard case .rejected(let rejection, _, true) = retried else { Issue.record("expected duplicate rejection: \(retried)"); return }
        #expect(rejection.code == "unknown_device")
        #expect(hub.store.lastSequence == 2)
        try await hub.close()
    }

    @Test func concurrentCommandsOnOneDeviceStayConsistent() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(
            .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil),
            actor: "test", now: t0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<50 {
                group.addTask {
                    _ = try await hub.execute(
                        .recordReading(
                            subject: .device("lamp"), quantity: .energy, value: Double(i * 10),
                            measuredAt: t0 + Int64(i)), commandId: "r\(i)", actor: "test", now: t0)
                }
            }
            try await group.waitForAll()
        }
        let state = await hub.state
        #expect(state.lastSequence == hub.store.lastSequence)
        #expect(try await hub.store.streamVersion("device/lamp") == UInt64(hub.store.lastSequence - 1))
        try await hub.close()
    }

    @Test func restartUsesTheSnapshotAndReplaysOnlyTheTail() async throws {
        let dir = temporaryDirectory()
        let first = try await Hub(paths: HubPaths(dataDirectory: dir), snapshotEvery: 5)
        try await populate(first)
        let before = await first.state
        #expect(before.history.seriesCount == 0)  // the running hub keeps its history in files, not in the state
        let lampPower = HistoryQuery(subject: .device("lamp"), quantity: .power, from: t0, to: t0 + 86_400_000_000, resolution: .hour)
        let answered = try await first.history(lampPower)
        try await first.close()
        let second = try await Hub(paths: HubPaths(dataDirectory: dir), snapshotEvery: 5)
        #expect(second.openingNotes.contains { $0.contains("restored from the snapshot at sequence \(before.lastSequence)") })
        #expect(second.openingNotes.contains { $0.hasPrefix("replayed 0 events") })
        #expect(await second.state == before)
        #expect(try await second.history(lampPower) == answered)
        // And a state replayed from scratch is the same as the snapshot + tail, its history as the files'.
        var scratch = HubState(foldsHistory: false)
        try await Hub.fold(store: second.store, into: &scratch, through: second.store.lastSequence)
        #expect(scratch == before)
        var withHistory = HubState()
        try await Hub.fold(store: second.store, into: &withHistory, through: second.store.lastSequence)
        #expect(try withHistory.history(lampPower) == answered)
        guard case .buckets(let buckets) = answered else { Issue.record("no buckets: \(answered)"); return }
        #expect(buckets.map(\.count) == [1])
        try await second.close()
    }

    @Test func readModelsFollowTheHistory() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        try await populate(hub)
        let state = await hub.state
        #expect(state.devices["lamp"]?.removed == true)
        #expect(state.devices["pump"]?.name == "Garden pump")
        // 1000 -> 1600 (+600), reset, 100 (+100): 0.7 kWh, one reset.
        #expect(state.energy.lifetimeKWh(device: "lamp") == 0.7)
        #expect(state.energy["lamp"]?.resets == 1)
        #expect(state.activations["pump"].map(\.name) == ["lawn"])
        #expect(state.animals["rex"]?.isAdmitted == false)
        #expect(state.animals["rex"]?.lastRoom == "ward-2")
        #expect(state.audit.countsByActor["mqtt:ha"] != nil && state.audit.countsByActor["driver:virtual"] != nil)
        // Replay as of an earlier point shows the animal still admitted.
        var earlier = HubState()
        let sighting = state.audit.lastByStream["animal/rex"]!.sequence - 2
        try await Hub.fold(store: hub.store, into: &earlier, through: hub.store.lastSequence, until: .sequence(sighting))
        #expect(earlier.animals["rex"]?.isAdmitted == true)
        try await hub.close()
    }
}
