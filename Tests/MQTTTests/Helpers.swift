import BrokerHarness
import MQTT
import Synchronization
import Testing

struct TestTimeout: Error, CustomStringConvertible {
    let description: String
}

/// Drains an async sequence (an AsyncStream, a client's `messages`) into a buffer from one
/// long-lived task, so that tests can wait for conditions with timeouts without cancelling the
/// sequence's iterator (which would finish it).
final class Collector<Element: Sendable>: Sendable {
    private final class Box: Sendable {
        let items = Mutex<[Element]>([])
        let finished = Mutex(false)
    }
    private let box = Box()
    private let task: Task<Void, Never>

    init<Stream: AsyncSequence<Element, Never> & Sendable>(_ stream: Stream) {
        let box = self.box
        task = Task {
            for await item in stream { box.items.withLock { $0.append(item) } }
            box.finished.withLock { $0 = true }
        }
    }

    deinit { task.cancel() }

    var items: [Element] { box.items.withLock { $0 } }
    var isFinished: Bool { box.finished.withLock { $0 } }

    /// Polls until `condition` holds on everything collected so far.
    @discardableResult
    func wait(
        timeout: Duration = .seconds(5), _ what: String = "condition",
        until condition: ([Element]) -> Bool
    ) async throws -> [Element] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let snapshot = items
            if condition(snapshot) { return snapshot }
            if ContinuousClock.now >= deadline {
                throw TestTimeout(description: "timed out after \(timeout) waiting for \(what); got \(snapshot)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func waitForFinish(timeout: Duration = .seconds(5)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !isFinished {
            if ContinuousClock.now >= deadline { throw TestTimeout(description: "stream did not finish") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

extension MQTTMessage {
    var text: String { String(decoding: payload, as: UTF8.self) }
}

func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

/// A started client plus collectors for its streams.
struct Harnessed {
    let client: MQTTClient
    let messages: Collector<MQTTMessage>
    let events: Collector<MQTTConnectionEvent>

    func waitForMessage(topic: String, timeout: Duration = .seconds(5)) async throws -> MQTTMessage {
        let all = try await messages.wait(timeout: timeout, "a message on \(topic)") { $0.contains { $0.topic == topic } }
        return all.first { $0.topic == topic }!
    }

    func connectedCount() -> Int {
        events.items.filter { if case .connected = $0 { return true } else { return false } }.count
    }
}

func makeClient(
    _ broker: TestBroker, id: String, configure: (inout MQTTOptions) -> Void = { _ in },
    subscriptions: [(String, Int)] = [], connect: Bool = true
) async throws -> Harnessed {
    var options = MQTTOptions(host: broker.host, port: broker.port, clientId: id)
    configure(&options)
    let client = try MQTTClient(options: options)
    let harnessed = Harnessed(client: client, messages: Collector(client.messages), events: Collector(client.connectionEvents))
    for (filter, qos) in subscriptions { try client.subscribe(filter, qos: qos) }
    try client.start()
    if connect { try await client.waitUntilConnected(timeout: .seconds(5)) }
    return harnessed
}

/// Makes sure the client's subscription is active on the broker: publishes probes to `topic`
/// (which must match one of its filters) until one comes back.
func ensureSubscribed(_ h: Harnessed, probeTopic topic: String) async throws {
    let deadline = ContinuousClock.now + .seconds(5)
    while ContinuousClock.now < deadline {
        try h.client.publish(topic, bytes("probe"), qos: 0)
        if (try? await h.messages.wait(timeout: .milliseconds(300), "probe") { $0.contains { $0.topic == topic } }) != nil {
            return
        }
    }
    throw TestTimeout(description: "subscription for \(topic) never became active")
}
