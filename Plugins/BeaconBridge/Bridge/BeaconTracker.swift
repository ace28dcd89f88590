import Foundation

/// What the bridge reports (mirrors the `BridgeContext` calls).
public enum BeaconFact: Sendable, Equatable {
    /// A beacon's room was decided, or changed; `at` in µs since the epoch.
    case sighted(beacon: String, room: String, at: Int64)
    /// A beacon is still heard in its room (at most once per `presentEvery`).
    case present(beacon: String, room: String, at: Int64)
    /// A beacon has been silent for `unseenAfter`; `lastSeen` in µs since the epoch.
    case unseen(beacon: String, lastRoom: String, lastSeen: Int64)
}

/// The pure state machine from observations to facts. No clock, no I/O: every call gets the time
/// (µs since the epoch).
///
/// Room decision, evaluated on every observation of a beacon:
/// - only rooms heard within the window count; each has its smoothed distance (`DistanceWindow`);
/// - the first decision is the nearest such room, at once -> `sighted`;
/// - afterwards the decided room R changes to a challenger C (the nearest other room) only when C is
///   *clearly* nearer — d(C) + `hysteresis_m` < d(R) (or d(R) / d(C) > 10^(`hysteresis_db`/10n)) — on
///   `confirmations` consecutive fresh samples *from C* with C staying the clear challenger; any
///   evaluation where it is not clearly nearer resets the count. A room that stopped hearing the
///   beacon (nothing within the window) has d = ∞, so the beacon follows a real move after
///   `confirmations` samples of the new room -> `sighted`;
/// - `present` (decided room) at most once per `presentEvery` per beacon while it is heard; a
///   `sighted` counts as a presence report;
/// - `tick`: a beacon silent for `unseen` -> `unseen` once, and it is forgotten: the next
///   observation is a first decision again (`sighted`).
/// Memory: at most `maxBeacons` beacons (the least recently heard are dropped, in batches of 5 %,
/// without a fact) and `maxRoomsPerBeacon` rooms per beacon, each at most `DistanceWindow.capacity` samples.
public struct BeaconTracker: Sendable {
    /// Rooms tracked per beacon at most.
    public static let maxRoomsPerBeacon = 32

    struct State: Sendable {
        var rooms: [String: DistanceWindow] = [:]
        var room: String?
        var challenger: String?
        var confirmations = 0
        var lastHeard: Int64 = 0
        var lastPresent: Int64 = 0
    }

    /// The smoothing window, µs.
    public let window: Int64
    /// The silence after which `unseen` is reported, µs.
    public let unseenAfter: Int64
    /// The least time between two `present` facts of one beacon, µs.
    public let presentEvery: Int64
    /// Beacons tracked at most.
    public let maxBeacons: Int
    /// How much nearer a challenger room must be.
    public let hysteresis: BeaconSettings.Hysteresis
    /// Consecutive fresh samples a challenger needs to win.
    public let confirmationsNeeded: Int
    /// The path-loss exponent, for hysteresis in dB.
    public let pathLoss: Double

    private var beacons: [String: State] = [:]
    /// Beacons dropped because `maxBeacons` was reached, since start.
    public private(set) var evicted = 0

    /// A tracker with the settings' window, silence, hysteresis and limits.
    public init(settings: BeaconSettings) {
        window = Int64(settings.windowSeconds * 1_000_000)
        unseenAfter = Int64(settings.unseenSeconds * 1_000_000)
        presentEvery = Int64(settings.presentEverySeconds * 1_000_000)
        maxBeacons = settings.maxBeacons
        hysteresis = settings.hysteresis
        confirmationsNeeded = settings.confirmations
        pathLoss = settings.pathLoss
    }

    /// Beacons tracked now.
    public var trackedCount: Int { beacons.count }
    /// The decided room of a tracked beacon.
    public func room(of beacon: String) -> String? { beacons[beacon]?.room }
    /// The smoothed distance of a beacon from a room (∞ when unknown).
    public func distance(of beacon: String, in room: String) -> Double { beacons[beacon]?.rooms[room]?.estimate ?? .infinity }

    /// Whether a challenger at `challenger` metres clearly beats the current room at `current` metres.
    public func clearlyNearer(_ challenger: Double, than current: Double) -> Bool {
        guard challenger.isFinite else { return false }
        guard current.isFinite else { return true }
        switch hysteresis {
        case .metres(let m): return challenger + m < current
        case .decibels(let db): return current > challenger * pow(10, db / (10 * pathLoss))
        }
    }

    /// Takes one observation at `now` (µs) and returns the facts it causes (none, `sighted` or `present`).
    public mutating func observe(_ o: BeaconObservation, at now: Int64) -> [BeaconFact] {
        if beacons[o.beacon] == nil && beacons.count >= maxBeacons { evictLeastRecentlyHeard() }
        var state = beacons[o.beacon] ?? State()
        defer { beacons[o.beacon] = state }

        state.rooms[o.room, default: DistanceWindow()].add(o.distance, at: now, window: window)
        if state.rooms.count > Self.maxRoomsPerBeacon,
            let stalest = state.rooms.filter({ $0.key != state.room }).min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key
        {
            state.rooms[stalest] = nil
        }
        state.lastHeard = max(state.lastHeard, now)

        // Forget rooms whose window is empty (keeps the dictionary small when a beacon roams).
        var nearest: (room: String, d: Double)?
        var current = Double.infinity
        var stale: [String] = []
        for (room, w) in state.rooms {
            guard w.isFresh(at: now, window: window) else {
                if room != state.room { stale.append(room) }
                continue
            }
            if room == state.room { current = w.estimate; continue }
            if nearest == nil || w.estimate < nearest!.d || (w.estimate == nearest!.d && room < nearest!.room) {
                nearest = (room, w.estimate)
            }
        }
        for room in stale { state.rooms[room] = nil }

        guard let decided = state.room else {
            let first = nearest?.room ?? o.room
            state.room = first
            state.lastPresent = now
            return [.sighted(beacon: o.beacon, room: first, at: now)]
        }
        if let c = nearest, clearlyNearer(c.d, than: current) {
            if state.challenger != c.room { state.challenger = c.room; state.confirmations = 0 }
            if o.room == c.room { state.confirmations += 1 }
            if state.confirmations >= confirmationsNeeded {
                if !(state.rooms[decided]?.isFresh(at: now, window: window) ?? false) { state.rooms[decided] = nil }
                state.room = c.room
                state.challenger = nil
                state.confirmations = 0
                state.lastPresent = now
                return [.sighted(beacon: o.beacon, room: c.room, at: now)]
            }
        } else {
            state.challenger = nil
            state.confirmations = 0
        }
        if now - state.lastPresent >= presentEvery {
            state.lastPresent = now
            return [.present(beacon: o.beacon, room: decided, at: now)]
        }
        return []
    }

    /// Reports (and forgets) the beacons silent for `unseenAfter`.
    public mutating func tick(now: Int64) -> [BeaconFact] {
        var facts: [BeaconFact] = []
        for (beacon, state) in beacons where now - state.lastHeard >= unseenAfter {
            if let room = state.room { facts.append(.unseen(beacon: beacon, lastRoom: room, lastSeen: state.lastHeard)) }
            beacons[beacon] = nil
        }
        return facts.sorted { a, b in
            if case .unseen(let x, _, let tx) = a, case .unseen(let y, _, let ty) = b { return (tx, x) < (ty, y) }
            return false
        }
    }

    private mutating func evictLeastRecentlyHeard() {
        let batch = max(1, min(beacons.count, maxBeacons / 20))
        let oldest = beacons.map { ($0.key, $0.value.lastHeard) }.sorted { $0.1 < $1.1 }.prefix(batch)
        for (beacon, _) in oldest { beacons[beacon] = nil }
        evicted += oldest.count
    }
}
