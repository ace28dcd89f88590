import Foundation
import MQTT
import Synchronization

/// The household's people: a switch command (`hub/device/<id>/switch/set`, toggling a random plug)
/// every `spacing` real seconds, each timed until the retained `switch` topic shows the new state
/// (at most 10 s: later is dropped).
final class HouseholdCommander: Sendable {
    struct Result: Sendable {
        var sent = 0
        var latencies: [Double] = []
        func percentile(_ p: Double) -> Double? {
            let sorted = latencies.sorted()
            return sorted.isEmpty ? nil : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
    }

    private let seen: HouseholdSeen
    private let client: MQTTClient
    private let ids: [String]
    private let spacing: Double
    private let state = Mutex(Result())

    init(seen: HouseholdSeen, client: MQTTClient, ids: [String], spacing: Double) {
        self.seen = seen
        self.client = client
        self.ids = ids
        self.spacing = spacing
    }

    var result: Result { state.withLock { $0 } }

    /// Sends commands until `end` (the last one is sent at least 10 s before it, so each has its time to be confirmed).
    func run(until end: ContinuousClock.Instant) async {
        var next = ContinuousClock.now + .seconds(spacing / 2)
        while next + .seconds(10) < end {
            try? await Task.sleep(until: next)
            next += .seconds(spacing)
            guard let id = ids.randomElement() else { return }
            let target = seen.switchState(id) == "ON" ? "OFF" : "ON"
            let t0 = ContinuousClock.now
            guard (try? client.publish("hub/device/\(id)/switch/set", Array(target.utf8), qos: 1)) != nil else { continue }
            state.withLock { $0.sent += 1 }
            while seen.switchState(id) != target, ContinuousClock.now - t0 < .seconds(10) {
                try? await Task.sleep(for: .milliseconds(1))
            }
            if seen.switchState(id) == target {
                let latency = (ContinuousClock.now - t0).inSeconds
                state.withLock { $0.latencies.append(latency) }
            }
        }
    }
}
