import DriverAPI
import Foundation
import HubEngine
import Logging
import MQTT
import Synchronization

/// Shares the hub's one broker connection with MQTT-native drivers and bridges: each gets a
/// `DriverMQTT` handle scoped to the filters it declared; messages outside the hub's own topics are
/// delivered to every handle that subscribed to a matching filter. Subscriptions are made on the
/// hub's client, so they are restored after every reconnect with the hub's own.
public final class MQTTRelay: DriverMessaging {
    struct State {
        var client: MQTTClient?
        var handles: [ObjectIdentifier: ScopedMQTT] = [:]
        /// The hub's own subtrees (base topic, discovery prefix): no driver reads or writes there.
        var reserved: [String] = []
    }
    let state = Mutex(State())
    let logger: Logger

    /// - Parameter logger: where subscriptions the broker connection refused are reported.
    public init(logger: Logger = Logger(label: "hub.mqtt.relay") { _ in SwiftLogNoOpLogHandler() }) {
        self.logger = logger
    }

    private func subscribe(_ client: MQTTClient, _ filter: String) {
        do {
            try client.subscribe(filter, qos: 1)
        } catch {
            logger.error(
                "mqtt: a driver's subscription failed; it will not hear its device", metadata: ["filter": "\(filter)", "error": "\(error)"])
        }
    }

    /// The hub's client, once the surface is connected; filters asked for earlier are subscribed now.
    public func attach(_ client: MQTTClient, reserved: [String] = []) {
        let handles = state.withLock { s -> [ScopedMQTT] in
            s.client = client
            s.reserved = reserved
            return Array(s.handles.values)
        }
        for handle in handles { for filter in handle.filters { subscribe(client, filter) } }
    }

    /// A handle limited to `scope` (MQTT filters); nil when the hub runs without MQTT.
    ///
    /// - Parameter onMessage: called for each message delivered to the handle (a bridge's count of observations).
    public func handle(scope: [String], onMessage: (@Sendable () -> Void)? = nil) -> (any DriverMQTT)? {
        guard !scope.isEmpty, state.withLock({ $0.client != nil }) else { return nil }
        let handle = ScopedMQTT(scope: scope, relay: self, onMessage: onMessage)
        state.withLock { $0.handles[ObjectIdentifier(handle)] = handle }
        return handle
    }

    /// Stops a handle: its stream ends and filters no one else uses are unsubscribed.
    public func release(_ handle: any DriverMQTT) {
        guard let scoped = handle as? ScopedMQTT else { return }
        scoped.finish()
        let (client, orphaned) = state.withLock { s -> (MQTTClient?, [String]) in
            s.handles[ObjectIdentifier(scoped)] = nil
            let inUse = Set(s.handles.values.flatMap(\.filters))
            return (s.client, scoped.filters.filter { !inUse.contains($0) })
        }
        for filter in orphaned {
            do { try client?.unsubscribe(filter) } catch {
                logger.warning("mqtt: could not unsubscribe", metadata: ["filter": "\(filter)", "error": "\(error)"])
            }
        }
    }

    /// Every filter a driver, bridge or the discovery listener is scoped to (whether subscribed yet or not):
    /// devices and bridges read there, so the hub answers no request there (`MQTTTopics.responseTopicProblem`).
    public var scopes: [String] {
        state.withLock { s in s.handles.values.flatMap(\.scope) }
    }

    /// Hands a message to every handle subscribed to a matching filter; false when none wanted it.
    @discardableResult
    public func deliver(_ message: MQTTMessage) -> Bool {
        guard !isReserved(message.topic) else { return false }
        let handles = state.withLock { Array($0.handles.values) }
        var delivered = false
        for handle in handles where handle.wants(message.topic) {
            handle.yield(DriverMQTTMessage(topic: message.topic, payload: message.payload, retained: message.retain))
            delivered = true
        }
        return delivered
    }

    /// Under the hub's own topics (or a filter that would reach them: `#`, `+/...` over the base).
    func isReserved(_ topicOrFilter: String) -> Bool {
        let reserved = state.withLock { $0.reserved }
        return reserved.contains { base in
            topicOrFilter == base || topicOrFilter.hasPrefix(base + "/") || topicOrFilter == "#"
                || mqttTopic(base + "/x", matches: topicOrFilter)
        }
    }

    func subscribe(_ filter: String) throws {
        guard !isReserved(filter) else { throw DriverError("MQTT filter \"\(filter)\" would reach the hub's own topics") }
        guard let client = state.withLock({ $0.client }) else { throw DriverError("the hub has no broker connection") }
        // Not retain-as-published (the hub's own command topics are): a device that publishes with
        // retain on (a Shelly with its MQTT retain option) is live on arrival, and only the stored
        // message the broker sends on subscribing arrives retained: its last known state.
        try client.subscribe(filter, qos: 1, retainAsPublished: false)
    }

    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws {
        guard !isReserved(topic) else { throw DriverError("MQTT topic \"\(topic)\" is one of the hub's own") }
        guard let client = state.withLock({ $0.client }) else { throw DriverError("the hub has no broker connection") }
        try client.publish(topic, payload, qos: 1, retain: retain)
    }
}

/// One driver's or bridge's view of the hub's connection.
final class ScopedMQTT: DriverMQTT {
    let scope: [String]
    let messages: AsyncStream<DriverMQTTMessage>
    private let continuation: AsyncStream<DriverMQTTMessage>.Continuation
    private let subscribed = Mutex<[String]>([])
    private weak let relay: MQTTRelay?
    private let onMessage: (@Sendable () -> Void)?

    init(scope: [String], relay: MQTTRelay, onMessage: (@Sendable () -> Void)? = nil) {
        self.scope = scope
        self.relay = relay
        self.onMessage = onMessage
        // Bounded: a device flooding its topics cannot grow the hub's memory without limit.
        (messages, continuation) = AsyncStream<DriverMQTTMessage>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
    }

    var filters: [String] { subscribed.withLock { $0 } }

    func wants(_ topic: String) -> Bool {
        subscribed.withLock { $0.contains { mqttTopic(topic, matches: $0) } }
    }

    /// Inside the scope: the filter is one of the scope's filters or narrower than one of them.
    func allowed(_ filterOrTopic: String) -> Bool {
        scope.contains { s in s == filterOrTopic || mqttTopic(filterOrTopic, matches: s) }
    }

    func subscribe(_ filter: String) throws {
        guard allowed(filter) else {
            throw DriverError("MQTT filter \"\(filter)\" is outside this driver's scope (\(scope.joined(separator: ", ")))")
        }
        guard let relay else { throw DriverError("the hub is stopping") }
        try relay.subscribe(filter)
        subscribed.withLock { if !$0.contains(filter) { $0.append(filter) } }
    }

    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) throws {
        guard !topic.contains("+"), !topic.contains("#"), allowed(topic) else {
            throw DriverError("MQTT topic \"\(topic)\" is outside this driver's scope (\(scope.joined(separator: ", ")))")
        }
        guard let relay else { throw DriverError("the hub is stopping") }
        try relay.publish(topic, payload, retain: retain)
    }

    func yield(_ message: DriverMQTTMessage) {
        onMessage?()
        continuation.yield(message)
    }
    func finish() { continuation.finish() }
}
