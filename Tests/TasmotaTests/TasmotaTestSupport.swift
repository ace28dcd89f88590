import BrokerHarness
import DriverAPI
import DriverTestSupport
import Foundation
import MQTT
import Testing

@testable import Tasmota

/// A private broker, a Tasmota driver on a scoped `ClientDriverMQTT`, and a raw client that plays
/// the device (or anyone else on the broker).
final class Rig: Sendable {
    let broker: TestBroker
    let mqtt: ClientDriverMQTT
    let context: CollectingContext
    let driver: TasmotaDriver
    let raw: MQTTClient
    let running: Running

    private init(
        broker: TestBroker, mqtt: ClientDriverMQTT, context: CollectingContext, driver: TasmotaDriver, raw: MQTTClient,
        running: Running
    ) {
        self.broker = broker
        self.mqtt = mqtt
        self.context = context
        self.driver = driver
        self.raw = raw
        self.running = running
    }

    /// Starts a broker and a raw client; `beforeDriver` runs before the driver starts (e.g. a
    /// simulator, retained messages); then the driver is made from `settings` and started.
    static func make(
        settings: String, confirmationTimeout: Duration = .seconds(10),
        broker existing: TestBroker? = nil,
        beforeDriver: @Sendable (TestBroker, MQTTClient) async throws -> Void = { _, _ in }
    ) async throws -> Rig {
        let broker: TestBroker
        if let existing { broker = existing } else { broker = try await TestBroker.startAsync() }
        let raw = try MQTTClient(
            options: MQTTOptions(port: broker.port, clientId: "raw-\(UUID().uuidString.prefix(8))", cleanSession: true))
        try raw.start()
        try await raw.waitUntilConnected(timeout: .seconds(10))
        try await beforeDriver(broker, raw)
        let factory = TasmotaDriverFactory(confirmationTimeout: confirmationTimeout)
        let driver = try #require(
            try factory.make(configuration: DriverConfiguration(deviceId: "plug", driver: "tasmota", settingsJSON: settings))
                as? TasmotaDriver)
        let mqtt = try await ClientDriverMQTT(port: broker.port, scope: driver.capabilities.mqttScope)
        let context = CollectingContext(deviceId: "plug", mqtt: mqtt)
        let wanted = driver.topics.subscriptions.count
        let running = await Running(driver, context: context) { mqtt.subscriptions.count >= wanted }
        return Rig(broker: broker, mqtt: mqtt, context: context, driver: driver, raw: raw, running: running)
    }

    func publish(_ topic: String, _ text: String, retain: Bool = false) async throws {
        try await publish(topic, Array(text.utf8), retain: retain)
    }

    func publish(_ topic: String, _ payload: [UInt8], retain: Bool = false) async throws {
        try await raw.publishAndWait(topic, payload, qos: 1, retain: retain, timeout: .seconds(10))
    }

    /// Publishes the device's retained last will `Online` and waits until the driver reports it:
    /// its subscriptions are then in effect at the broker (a retained message comes only after the
    /// subscription), so what is published next reaches it.
    func online() async throws -> Bool {
        try await publish(driver.topics.lwtTopic, "Online", retain: true)
        return await eventually { self.availabilities.contains { $0.0 } }
    }

    var observations: [Observation] { context.observations }

    var readings: [(Quantity, Double)] {
        observations.compactMap { if case .reading(let q, let v, _) = $0 { return (q, v) } else { return nil } }
    }

    var switchStates: [Bool] {
        observations.compactMap { if case .switchState(let on, _) = $0 { return on } else { return nil } }
    }

    var availabilities: [(Bool, String)] {
        observations.compactMap { if case .availability(let a, let r) = $0 { return (a, r) } else { return nil } }
    }

    func shutdown() async {
        await running.stop()
        await mqtt.stop()
        await raw.stop()
        await broker.killAsync()
    }
}

/// Polls `condition` until it holds (true) or `timeout` passes (false).
func eventually(timeout: Duration = .seconds(15), _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

func near(_ a: Double, _ b: Double, _ tolerance: Double = 1e-6) -> Bool { abs(a - b) <= tolerance }
