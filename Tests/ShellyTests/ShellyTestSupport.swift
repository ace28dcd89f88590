import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import ShellySimulator
import Testing

@testable import Shelly

/// A broker, a Shelly driver on its own scoped connection, and what the driver reported.
struct ShellyRig {
    let broker: TestBroker
    let driver: ShellyDriver
    let mqtt: ClientDriverMQTT
    let context: CollectingContext
    let running: Running
    var port: Int { broker.port }

    static func start(broker: TestBroker, settings: String) async throws -> ShellyRig {
        let made = try ShellyDriverFactory().make(
            configuration: DriverConfiguration(deviceId: "plug", driver: "shelly", settingsJSON: settings))
        let driver = try #require(made as? ShellyDriver)
        // Scoped as the hub scopes it: a subscribe or publish outside the declared scope throws.
        let mqtt = try await ClientDriverMQTT(port: broker.port, scope: driver.capabilities.mqttScope)
        let context = CollectingContext(deviceId: "plug", mqtt: mqtt)
        let filters = driver.config.generation == .gen2 ? 2 : 1
        let running = await Running(driver, context: context) { mqtt.subscriptions.count >= filters }
        return ShellyRig(broker: broker, driver: driver, mqtt: mqtt, context: context, running: running)
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

    /// When each reading of `quantity` was measured, µs since the epoch.
    func stamps(_ quantity: Quantity) -> [Int64] {
        observations.compactMap {
            if case .reading(let q, _, let at) = $0, q == quantity { return at } else { return nil }
        }
    }

    var availability: [Bool] {
        observations.compactMap { if case .availability(let a, _) = $0 { return a } else { return nil } }
    }

    var failures: [String] {
        observations.compactMap { if case .commandFailed(let r) = $0 { return r } else { return nil } }
    }

    /// Waits until `condition` holds for the rig (polling).
    @discardableResult
    func wait(timeout: Duration = .seconds(10), _ condition: (ShellyRig) -> Bool) async -> Bool {
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
    init(port: Int) async throws {
        client = try MQTTClient(options: MQTTOptions(port: port, clientId: "raw-\(UUID().uuidString.prefix(8))", cleanSession: true))
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(10))
    }

    func send(_ topic: String, _ text: String, retain: Bool = false) async throws {
        try await client.publishAndWait(topic, Array(text.utf8), qos: 1, retain: retain, timeout: .seconds(10))
    }

    func send(_ topic: String, bytes: [UInt8]) async throws {
        try await client.publishAndWait(topic, bytes, qos: 1, retain: false, timeout: .seconds(10))
    }

    func stop() async { await client.stop() }
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

func simulator(
    _ broker: TestBroker, gen: Int, id: String? = nil, load: Double = 60, period: Double = 0.2,
    model: ShellySimulator.Options.Model = .plus1pm, statusNotifications: Bool = true
) -> ShellySimulator {
    ShellySimulator(
        options: .init(
            port: broker.port, gen: gen, id: id, loadWatts: load, statusPeriod: period, model: model,
            statusNotifications: statusNotifications))
}
