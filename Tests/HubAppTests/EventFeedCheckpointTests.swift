import BrokerHarness
import Foundation
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The MQTT event feed's checkpoint (`mqtt-events.checkpoint`): rewritten in place, and never
/// followed past the log's end (after a power cut the log may end before the observations the
/// feed had sent).
@Suite(.serialized) struct EventFeedCheckpointTests {
    @Test func theCheckpointIsRewrittenInPlace() throws {
        let path = temporaryDirectory() + "/mqtt-events.checkpoint"
        try "7\n".write(toFile: path, atomically: false, encoding: .utf8)  // as older hubs wrote it
        let inode = try #require(FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int)
        #expect(MQTTEventsPublisher.writeCheckpoint(123, to: path) == nil)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "00000000000000000123\n")
        #expect(MQTTEventsPublisher.writeCheckpoint(UInt64.max, to: path) == nil)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "\(UInt64.max)\n")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int == inode, "the same file, not a new one")
        // Whatever longer was there is cut.
        try "12345 and something else entirely\n".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(MQTTEventsPublisher.writeCheckpoint(5, to: path) == nil)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "00000000000000000005\n")
        #expect(MQTTEventsPublisher.writeCheckpoint(5, to: temporaryDirectory() + "/no/such/dir/file") != nil)
    }

    /// Readings held for the log's next write moment are published and acknowledged before they
    /// are durable: the checkpoint names none of them until a write moment has made them durable
    /// (after a power cut the events logged next would take their sequences, and a feed resuming
    /// after a checkpoint past the log's durable end would skip those). Before, a save wrote
    /// whatever the broker had acknowledged.
    @Test func theCheckpointNamesOnlyWhatTheLogMadeDurable() async throws {
        let dir = temporaryDirectory()
        let broker = try TestBroker.start()
        let f = try await SurfaceFixture.start(
            broker: broker, dataDirectory: dir,
            devices: [HubConfig.Device(id: "plug9", driver: "tasmota", name: "Plug 9", config: #"{"topic":"plug9"}"#)],
            factories: MQTTDeviceSurfaceTests.factories,
            logOptions: SegmentStoreOptions(observationCommitDelay: .seconds(600)))
        defer { Task { try? await f.stop() } }
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        try w.publish("tele/plug9/LWT", "Online", retain: true)
        try await w.waitFor("hub/device/plug9/availability") { $0 == "online" }
        let store = f.service.hub.store
        try await store.makeDurable()
        let durable = store.durableSequence
        for watts in [500.0, 900.0, 1500.0] { try w.publish("tele/plug9/SENSOR", #"{"ENERGY":{"Power":\#(watts)}}"#) }
        try await w.waitFor("hub/events/device/plug9/ReadingRecorded", timeout: .seconds(10)) { $0.contains("1500") }
        let events = try #require(f.service.surface?.events)
        try await waitUntil("the broker acknowledged the readings") { events.acknowledged == store.lastSequence }
        #expect(store.durableSequence == durable && store.lastSequence > durable, "the readings are held")

        let path = dir + "/mqtt-events.checkpoint"
        func checkpoint() throws -> UInt64? {
            UInt64(try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        events.saveCheckpoint()
        #expect(try checkpoint() == durable, "acknowledged up to \(store.lastSequence), durable up to \(durable)")
        try await store.makeDurable()
        events.saveCheckpoint()
        #expect(try checkpoint() == store.lastSequence)
    }

    @Test func theFeedResumesAtTheLogsEndWhenItsCheckpointIsPastIt() async throws {
        let dir = temporaryDirectory()
        try "999\n".write(toFile: dir + "/mqtt-events.checkpoint", atomically: false, encoding: .utf8)
        let f = try await SurfaceFixture.start(dataDirectory: dir)
        defer { Task { try? await f.stop() } }
        try await f.watcher.waitFor("hub/status") { $0 == "online" }
        try f.watcher.publish("hub/device/lamp/switch/set", "ON")
        try await f.watcher.waitFor("hub/events/device/lamp/SwitchRequested") { $0.contains(#""state":"on""#) }
    }
}
