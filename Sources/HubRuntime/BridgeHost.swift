import DriverAPI
import Foundation
import HubDomain
import Logging
import ServiceLifecycle

/// Runs the bridges (BLE beacon observations fed by ESPresense, OpenMQTTGateway, Theengs) and
/// turns their facts into the log: a beacon bound to an admitted animal that changes rooms becomes
/// `AnimalSighted`, one that falls silent `AnimalUnseen` (actor `bridge:<name>`). Live presence
/// ("still in the kitchen at 18:03") is kept in memory for the animal's state, not logged. Beacons
/// bound to no admitted animal are counted and listed (`request/beacons/unknown`), never logged.
///
/// As a service it starts its bridges and stops them at shutdown. A bridge that cannot start is
/// reported and left out: a bridge must not stop the hub.
public actor BridgeHost: Service {
    let hub: Hub
    let commands: CommandService
    let relay: MQTTRelay?
    let logger: Logger
    /// The bridges to start, with their settings (JSON).
    let configured: [(factory: any BridgeFactory, settingsJSON: String)]
    var bridges: [(name: String, bridge: any Bridge, mqtt: any DriverMQTT)] = []
    /// Animal id -> where and when its beacon was last heard (live, not logged).
    public private(set) var presence: [String: (room: String, at: Int64)] = [:]
    /// Beacons no admitted animal wears: last room, last heard, facts seen. Bounded.
    public private(set) var unknown: [String: UnknownBeacon] = [:]
    static let maxUnknown = 1000
    /// Animal ids whose live presence changed (the surface re-publishes their state).
    public nonisolated let presenceChanges: AsyncStream<String>
    nonisolated let presenceSink: AsyncStream<String>.Continuation

    public struct UnknownBeacon: Sendable, Equatable {
        public var room: String
        public var lastSeen: Int64
        public var reports: Int
    }

    public init(commands: CommandService, relay: MQTTRelay?, bridges: [(factory: any BridgeFactory, settingsJSON: String)] = [],
                logger: Logger) {
        self.hub = commands.hub
        self.commands = commands
        self.relay = relay
        self.configured = bridges
        self.logger = logger
        (presenceChanges, presenceSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    public func run() async throws {
        for (factory, settings) in configured {
            if let problem = await start(factory, settingsJSON: settings) { logger.error("\(problem)") }
        }
        try? await gracefulShutdown() // shut down or cancelled: stop the bridges either way
        await stopAll()
    }

    /// Starts one bridge; returns a problem to report instead of throwing (a bridge must not stop the hub).
    public func start(_ factory: any BridgeFactory, settingsJSON: String) async -> String? {
        let bridge: any Bridge
        do { bridge = try factory.make(settingsJSON: settingsJSON) } catch { return "bridge \(factory.name): \(error)" }
        guard let mqtt = relay?.handle(scope: bridge.mqttScope, onMessage: hub.metrics.bridgeObservation(bridge: factory.name)) else { return "bridge \(factory.name): no MQTT connection" }
        do {
            for filter in bridge.mqttScope { try mqtt.subscribe(filter) }
            try await bridge.start(context: HostedBridgeContext(name: factory.name, mqtt: mqtt, host: self))
        } catch {
            relay?.release(mqtt)
            return "bridge \(factory.name): \(error)"
        }
        bridges.append((factory.name, bridge, mqtt))
        return nil
    }

    func stopAll() async {
        for b in bridges {
            await b.bridge.stop()
            relay?.release(b.mqtt)
        }
        bridges.removeAll()
    }

    func animal(wearing beacon: String) async -> String? {
        await hub.animal(wearing: BeaconId.key(beacon))
    }

    func sighted(_ bridge: String, beacon: String, room: String, at: Int64) async {
        hub.metrics.bridgeFact(bridge: bridge, kind: "sighted")
        guard let animal = await animal(wearing: beacon) else {
            noteUnknown(beacon, room: room, at: at)
            return
        }
        presence[animal] = (room, at)
        await commands.execute(.sightAnimal(id: animal, room: room, beacon: beacon, at: at), actor: "bridge:\(bridge)")
        presenceSink.yield(animal)
    }

    func present(_ bridge: String, beacon: String, room: String, at: Int64) async {
        hub.metrics.bridgeFact(bridge: bridge, kind: "present")
        guard let animal = await animal(wearing: beacon) else {
            noteUnknown(beacon, room: room, at: at)
            return
        }
        presence[animal] = (room, at)
        // Heard again after an "unseen": that is a fact again.
        if await hub.animal(animal)?.unseenSince != nil {
            await commands.execute(.sightAnimal(id: animal, room: room, beacon: beacon, at: at), actor: "bridge:\(bridge)")
        }
        presenceSink.yield(animal)
    }

    func unseen(_ bridge: String, beacon: String, lastRoom: String, lastSeen: Int64) async {
        hub.metrics.bridgeFact(bridge: bridge, kind: "unseen")
        guard let animal = await animal(wearing: beacon) else { return }
        await commands.execute(.markAnimalUnseen(id: animal, lastRoom: lastRoom, lastSeen: lastSeen), actor: "bridge:\(bridge)")
        presenceSink.yield(animal)
    }

    func noteUnknown(_ beacon: String, room: String, at: Int64) {
        let key = beacon.lowercased()
        if unknown[key] == nil, unknown.count >= Self.maxUnknown,
           let oldest = unknown.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
            unknown[oldest] = nil
        }
        unknown[key, default: UnknownBeacon(room: room, lastSeen: at, reports: 0)].reports += 1
        unknown[key]?.room = room
        unknown[key]?.lastSeen = at
    }

    /// For `request/beacons/unknown`.
    public func unknownBeacons() -> JSONValue {
        .array(unknown.sorted { $0.value.lastSeen > $1.value.lastSeen }.map { beacon, u in
            .object([("beacon", .string(beacon)), ("room", .string(u.room)), ("last_seen", .string(ISO8601.format(micros: u.lastSeen))),
                     ("reports", .number(Double(u.reports)))])
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
