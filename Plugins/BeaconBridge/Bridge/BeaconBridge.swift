import DriverAPI
import Foundation
import Synchronization

/// Makes `BeaconBridge`s: BLE beacon observations from ESPresense, OpenMQTTGateway and Theengs
/// Gateway on the hub's broker, turned into facts (sighted / present / unseen).
public struct BeaconBridgeFactory: BridgeFactory {
    /// The bridge's name: its settings key in the configuration and its label in metrics.
    public let name = "beacons"
    /// A factory.
    public init() {}

    /// A bridge from its settings JSON.
    /// - Throws: A `DriverError` naming the setting that is wrong.
    public func make(settingsJSON: String) throws -> any Bridge {
        try BeaconBridge(settings: BeaconSettings(json: settingsJSON))
    }
}

/// What the bridge has seen so far.
public struct BeaconBridgeCounters: Sendable, Equatable {
    /// Every message delivered to the bridge.
    public var messages = 0
    /// Messages that were valid observations.
    public var observations = 0
    /// Messages dropped (garbage, foreign topics, retained), also by reason.
    public var dropped = 0
    /// Dropped messages by reason (`BeaconDropReason` raw values).
    public var droppedByReason: [String: Int] = [:]
    /// `sighted` facts: a beacon's room decided or changed.
    public var sighted = 0
    /// `present` facts: a beacon still heard in its room.
    public var present = 0
    /// `unseen` facts: a beacon silent for `unseen_seconds`.
    public var unseen = 0
    /// Beacons dropped because `max_beacons` was reached.
    public var evicted = 0
    /// Beacons tracked now.
    public var tracked = 0
    /// Facts dropped because the context fell `BeaconBridge.factBuffer` facts behind (the oldest go first).
    public var factsDropped = 0

    /// Facts reported, of every kind.
    public var facts: Int { sighted + present + unseen }
}

/// The bridge: a thin MQTT loop around `BeaconParser` and `BeaconTracker`.
///
/// Three child tasks while it runs: the reader (parses each message — outside the lock — and feeds the
/// tracker), the checker (every `checkInterval`, reports beacons gone silent) and the emitter (calls
/// the context for each fact, in the order the tracker produced them, so a slow context never
/// holds up reading).
/// The bridge does not subscribe itself: the hub subscribes `mqttScope` for it.
public final class BeaconBridge: Bridge {
    /// The settings it was made with.
    public let settings: BeaconSettings
    /// The MQTT filters the hub subscribes for it: the ESPresense and gateway topics.
    public let mqttScope: [String]
    private let parser: BeaconParser
    private let clock: @Sendable () -> Int64
    private let checkInterval: Duration

    private struct Core {
        var tracker: BeaconTracker
        var counters = BeaconBridgeCounters()
        var sink: AsyncStream<BeaconFact>.Continuation?
    }
    private let core: Mutex<Core>

    /// µs since the epoch, from the system clock.
    public static let systemClock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1_000_000) }

    /// - clock: µs since the epoch (inject one in tests).
    /// - checkInterval: how often silence is checked.
    public init(
        settings: BeaconSettings, clock: @escaping @Sendable () -> Int64 = BeaconBridge.systemClock,
        checkInterval: Duration = .seconds(1)
    ) {
        self.settings = settings
        self.mqttScope = settings.mqttScope
        self.parser = settings.parser
        self.clock = clock
        self.checkInterval = checkInterval
        self.core = Mutex(Core(tracker: BeaconTracker(settings: settings)))
    }

    /// What the bridge has seen so far.
    public var counters: BeaconBridgeCounters { core.withLock { $0.counters } }

    /// Facts produced but not yet handed to the context, at most (`bridge_facts`): when the context
    /// falls this far behind, the oldest waiting fact is dropped and counted (`BeaconBridgeCounters.factsDropped`).
    public static let factBuffer = 4096

    /// Reads the bridge's messages, checks silence every `checkInterval` and hands the facts to the
    /// context in order, until cancelled; the facts already produced are delivered before it returns.
    public func run(context: any BridgeContext) async throws {
        let (facts, sink) = AsyncStream<BeaconFact>.makeStream(bufferingPolicy: .bufferingNewest(Self.factBuffer))
        let fresh = core.withLock { c -> Bool in
            guard c.sink == nil else { return false }
            c.sink = sink
            return true
        }
        guard fresh else { throw DriverError("the beacon bridge already ran") }
        let messages = context.mqtt.messages
        let interval = checkInterval
        await withDiscardingTaskGroup { group in
            // The emitter is not cancelled: it ends when the sink finishes, after the reader and
            // the checker, so every fact produced is delivered.
            group.addTask {
                for await fact in facts {
                    switch fact {
                    case .sighted(let b, let r, let t): await context.sighted(beacon: b, room: r, at: t)
                    case .present(let b, let r, let t): await context.present(beacon: b, room: r, at: t)
                    case .unseen(let b, let r, let t): await context.unseen(beacon: b, lastRoom: r, lastSeen: t)
                    }
                }
            }
            await withDiscardingTaskGroup { readers in
                readers.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        guard !Task.isCancelled else { return }
                        self.checkNow()
                    }
                }
                for await message in messages {
                    if Task.isCancelled { break }
                    self.handle(message)
                }
                readers.cancelAll()
            }
            core.withLock { c in c.sink?.finish() }
        }
    }

    /// Processes one message (the reader does this for every message); returns the facts it produced
    /// (also sent to the context when started).
    @discardableResult
    public func handle(_ message: DriverMQTTMessage) -> [BeaconFact] {
        let parsed: Result<BeaconObservation, BeaconDropReason>
        if message.retained {
            parsed = .failure(.retained)
        } else {
            parsed = parser.parse(topic: message.topic, payload: message.payload)
        }
        let now = clock()
        return core.withLock { c -> [BeaconFact] in
            c.counters.messages += 1
            switch parsed {
            case .failure(let reason):
                c.counters.dropped += 1
                c.counters.droppedByReason[reason.rawValue, default: 0] += 1
                return []
            case .success(let observation):
                c.counters.observations += 1
                let facts = c.tracker.observe(observation, at: now)
                Self.record(facts, in: &c)
                return facts
            }
        }
    }

    /// Reports beacons silent for `unseen_seconds` (the checker does this every `checkInterval`).
    @discardableResult
    public func checkNow() -> [BeaconFact] {
        let now = clock()
        return core.withLock { c -> [BeaconFact] in
            let facts = c.tracker.tick(now: now)
            Self.record(facts, in: &c)
            return facts
        }
    }

    private static func record(_ facts: [BeaconFact], in c: inout Core) {
        for fact in facts {
            switch fact {
            case .sighted: c.counters.sighted += 1
            case .present: c.counters.present += 1
            case .unseen: c.counters.unseen += 1
            }
            if case .dropped = c.sink?.yield(fact) { c.counters.factsDropped += 1 }
        }
        c.counters.evicted = c.tracker.evicted
        c.counters.tracked = c.tracker.trackedCount
    }
}
