import BrokerHarness
import Foundation
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
