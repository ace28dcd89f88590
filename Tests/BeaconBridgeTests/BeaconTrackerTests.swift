import BeaconBridge
import DriverAPI
import DriverTestSupport
import Foundation
import Synchronization
import Testing

/// Deterministic noise for the tests.
struct TestRNG {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    mutating func gaussian() -> Double { (-2 * log(max(unit(), 1e-12))).squareRoot() * cos(2 * .pi * unit()) }
}

let second: Int64 = 1_000_000
let t0: Int64 = 1_800_000_000 * second

func obs(_ beacon: String, _ room: String, _ d: Double) -> BeaconObservation {
    BeaconObservation(beacon: beacon, room: room, distance: d, rssi: nil, format: .espresense)
}

@Suite struct SmoothingTests {
    @Test func robustMedianIgnoresSpikes() {
        #expect(DistanceWindow.robustMedian([2, 2.1, 1.9, 2.05, 30, 0.01, 2]) == 2)
        #expect(DistanceWindow.median([]) == .infinity)
        #expect(DistanceWindow.median([1, 3]) == 2)
    }

    @Test func windowForgetsOldSamples() {
        var w = DistanceWindow()
        for i in 0..<10 { w.add(8, at: t0 + Int64(i) * second / 2, window: 10 * second) }
        for i in 0..<25 { w.add(2, at: t0 + 5 * second + Int64(i) * second / 2, window: 10 * second) }
        #expect(w.estimate == 2)
        #expect(w.count <= 21)
        for i in 0..<200 { w.add(3, at: t0 + 20 * second + Int64(i), window: 10 * second) }
        #expect(w.count == DistanceWindow.capacity)
    }
}

@Suite struct TrackerTests {
    var settings: BeaconSettings {
        var s = BeaconSettings()
        s.unseenSeconds = 300
        s.presentEverySeconds = 30
        return s
    }

    @Test func firstObservationIsASighting() {
        var t = BeaconTracker(settings: settings)
        #expect(t.observe(obs("b", "kitchen", 2), at: t0) == [.sighted(beacon: "b", room: "kitchen", at: t0)])
        #expect(t.observe(obs("b", "kitchen", 2.1), at: t0 + second) == [])
        #expect(t.room(of: "b") == "kitchen")
    }

    @Test func noisyBoundaryDoesNotFlap() {
        // Halfway between two rooms: both ~3 m with 25 % noise, 2 messages/s from each, 5 minutes.
        var t = BeaconTracker(settings: settings)
        var rng = TestRNG(state: 7)
        var sightings = 0
        for i in 0..<600 {
            for room in ["a", "b"] {
                let d = 3 * (1 + 0.25 * rng.gaussian())
                let at = t0 + Int64(i) * second / 2 + (room == "a" ? 0 : second / 4)
                sightings += t.observe(obs("x", room, max(d, 0.1)), at: at).filter { if case .sighted = $0 { true } else { false } }.count
            }
        }
        #expect(sightings == 1)
    }

    @Test func clearMoveSwitchesAfterTheConfirmations() {
        var s = settings
        s.confirmations = 3
        s.windowSeconds = 4
        var t = BeaconTracker(settings: s)
        var now = t0
        for _ in 0..<20 {  // settled in a
            _ = t.observe(obs("x", "a", 1.5), at: now)
            _ = t.observe(obs("x", "b", 7), at: now + 1)
            now += second / 2
        }
        #expect(t.room(of: "x") == "a")
        // Moves to b: a now hears it at 7 m, b at 1.5 m. The medians follow within ~half a window.
        var switchedAfter: Int?
        for step in 0..<30 {
            _ = t.observe(obs("x", "a", 7), at: now)
            let facts = t.observe(obs("x", "b", 1.5), at: now + 1)
            if facts == [.sighted(beacon: "x", room: "b", at: now + 1)] { switchedAfter = step; break }
            now += second / 2
        }
        let steps = try! #require(switchedAfter)
        // b is clearly nearer once a's median flips (after ~half of a's 8 samples) — then 3 samples of b.
        #expect(steps >= 2 + 2 && steps <= 10, "switched after \(steps) samples")
    }

    @Test func hysteresisInDecibels() {
        var s = settings
        s.hysteresis = .decibels(6)  // ratio 10^(6/27) = 1.67
        s.confirmations = 1
        let t = BeaconTracker(settings: s)
        #expect(!t.clearlyNearer(2, than: 3))
        #expect(t.clearlyNearer(2, than: 3.5))
        #expect(t.clearlyNearer(2, than: .infinity))
    }

    @Test func roomThatStopsHearingIsLeft() {
        var s = settings
        s.windowSeconds = 2
        var t = BeaconTracker(settings: s)
        _ = t.observe(obs("x", "a", 1), at: t0)
        var facts: [BeaconFact] = []
        for i in 1...10 { facts += t.observe(obs("x", "b", 4), at: t0 + 3 * second + Int64(i) * second / 2) }
        #expect(facts.first == .sighted(beacon: "x", room: "b", at: t0 + 3 * second + 2 * second / 2))
    }

    @Test func presentAtMostEveryPeriod() {
        var t = BeaconTracker(settings: settings)
        var facts: [BeaconFact] = []
        for i in 0..<200 { facts += t.observe(obs("x", "a", 2), at: t0 + Int64(i) * second / 2) }  // 100 s
        let present = facts.filter { if case .present = $0 { true } else { false } }
        #expect(present.count == 3)  // 30, 60, 90 s
        #expect(present.first == .present(beacon: "x", room: "a", at: t0 + 30 * second))
    }

    @Test func unseenOnceAfterSilenceThenSightedAgain() {
        var t = BeaconTracker(settings: settings)
        _ = t.observe(obs("x", "a", 2), at: t0)
        _ = t.observe(obs("x", "a", 2), at: t0 + 10 * second)
        #expect(t.tick(now: t0 + 309 * second) == [])
        #expect(t.tick(now: t0 + 310 * second) == [.unseen(beacon: "x", lastRoom: "a", lastSeen: t0 + 10 * second)])
        #expect(t.tick(now: t0 + 400 * second) == [])
        #expect(t.trackedCount == 0)
        #expect(t.observe(obs("x", "b", 2), at: t0 + 500 * second) == [.sighted(beacon: "x", room: "b", at: t0 + 500 * second)])
    }

    @Test func boundedBeaconsAndRooms() {
        var s = settings
        s.maxBeacons = 100
        var t = BeaconTracker(settings: s)
        for i in 0..<1000 { _ = t.observe(obs("b\(i)", "a", 2), at: t0 + Int64(i)) }
        #expect(t.trackedCount <= 100)
        #expect(t.evicted >= 900)
        #expect(t.room(of: "b999") == "a")  // the most recent stays
        #expect(t.room(of: "b0") == nil)  // the least recently heard went
        for r in 0..<100 { _ = t.observe(obs("roamer", "r\(r)", 5 + Double(r)), at: t0 + 10_000 + Int64(r)) }
        var n = 0
        for r in 0..<100 where t.distance(of: "roamer", in: "r\(r)").isFinite { n += 1 }
        #expect(n <= BeaconTracker.maxRoomsPerBeacon)
    }
}

/// A `DriverMQTT` fed by the test.
final class FakeMQTT: DriverMQTT {
    let messages: AsyncStream<DriverMQTTMessage>
    let feed: AsyncStream<DriverMQTTMessage>.Continuation
    init() { (messages, feed) = AsyncStream<DriverMQTTMessage>.makeStream() }
    func subscribe(_ filter: String) throws {}
    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws {}
    func send(_ topic: String, _ payload: String, retained: Bool = false) {
        feed.yield(DriverMQTTMessage(topic: topic, payload: Array(payload.utf8), retained: retained))
    }
}

@Suite struct BridgeClockTests {
    @Test func unseenByTheTimerWithAnInjectedClock() async throws {
        let now = Mutex<Int64>(t0)
        let bridge = BeaconBridge(
            settings: try BeaconSettings(json: #"{"unseen_seconds":60}"#),
            clock: { now.withLock { $0 } }, checkInterval: .milliseconds(20))
        let mqtt = FakeMQTT()
        let context = CollectingBridgeContext(mqtt: mqtt)
        let running = await Running(bridge, context: context)
        mqtt.send("espresense/devices/collar1/kitchen", #"{"id":"collar1","rssi":-65}"#)
        mqtt.send("espresense/devices/collar1/kitchen", "garbage")
        mqtt.send("espresense/devices/collar1/kitchen", #"{"id":"collar1","rssi":-65}"#, retained: true)
        #expect(await context.waitFor { $0 == .sighted(beacon: "collar1", room: "kitchen", at: t0) } != nil)
        now.withLock { $0 += 59 * second }
        try await Task.sleep(for: .milliseconds(100))
        #expect(!context.facts.contains { if case .unseen = $0 { true } else { false } })
        now.withLock { $0 += 1 * second }
        #expect(await context.waitFor { $0 == .unseen(beacon: "collar1", lastRoom: "kitchen", lastSeen: t0) } != nil)
        now.withLock { $0 += 10 * second }
        mqtt.send("espresense/devices/collar1/hall", #"{"id":"collar1","rssi":-65}"#)
        #expect(await context.waitFor { $0 == .sighted(beacon: "collar1", room: "hall", at: t0 + 70 * second) } != nil)
        await running.stop()
        let c = bridge.counters
        #expect(c.messages == 4 && c.observations == 2 && c.dropped == 2)
        #expect(c.droppedByReason == ["notJSON": 1, "retained": 1])
        #expect(c.sighted == 2 && c.unseen == 1 && c.tracked == 1)
        #expect(context.facts.count == 3)
    }
}
