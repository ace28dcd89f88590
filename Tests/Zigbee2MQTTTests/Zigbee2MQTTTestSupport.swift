import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import Synchronization
import Testing
import Zigbee2MQTTSimulator

@testable import Zigbee2MQTT

/// A broker, a Zigbee2MQTT driver on its own scoped connection, and what the driver reported.
struct Zigbee2MQTTRig {
    let driver: Zigbee2MQTTDriver
    let mqtt: ClientDriverMQTT
    let context: CollectingContext
    let running: Running

    static func start(broker: TestBroker, settings: String) async throws -> Zigbee2MQTTRig {
        let made = try Zigbee2MQTTDriverFactory().make(
            configuration: DriverConfiguration(deviceId: "plug", driver: "zigbee2mqtt", settingsJSON: settings))
        let driver = try #require(made as? Zigbee2MQTTDriver)
        // Scoped as the hub scopes it: a subscribe or publish outside the declared scope throws.
        let mqtt = try await ClientDriverMQTT(port: broker.port, scope: driver.capabilities.mqttScope)
        let context = CollectingContext(deviceId: "plug", mqtt: mqtt)
        let running = await Running(driver, context: context) { mqtt.subscriptions.count >= 3 }
        // The subscriptions are acknowledged asynchronously: give the broker a moment.
        try await Task.sleep(for: .milliseconds(100))
        return Zigbee2MQTTRig(driver: driver, mqtt: mqtt, context: context, running: running)
    }

    func stop() async {
        await running.stop()
        await mqtt.stop()
    }

    var observations: [Observation] { context.observations }

    var switchStates: [Bool] {
        observations.compactMap { if case .switchState(let on, _) = $0 { return on } else { return nil } }
    }

    func readings(_ quantity: Quantity) -> [Double] {
        observations.compactMap {
            if case .reading(let q, let v, _) = $0, q == quantity { return v } else { return nil }
        }
    }

    var allReadings: [Double] {
        observations.compactMap { if case .reading(_, let v, _) = $0 { return v } else { return nil } }
    }

    var availability: [Bool] {
        observations.compactMap { if case .availability(let a, _) = $0 { return a } else { return nil } }
    }

    var availabilityReasons: [String] {
        observations.compactMap { if case .availability(_, let r) = $0 { return r } else { return nil } }
    }

    /// Waits until `condition` holds for the rig (polling).
    @discardableResult
    func wait(timeout: Duration = .seconds(10), _ condition: (Zigbee2MQTTRig) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(self) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition(self)
    }
}

/// A plain client for feeding raw payloads and watching topics.
final class RawClient: Sendable {
    let client: MQTTClient
    private final class Received: Sendable {
        let messages = Mutex<[MQTTMessage]>([])
    }
    private let seen = Received()
    private let pump: Task<Void, Never>

    init(port: Int) async throws {
        client = try MQTTClient(options: MQTTOptions(port: port, clientId: "raw-\(UUID().uuidString.prefix(8))", cleanSession: true))
        let client = self.client
        let seen = self.seen
        pump = Task {
            for await m in client.messages { seen.messages.withLock { $0.append(m) } }
        }
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(10))
    }

    func send(_ topic: String, _ text: String, retain: Bool = false) async throws {
        try await client.publishAndWait(topic, Array(text.utf8), qos: 1, retain: retain, timeout: .seconds(10))
    }

    func send(_ topic: String, bytes: [UInt8]) async throws {
        try await client.publishAndWait(topic, bytes, qos: 1, retain: false, timeout: .seconds(10))
    }

    /// Subscribes and waits a moment for the broker to take the subscription.
    func watch(_ filter: String) async throws {
        try client.subscribe(filter, qos: 1)
        try await Task.sleep(for: .milliseconds(100))
    }

    /// The messages received so far on `topic`.
    func received(_ topic: String) -> [MQTTMessage] { seen.messages.withLock { $0.filter { $0.topic == topic } } }

    /// Waits until `topic` has received `count` messages; returns them.
    func waitFor(_ topic: String, count: Int = 1, timeout: Duration = .seconds(10)) async -> [MQTTMessage] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, received(topic).count < count { try? await Task.sleep(for: .milliseconds(10)) }
        return received(topic)
    }

    func stop() async {
        pump.cancel()
        await client.stop()
    }
}

func withBroker(_ body: (TestBroker) async throws -> Void) async throws {
    let broker = try await TestBroker.startAsync()
    do {
        try await body(broker)
    } catch {
        await broker.killAsync()
        throw error
    }
    await broker.killAsync()
}

/// Makes a driver (or fails with the factory's error).
func makeDriver(_ settings: String, id: String = "d") throws -> any Driver {
    try Zigbee2MQTTDriverFactory().make(configuration: DriverConfiguration(deviceId: id, driver: "zigbee2mqtt", settingsJSON: settings))
}

/// The factory's error message for these settings, nil when they are accepted.
func settingsError(_ settings: String, id: String = "d") -> String? {
    do {
        _ = try makeDriver(settings, id: id)
        return nil
    } catch {
        return "\(error)"
    }
}
