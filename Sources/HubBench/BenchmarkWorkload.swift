import HubDomain
import HubLog

/// Produces realistic events for the log benchmark: device and animal streams, the hub's common
/// event types, payloads of 40–150 bytes, and one unique command id per append.
///
/// Everything is deterministic in the event index: no clock and no global random state, so two
/// backends are given byte-identical content.
public struct BenchmarkWorkload: Sendable {
    /// The kinds of event the workload writes, in the hub's usual mix.
    public enum Kind: Sendable, CaseIterable {
        /// A reading (most events).
        case readingRecorded
        /// A switch confirmation.
        case switchToggled
        /// An activation change (schema 2).
        case activationChanged
        /// An availability report.
        case availabilityChanged

        /// The event type it stands for (its name is the stored type name).
        public var type: EventType {
            switch self {
            case .readingRecorded: return .readingRecorded
            case .switchToggled: return .switchToggled
            case .activationChanged: return .activationChanged
            case .availabilityChanged: return .availabilityChanged
            }
        }
    }

    /// Turns (kind, event index) into the stored type name, schema version and payload bytes —
    /// hook the domain's real encoder in here.
    public typealias Encoder =
        @Sendable (_ kind: Kind, _ stream: String, _ index: Int) -> (type: String, schemaVersion: UInt16, payload: [UInt8])

    /// How many device streams the events are spread over (more than 0).
    public var deviceCount: Int
    /// How many animal streams the events are spread over (more than 0).
    public var animalCount: Int
    /// First timestamp (µs since the epoch) and the step between consecutive event indices.
    public var baseTimestamp: Int64
    /// µs between the timestamps of consecutive event indices.
    public var timestampStep: Int64
    /// The actor recorded on every append.
    public var actor: String
    /// Makes each event's type, schema version and payload (`defaultEncoder` unless given).
    public var encoder: Encoder

    /// A workload of 500 devices and 60 animals from 2026-01-01, 1 ms apart, by actor "bench".
    public init(
        deviceCount: Int = 500, animalCount: Int = 60,
        baseTimestamp: Int64 = 1_767_225_600_000_000,  // 2026-01-01T00:00:00Z
        timestampStep: Int64 = 1_000,
        actor: String = "bench",
        encoder: @escaping Encoder = BenchmarkWorkload.defaultEncoder
    ) {
        precondition(deviceCount > 0 && animalCount > 0)
        self.deviceCount = deviceCount
        self.animalCount = animalCount
        self.baseTimestamp = baseTimestamp
        self.timestampStep = timestampStep
        self.actor = actor
        self.encoder = encoder
    }

    /// Pseudo-random but deterministic bytes of the typical size for each kind:
    /// ReadingRecorded 60–110, SwitchToggled 40–64, ActivationChanged 90–150, AvailabilityChanged 40–80.
    public static let defaultEncoder: Encoder = { kind, _, index in
        var rng = SplitMix64(seed: UInt64(truncatingIfNeeded: index) &* 0x9E37_79B9 &+ UInt64(kind.hashSeed))
        let range: ClosedRange<Int>
        switch kind {
        case .readingRecorded: range = 60...110
        case .switchToggled: range = 40...64
        case .activationChanged: range = 90...150
        case .availabilityChanged: range = 40...80
        }
        let size = range.lowerBound + Int(rng.next() % UInt64(range.count))
        var payload = [UInt8](repeating: 0, count: size)
        var i = 0
        while i < size {
            var word = rng.next()
            for _ in 0..<8 where i < size {
                payload[i] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                i += 1
            }
        }
        return (kind.type.rawValue, 1, payload)
    }

    /// The stream for the `n`-th append: mostly device streams, one in eight on an animal.
    public func stream(forAppend n: Int) -> String {
        if n % 8 == 7 { return StreamKey.animal("a-\((n / 8) % animalCount)").stream }
        return StreamKey.device("plug-\(n % deviceCount)").stream
    }

    /// The kind of the event with `index` on `stream`: devices mostly report readings, sometimes
    /// toggle or go (un)available; animals change activation.
    public func kind(stream: String, index: Int) -> Kind {
        if case .animal? = StreamKey(stream: stream) { return .readingRecorded }  // vitals
        switch index % 20 {
        case 0, 10: return .switchToggled
        case 5: return .availabilityChanged
        case 15: return .activationChanged
        default: return .readingRecorded
        }
    }

    /// The event at `index` on `stream`, deterministic in both.
    public func event(stream: String, index: Int) -> ProposedEvent {
        let (type, schemaVersion, payload) = encoder(kind(stream: stream, index: index), stream, index)
        return ProposedEvent(
            type: type, schemaVersion: schemaVersion,
            timestamp: baseTimestamp + Int64(index) * timestampStep, payload: payload)
    }

    /// One append: `count` events with indices `firstIndex...`, on the stream of append number
    /// `appendNumber`, with a fresh command id (UUID-shaped, derived from the append number).
    public func request(appendNumber: Int, firstIndex: Int, count: Int, expected: ExpectedVersion = .any) -> AppendRequest {
        let stream = stream(forAppend: appendNumber)
        var events: [ProposedEvent] = []
        events.reserveCapacity(count)
        for i in firstIndex..<(firstIndex + count) { events.append(event(stream: stream, index: i)) }
        return AppendRequest(
            stream: stream, expected: expected,
            causation: Causation(commandId: Self.commandId(appendNumber), actor: actor),
            events: events)
    }

    /// A UUID-shaped (36 character) command id that is unique per append number.
    public static func commandId(_ n: Int) -> String {
        var rng = SplitMix64(seed: UInt64(truncatingIfNeeded: n))
        let high = rng.next()
        let low = UInt64(truncatingIfNeeded: n)  // low bits keep it unique
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (position, nibbleIndex) in (0..<32).enumerated() {
            if position == 8 || position == 12 || position == 16 || position == 20 { out.append(UInt8(ascii: "-")) }
            let word = nibbleIndex < 16 ? high : low
            let shift = UInt64(60 - 4 * (nibbleIndex % 16))
            out.append(hex[Int((word >> shift) & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension BenchmarkWorkload.Kind {
    fileprivate var hashSeed: UInt64 {
        switch self {
        case .readingRecorded: 1
        case .switchToggled: 2
        case .activationChanged: 3
        case .availabilityChanged: 4
        }
    }
}

/// Small, fast, deterministic PRNG (public domain SplitMix64).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
