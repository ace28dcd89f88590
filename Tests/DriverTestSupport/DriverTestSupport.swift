import DriverAPI
import Foundation
import MQTT
import Synchronization

/// Test support for MQTT-native drivers and bridges: a `DriverMQTT` over a dedicated client on a
/// real broker (a `TestBroker`), and contexts that record what a driver or bridge reports.

/// `DriverMQTT` over its own `MQTTClient` (optionally scoped, as the hub scopes drivers).
public final class ClientDriverMQTT: DriverMQTT {
    public let client: MQTTClient
    public let messages: AsyncStream<DriverMQTTMessage>
    let scope: [String]
    let pump: Task<Void, Never>
    private let subscribed = Mutex<[String]>([])
    /// The filters subscribed so far, in order.
    public var subscriptions: [String] { subscribed.withLock { $0 } }

    public init(port: Int, clientId: String = "driver-\(UUID().uuidString.prefix(8))", scope: [String] = ["#"]) async throws {
        client = try MQTTClient(options: MQTTOptions(port: port, clientId: clientId, cleanSession: true))
        self.scope = scope
        let (stream, continuation) = AsyncStream<DriverMQTTMessage>.makeStream()
        messages = stream
        let client = self.client
        pump = Task {
            for await m in client.messages { continuation.yield(DriverMQTTMessage(topic: m.topic, payload: m.payload, retained: m.retain)) }
            continuation.finish()
        }
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(5))
    }

    public func subscribe(_ filter: String) throws {
        guard scope.contains(where: { mqttTopic(filter, matches: $0) || $0 == "#" }) else {
            throw DriverError("filter \(filter) is outside the scope")
        }
        try client.subscribe(filter, qos: 1)
        subscribed.withLock { $0.append(filter) }
    }

    public func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws {
        guard scope.contains(where: { mqttTopic(topic, matches: $0) }) else { throw DriverError("topic \(topic) is outside the scope") }
        try client.publish(topic, payload, qos: 1, retain: retain)
    }

    public func stop() async {
        pump.cancel()
        await client.stop(finalMessage: nil)
    }
}

/// Records every observation of a driver.
public final class CollectingContext: DriverContext {
    public let deviceId: String
    public let mqtt: (any DriverMQTT)?
    private let seen = Mutex<[Observation]>([])

    public init(deviceId: String = "dev", mqtt: (any DriverMQTT)? = nil) {
        self.deviceId = deviceId
        self.mqtt = mqtt
    }

    public func report(_ observation: Observation) async { seen.withLock { $0.append(observation) } }
    public var observations: [Observation] { seen.withLock { $0 } }

    /// Waits until an observation satisfies `condition`; returns it (nil on timeout).
    @discardableResult
    public func waitFor(timeout: Duration = .seconds(5), _ condition: (Observation) -> Bool) async -> Observation? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let hit = observations.first(where: condition) { return hit }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}

/// Records what a bridge reports.
public final class CollectingBridgeContext: BridgeContext {
    public enum Fact: Sendable, Equatable {
        case sighted(beacon: String, room: String, at: Int64)
        case present(beacon: String, room: String, at: Int64)
        case unseen(beacon: String, lastRoom: String, lastSeen: Int64)
    }
    public let mqtt: any DriverMQTT
    private let seen = Mutex<[Fact]>([])

    public init(mqtt: any DriverMQTT) { self.mqtt = mqtt }

    public func sighted(beacon: String, room: String, at: Int64) async {
        seen.withLock { $0.append(.sighted(beacon: beacon, room: room, at: at)) }
    }
    public func present(beacon: String, room: String, at: Int64) async {
        seen.withLock { $0.append(.present(beacon: beacon, room: room, at: at)) }
    }
    public func unseen(beacon: String, lastRoom: String, lastSeen: Int64) async {
        seen.withLock { $0.append(.unseen(beacon: beacon, lastRoom: lastRoom, lastSeen: lastSeen)) }
    }
    public var facts: [Fact] { seen.withLock { $0 } }

    @discardableResult
    public func waitFor(timeout: Duration = .seconds(5), _ condition: (Fact) -> Bool) async -> Fact? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let hit = facts.first(where: condition) { return hit }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return nil
    }
}

/// Runs a driver's or bridge's `run(context:)` in a task of its own, as the hub runs it in a child
/// task; `stop()` cancels it and waits for it to end.
public final class Running: Sendable {
    let task: Task<Void, any Error>

    /// Runs `driver`, then waits (up to 10 s) until `ready` holds: what `run` does first (its
    /// subscriptions, its first report) has happened.
    public init(_ driver: any Driver, context: any DriverContext, ready: @Sendable () -> Bool = { true }) async {
        task = Task { try await driver.run(context: context) }
        await Self.wait(ready)
    }

    /// Runs `bridge`, then waits (up to 10 s) until `ready` holds.
    public init(_ bridge: any Bridge, context: any BridgeContext, ready: @Sendable () -> Bool = { true }) async {
        task = Task { try await bridge.run(context: context) }
        await Self.wait(ready)
    }

    private static func wait(_ ready: () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(10)
        while !ready(), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(2)) }
    }

    /// Cancels the run and waits for it to end; returns the error it threw (nil when it ended as asked).
    @discardableResult
    public func stop() async -> (any Error)? {
        task.cancel()
        if case .failure(let error) = await task.result, !(error is CancellationError) { return error }
        return nil
    }

    /// Waits for the run to end by itself; returns the error it threw.
    public func failure() async -> (any Error)? {
        if case .failure(let error) = await task.result { return error }
        return nil
    }
}
