import BrokerHarness
import Foundation
import HubDomain
import HubLog
import Logging
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine

/// What the engine hands its readers: decoded events (each live record is decoded once) and
/// snapshots written off the command path.
@Suite(.serialized) struct EngineHandOffTests {
    /// The follower takes every event the read models folded from the hub instead of decoding the
    /// record again; the event feed takes it too when it reads the record after the fold.
    @Test func theFollowerTakesEachEventDecodedByTheReadModels() async throws {
        let f = try await SurfaceFixture.start()
        try await f.watcher.waitFor("hub/status") { $0 == "online" }
        try await f.eventFeedCaughtUp()
        let (keptBefore, decodedBefore) = f.service.hub.recent.counts
        let first = f.service.hub.store.lastSequence
        for n in 0..<20 {
            _ = try await f.service.hub.execute(
                HubCommand.renameDevice(id: "lamp", name: "Lamp \(n)"), commandId: "rename-\(n)", actor: "test", now: currentMicros())
        }
        try await f.eventFeedCaughtUp()
        let logged = Int(f.service.hub.store.lastSequence - first)
        // Both readers (the follower, the event feed) have asked for every event by now.
        try await waitUntil("both readers asked for every event") {
            let (kept, decoded) = f.service.hub.recent.counts
            return kept - keptBefore + decoded - decodedBefore >= 2 * logged
        }
        let (kept, decoded) = f.service.hub.recent.counts
        #expect(kept - keptBefore >= logged, "the follower decoded \(decoded - decodedBefore) of \(logged) events again")
        #expect(kept - keptBefore + decoded - decodedBefore == 2 * logged)
        try await f.stop()
    }

    /// With the service running, a due snapshot is written by the snapshot writer, not inside the
    /// command that made it due, and the next start restores from it.
    @Test func dueSnapshotsAreWrittenWhileTheHubRuns() async throws {
        let broker = try TestBroker.start()
        let dataDirectory = temporaryDirectory()
        var config = HubConfig()
        config.mqtt.port = broker.port
        config.devices = [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp", config: "{}")]
        var options = HubServiceOptions(
            paths: HubPaths(dataDirectory: dataDirectory), config: config, factories: [VirtualDriverFactory()], snapshotEvery: 20)
        let service = try await HubService.start(options, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        for n in 0..<45 {
            _ = try await service.hub.execute(
                HubCommand.renameDevice(id: "lamp", name: "Lamp \(n)"), commandId: "rename-\(n)", actor: "test", now: currentMicros())
        }
        let snapshots = HubPaths(dataDirectory: dataDirectory).snapshots
        try await waitUntil("a snapshot of at least 40 events while the hub runs") {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: snapshots)) ?? []
            return names.contains { name in
                name.hasSuffix(".snap") && (UInt64(name.dropFirst("snapshot-".count).prefix(20)) ?? 0) >= 40
            }
        }
        #expect(await service.hub.snapshotProblem == nil)
        try await service.stop()
        broker.stop()
        let reopened = try await Hub(paths: HubPaths(dataDirectory: dataDirectory))
        #expect(reopened.openingNotes.contains { $0.contains("restored from the snapshot") })
        #expect(await reopened.device("lamp")?.name == "Lamp 44")
        try await reopened.close()
    }
}
