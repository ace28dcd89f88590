import BrokerHarness
import DriverAPI
import Foundation
import HubDomain
import HubLog
import Logging
import MQTT
import Synchronization
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// A test MQTT client that records everything it receives.
final class MessageLog: Sendable {
    let messages = Mutex<[MQTTMessage]>([])
    func append(_ message: MQTTMessage) { messages.withLock { $0.append(message) } }
    func withLock<T>(_ body: ([MQTTMessage]) -> T) -> T { messages.withLock { body($0) } }
}

final class Watcher: Sendable {
    let client: MQTTClient
    let received = MessageLog()
    let reader: Mutex<Task<Void, Never>?> = Mutex(nil)

    init(
        port: Int, id: String = "watcher-\(UUID().uuidString.prefix(6))", filters: [String] = ["#"],
        username: String? = nil, password: String? = nil
    ) async throws {
        client = try MQTTClient(options: MQTTOptions(port: port, clientId: id, username: username, password: password, cleanSession: true))
        for filter in filters { try client.subscribe(filter, qos: 1) }
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(5))
        let client = self.client, received = self.received
        let task = Task { for await message in client.messages { received.append(message) } }
        reader.withLock { $0 = task }
    }

    func messages(_ topic: String) -> [MQTTMessage] { received.withLock { $0.filter { $0.topic == topic } } }

    func text(_ message: MQTTMessage) -> String { String(decoding: message.payload, as: UTF8.self) }

    /// Waits for a message on `topic` (after `skip` earlier ones) that satisfies `condition`.
    @discardableResult
    func waitFor(
        _ topic: String, timeout: Duration = .seconds(8), skip: Int = 0,
        _ condition: @escaping (String) -> Bool = { _ in true }
    ) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let candidates = messages(topic).dropFirst(skip).map(text)
            if let hit = candidates.first(where: condition) { return hit }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw HubError.failed("no message on \(topic) within \(timeout); got \(messages(topic).map(text))")
    }

    func publish(_ topic: String, _ text: String, retain: Bool = false) throws {
        try client.publish(topic, Array(text.utf8), qos: 1, retain: retain)
    }

    func publish(_ topic: String, bytes: [UInt8]) throws {
        try client.publish(topic, bytes, qos: 1)
    }

    func stop() async {
        reader.withLock { $0?.cancel() }
        await client.stop(finalMessage: nil)
    }
}

/// A broker, a hub service connected to it, and a watcher.
struct SurfaceFixture {
    let broker: TestBroker
    let service: HubService
    let watcher: Watcher
    let dataDirectory: String

    static func start(
        broker: TestBroker? = nil, hubPort: Int? = nil, dataDirectory: String = temporaryDirectory(),
        devices: [HubConfig.Device] = [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp", config: "{}")],
        username: String? = nil, password: String? = nil,
        factories: [any DriverFactory] = [VirtualDriverFactory()],
        logOptions: SegmentStoreOptions = SegmentStoreOptions(),
        configure: (inout HubConfig) -> Void = { _ in },
        options: (inout HubServiceOptions) -> Void = { _ in }
    ) async throws -> SurfaceFixture {
        let broker = try broker ?? TestBroker.start()
        let watcher = try await Watcher(port: broker.port)
        let service = try await startService(
            port: hubPort ?? broker.port, dataDirectory: dataDirectory, devices: devices,
            username: username, password: password, factories: factories,
            logOptions: logOptions, configure: configure, options: options)
        return SurfaceFixture(broker: broker, service: service, watcher: watcher, dataDirectory: dataDirectory)
    }

    static func startService(
        port: Int, dataDirectory: String, devices: [HubConfig.Device] = [],
        username: String? = nil, password: String? = nil,
        factories: [any DriverFactory] = [VirtualDriverFactory()],
        logOptions: SegmentStoreOptions = SegmentStoreOptions(),
        configure: (inout HubConfig) -> Void = { _ in },
        options adjust: (inout HubServiceOptions) -> Void = { _ in },
        note: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> HubService {
        var config = HubConfig()
        config.mqtt.port = port
        config.mqtt.clientId = "hub-under-test"
        config.mqtt.username = username
        config.mqtt.password = password
        config.devices = devices
        config.confirmTimeoutSeconds = 2
        configure(&config)
        var options = HubServiceOptions(paths: HubPaths(dataDirectory: dataDirectory), config: config, factories: factories)
        options.logOptions = logOptions
        adjust(&options)
        return try await HubService.start(options, logger: Logger(label: "test") { _ in LineLogHandler(sink: note) })
    }

    func stop() async throws {
        try await service.stop()
        await watcher.stop()
        broker.stop()
    }
}

/// Waits until `condition` holds, checking every 10 ms; throws, naming `what`, after `timeout`.
func waitUntil(_ what: String, timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    if try await condition() { return }
    throw HubError.failed("timed out after \(timeout) waiting for \(what)")
}

extension SurfaceFixture {
    /// Returns once the event feed has carried to the watcher every event logged before the call:
    /// it logs a refusal of its own (a switch of a device that does not exist) and waits for that
    /// event, which the feed publishes after every event before it, in log order.
    func eventFeedCaughtUp() async throws {
        let marker = "caught-up-" + UUID().uuidString.prefix(8).lowercased()
        _ = try await service.hub.execute(.switchDevice(id: marker, target: .on), actor: "test", now: currentMicros())
        try await watcher.waitFor("hub/events/hub/CommandRejected") { $0.contains(marker) }
    }
}
