import Foundation
import HubDomain
@testable import HubRuntime
import Testing

/// What the hub holds in memory is bounded by the household, never by how many events or messages
/// went by (issue 17).
@Suite struct MemoryBoundTests {
    /// At a household's pace (one event at a time, each acknowledged before the next) the event
    /// feed's window is never full; it used to keep every acknowledged event's task until 4096 of
    /// them had piled up past a full window, i.e. for ever.
    @Test func theEventFeedLetsGoOfAcknowledgedEvents() async throws {
        let f = try await SurfaceFixture.start()
        try await f.watcher.waitFor("hub/status") { $0 == "online" }
        let surface = try #require(f.service.surface)
        for i in 0..<300 {
            _ = try await f.service.hub.execute(.recordReading(subject: .device("lamp"), quantity: .power, value: Double(i),
                                                               measuredAt: currentMicros()), actor: "test", now: currentMicros())
            let sequence = f.service.hub.store.lastSequence
            let deadline = ContinuousClock.now + .seconds(10)
            while surface.eventsAcknowledged < sequence, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            #expect(surface.eventsAcknowledged >= sequence)
        }
        #expect(surface.events.heldTasks <= 18, "held \(surface.events.heldTasks) tasks after 300 acknowledged events")
        try await f.stop()
    }
}
