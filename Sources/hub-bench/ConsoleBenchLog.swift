import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT

/// The console benchmark's log, written straight into the store in large batches: `devices`
/// virtual devices registered (`dev-0` ...), then `days` of one-minute power readings for `dev-0`
/// ending at this minute, as its driver would have recorded them.
enum ConsoleBenchLog {
    static func write(paths: HubPaths, devices: Int, days: Int) async throws -> (events: Int, seconds: Double) {
        let started = ContinuousClock.now
        let minute: Int64 = 60_000_000
        let end = currentMicros() / minute * minute
        let start = end - Int64(days) * 1440 * minute
        let store = try await paths.openEventStore()
        var events = 0
        do {
            let registrations = (0..<devices).map { i in
                request(
                    .deviceRegistered(DeviceRegistered(device: "dev-\(i)", driver: "virtual", name: "Device \(i)")),
                    at: start - minute, actor: "config")
            }
            try await append(registrations, to: store)
            events += registrations.count
            var batch: [AppendRequest] = []
            var readings: [ProposedEvent] = []
            for m in 0..<(Int64(days) * 1440) {
                let at = start + m * minute
                let watts = Double((Int(m) &* 7) % 2000) + 0.5
                readings.append(
                    proposed(
                        .readingRecorded(
                            ReadingRecorded(
                                subject: .device("dev-0"), quantity: .power, value: watts,
                                measuredAt: at)), at: at))
                if readings.count == 500 {
                    batch.append(AppendRequest(stream: "device/dev-0", causation: Causation(actor: "driver:virtual"), events: readings))
                    readings = []
                }
                if batch.count == 20 {
                    try await append(batch, to: store)
                    batch = []
                }
                events += 1
            }
            if !readings.isEmpty {
                batch.append(AppendRequest(stream: "device/dev-0", causation: Causation(actor: "driver:virtual"), events: readings))
            }
            try await append(batch, to: store)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        return (events, (ContinuousClock.now - started).inSeconds)
    }

    static func proposed(_ event: HubEvent, at: Int64) -> ProposedEvent {
        ProposedEvent(type: event.typeName, schemaVersion: event.schemaVersion, timestamp: at, payload: event.encodePayload())
    }

    static func request(_ event: HubEvent, at: Int64, actor: String) -> AppendRequest {
        AppendRequest(stream: event.stream, causation: Causation(actor: actor), events: [proposed(event, at: at)])
    }

    static func append(_ requests: [AppendRequest], to store: any EventStore) async throws {
        guard !requests.isEmpty else { return }
        for result in await store.appendAll(requests) { _ = try result.get() }
    }

}
