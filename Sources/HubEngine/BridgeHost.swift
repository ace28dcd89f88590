import DriverAPI
import Foundation
import HubDomain
import HubLog
import Logging
import ServiceLifecycle

/// Runs the bridges (BLE beacon observations fed by ESPresense, OpenMQTTGateway, Theengs) and
/// turns their facts into the log: a beacon bound to an admitted animal that changes rooms becomes
/// `AnimalSighted`, one that falls silent `AnimalUnseen` (actor `bridge:<name>`). Live presence
/// ("still in the kitchen at 18:03") is kept in memory for the animal's state, not logged. Beacons
/// bound to no admitted animal are counted and listed (`request/beacons/unknown`), never logged.
///
/// A collar heard before its animal is admitted (the clinic's reception) is placed at admission:
/// the admission's event (``handle(_:at:)``) finds it among the beacons heard now and logs the room
/// it is heard in as `AnimalSighted`. A `present` fact whose room is not the animal's logged room
/// (a sighting missed) is logged as a sighting too.
///
/// As a service it runs each bridge as a child task of `run()` and cancels them at shutdown. A
/// bridge that cannot run is reported and left out: a bridge must not stop the hub.
public actor BridgeHost: Service {
    let hub: Hub
    let commands: CommandService
    let relay: (any DriverMessaging)?
    let logger: Logger
    /// The bridges to start, with their settings (JSON).
    let configured: [(factory: any BridgeFactory, settingsJSON: String)]
    /// Animal id -> where and when its beacon was last heard (live, not logged).
    public private(set) var presence: [String: (room: String, at: Int64)] = [:]
    /// Beacons no admitted animal wears: last room, last heard, facts seen. Bounded.
    public private(set) var unknown: [String: UnknownBeacon] = [:]
    static let maxUnknown = 1000
    /// Animal ids whose live presence changed (the surface re-publishes their state).
    public nonisolated let presenceChanges: AsyncStream<String>
    nonisolated let presenceSink: AsyncStream<String>.Continuation

    /// A beacon heard that no admitted animal wears.
    public struct UnknownBeacon: Sendable, Equatable {
        /// The room it was last heard in.
        public var room: String
        /// When it was last heard, µs since the Unix epoch.
        public var lastSeen: Int64
        /// How many facts (sighted, present) were reported for it.
        public var reports: Int
        /// Heard now: no `unseen` since it was last heard.
        public var heard: Bool = true
        /// The bridge that heard it last.
        public var bridge: String = ""
    }

    /// A host for `bridges`, reporting through `commands`; `relay` gives the bridges their MQTT handles (nil: no broker).
    public init(
        commands: CommandService, relay: (any DriverMessaging)?, bridges: [(factory: any BridgeFactory, settingsJSON: String)] = [],
        logger: Logger
    ) {
        self.hub = commands.hub
        self.commands = commands
        self.relay = relay
        self.configured = bridges
        self.logger = logger
        (presenceChanges, presenceSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    /// Runs every configured bridge as a child task until graceful shutdown (or cancellation),
    /// then cancels them and returns once they have ended.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for (factory, settings) in configured {
                group.addTask {
                    if let problem = await self.run(factory, settingsJSON: settings) { self.logger.error("\(problem)") }
                }
            }
            try? await gracefulShutdown()  // shut down or cancelled: stop the bridges either way
            group.cancelAll()
        }
    }

    /// Runs one bridge until cancelled; returns a problem to report instead of throwing (a bridge
    /// must not stop the hub).
    /// - Parameters:
    ///   - factory: Makes the bridge.
    ///   - settingsJSON: Its settings.
    /// - Returns: Why the bridge could not run, or nil once it ran and was cancelled.
    public nonisolated func run(_ factory: any BridgeFactory, settingsJSON: String) async -> String? {
        let bridge: any Bridge
        do { bridge = try factory.make(settingsJSON: settingsJSON) } catch { return "bridge \(factory.name): \(error)" }
        guard let mqtt = relay?.handle(scope: bridge.mqttScope, onMessage: hub.metrics.bridgeObservation(bridge: factory.name)) else {
            return "bridge \(factory.name): no MQTT connection"
        }
        defer { relay?.release(mqtt) }
        do {
            for filter in bridge.mqttScope { try mqtt.subscribe(filter) }
            try await bridge.run(context: HostedBridgeContext(name: factory.name, mqtt: mqtt, host: self))
        } catch is CancellationError {
        } catch {
            return "bridge \(factory.name): \(error)"
        }
        return nil
    }

    func animal(wearing beacon: String) async -> String? {
        await hub.animal(wearing: BeaconId.key(beacon))
    }

    func sighted(_ bridge: String, beacon: String, room: String, at: Int64) async {
        hub.metrics.bridgeFact(bridge: bridge, kind: "sighted")
        guard let animal = await animal(wearing: beacon) else {
            noteUnknown(beacon, room: room, at: at, bridge: bridge)
            return
        }
        unknown[BeaconId.key(beacon)] = nil
        presence[animal] = (room, at)
        await commands.execute(
            .sightAnimal(id: animal, room: room, beacon: beacon, at: at), actor: "bridge:\(bridge)",
            durability: .observation)
        presenceSink.yield(animal)
    }

    func present(_ bridge: String, beacon: String, room: String, at: Int64) async {
        hub.metrics.bridgeFact(bridge: bridge, kind: "present")
        guard let animal = await animal(wearing: beacon) else {
            noteUnknown(beacon, room: room, at: at, bridge: bridge)
            return
        }
        unknown[BeaconId.key(beacon)] = nil
        presence[animal] = (room, at)
        // Heard again after an "unseen", or in a room the log does not have for it (never placed,
        // or a sighting missed): that is a fact again.
        if let record = await hub.animal(animal), record.unseenSince != nil || record.lastRoom != room {
            await commands.execute(
                .sightAnimal(id: animal, room: room, beacon: beacon, at: at), actor: "bridge:\(bridge)",
                durability: .observation)
        }
        presenceSink.yield(animal)
    }

    func unseen(_ bridge: String, beacon: String, lastRoom: String, lastSeen: Int64) async {
        hub.metrics.bridgeFact(bridge: bridge, kind: "unseen")
        guard let animal = await animal(wearing: beacon) else {
            unknown[BeaconId.key(beacon)]?.heard = false
            return
        }
        await commands.execute(
            .markAnimalUnseen(id: animal, lastRoom: lastRoom, lastSeen: lastSeen), actor: "bridge:\(bridge)",
            durability: .observation)
        presenceSink.yield(animal)
    }

    /// Reacts to one committed event: an animal admitted with a collar heard now is placed in the
    /// room it is heard in (`AnimalSighted` at the later of when it was last heard and `time`, the
    /// admission's record time), without waiting for the collar to change rooms.
    public func handle(_ event: HubEvent, at time: Int64) async {
        guard case .animalAdmitted(let admission) = event else { return }
        let key = BeaconId.key(admission.beacon)
        guard let heard = unknown[key], heard.heard, await hub.animal(wearing: key) == admission.animal else { return }
        unknown[key] = nil
        presence[admission.animal] = (heard.room, heard.lastSeen)
        await commands.execute(
            .sightAnimal(id: admission.animal, room: heard.room, beacon: key, at: max(heard.lastSeen, time)),
            actor: "bridge:\(heard.bridge)", durability: .observation)
        presenceSink.yield(admission.animal)
    }

    func noteUnknown(_ beacon: String, room: String, at: Int64, bridge: String) {
        let key = BeaconId.key(beacon)
        if unknown[key] == nil, unknown.count >= Self.maxUnknown,
            let oldest = unknown.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key
        {
            unknown[oldest] = nil
        }
        unknown[key, default: UnknownBeacon(room: room, lastSeen: at, reports: 0)].reports += 1
        unknown[key]?.room = room
        unknown[key]?.lastSeen = at
        unknown[key]?.heard = true
        unknown[key]?.bridge = bridge
    }

    /// For `request/beacons/unknown`.
    public func unknownBeacons() -> JSONValue {
        .array(
            unknown.sorted { $0.value.lastSeen > $1.value.lastSeen }.map { beacon, u in
                .object([
                    ("beacon", .string(beacon)), ("room", .string(u.room)), ("last_seen", .string(ISO8601.format(micros: u.lastSeen))),
                    ("reports", .number(Double(u.reports)))
                ])
            })
    }
}

struct HostedBridgeContext: BridgeContext {
    let name: String
    let mqtt: any DriverMQTT
    let host: BridgeHost

    func sighted(beacon: String, room: String, at: Int64) async { await host.sighted(name, beacon: beacon, room: room, at: at) }
    func present(beacon: String, room: String, at: Int64) async { await host.present(name, beacon: beacon, room: room, at: at) }
    func unseen(beacon: String, lastRoom: String, lastSeen: Int64) async {
        await host.unseen(name, beacon: beacon, lastRoom: lastRoom, lastSeen: lastSeen)
    }
}
