import BrokerHarness
import MQTT
import Testing

/// The inbound buffer (`MQTTOptions.inboundBuffer`) is a lossless bound: when it is full the
/// network thread waits for the consumer, so the broker holds the rest back. Before, a message that
/// found it full was dropped after libmosquitto had acknowledged it (a QoS 1 command lost).
@Suite("MQTT client's inbound buffer against a real mosquitto: full means wait, not drop")
struct InboundBackPressureTests {
    /// A client with a small inbound buffer, subscribed at QoS 1, that nobody reads yet.
    func startReader(_ broker: TestBroker, id: String, buffer: Int, filter: String) async throws -> MQTTClient {
        var options = MQTTOptions(host: broker.host, port: broker.port, clientId: id)
        options.inboundBuffer = buffer
        let reader = try MQTTClient(options: options)
        try reader.subscribe(filter, qos: 1)
        try reader.start()
        try await reader.waitUntilConnected(timeout: .seconds(5))
        return reader
    }

    /// Publishes `count` QoS 1 messages numbered from `first` and waits for the broker's PUBACKs.
    func flood(_ publisher: MQTTClient, _ topic: String, from first: Int = 0, count: Int) async throws {
        let tickets = try (first..<(first + count)).map { try publisher.publishTracked(topic, bytes("\($0)"), qos: 1) }
        for ticket in tickets { try await ticket.acknowledged(timeout: .seconds(10)) }
    }

    /// Waits until `condition` holds (checked every 10 ms), at most `timeout`.
    func waitUntil(_ what: String, timeout: Duration = .seconds(10), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now >= deadline { throw TestTimeout(description: "timed out after \(timeout) waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test("500 QoS 1 messages into a buffer of 8 nobody reads yet: the network thread waits; then all 500 arrive, in order, none dropped")
    func fullBufferLosesNothing() async throws {
        let broker = try await TestBroker.startAsync()
        let reader = try await startReader(broker, id: "slow-reader", buffer: 8, filter: "flood/#")
        let publisher = try await makeClient(broker, id: "flooder")
        try await flood(publisher.client, "flood/n", count: 500)
        try await waitUntil("the buffer to fill") { reader.traffic.received >= 9 }
        // Eight in the buffer and the ninth in the network thread's hand: the rest wait at the broker.
        #expect(reader.traffic.received <= 9)
        let messages = Collector(reader.messages)  // only now does anyone read
        let all = try await messages.wait(timeout: .seconds(20), "all 500 messages") { $0.count >= 500 }
        #expect(all.map(\.text) == (0..<500).map { "\($0)" })
        #expect(reader.traffic.dropped == 0)
        #expect(reader.traffic.received == 500)
        await publisher.client.stop()
        await reader.stop()
    }
}
