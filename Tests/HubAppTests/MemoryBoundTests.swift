import Foundation
import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// What the hub holds in memory is bounded by the household, never by how many events or messages
/// went by.
@Suite struct MemoryBoundTests {
    /// At a household's pace (one event at a time, each acknowledged before the next) the event
    /// feed's window is never full; it used to keep every acknowledged event's task until 4096 of
    /// them had piled up past a full window, i.e. for ever. Now it holds nothing per event once the
    /// broker acknowledged it.
    @Test func theEventFeedLetsGoOfAcknowledgedEvents() async throws {
        let f = try await SurfaceFixture.start()
        try await f.watcher.waitFor("hub/status") { $0 == "online" }
        let surface = try #require(f.service.surface)
        for i in 0..<300 {
            _ = try await f.service.hub.execute(
                .recordReading(
                    subject: .device("lamp"), quantity: .power, value: Double(i),
                    measuredAt: currentMicros()), actor: "test", now: currentMicros())
            let sequence = f.service.hub.store.lastSequence
            let deadline = ContinuousClock.now + .seconds(10)
            while surface.eventsAcknowledged < sequence, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
            #expect(surface.eventsAcknowledged >= sequence)
        }
        // Told on the network thread just after the acknowledged prefix moves.
        let settled = ContinuousClock.now + .seconds(1)
        while surface.events.inFlight > 0, ContinuousClock.now < settled { try await Task.sleep(for: .milliseconds(2)) }
        #expect(surface.events.inFlight == 0, "\(surface.events.inFlight) events in flight after 300 acknowledged")
        try await f.stop()
    }
}
