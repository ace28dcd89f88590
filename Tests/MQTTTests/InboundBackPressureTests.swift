import BrokerHarness
import Testing

@testable import MQTT

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

    enum Ending: String, CaseIterable, CustomTestStringConvertible {
        case stop, abort, release
        var testDescription: String { rawValue }
    }

    @Test(
        "a network thread waiting on a full buffer does not hold up stop(), abort() or releasing the client; what it had in hand is handed on",
        arguments: Ending.allCases)
    func endWhileWaiting(_ ending: Ending) async throws {
        let broker = try await TestBroker.startAsync()
        var reader: MQTTClient? = try await startReader(broker, id: "stuck-\(ending)", buffer: 2, filter: "stuck/#")
        let window = try #require(reader).core.inbound
        let messages = try #require(reader).messages
        let publisher = try await makeClient(broker, id: "stuck-publisher-\(ending)")
        try await flood(publisher.client, "stuck/n", count: 10)
        try await waitUntil("the network thread to wait for room") { window.isProducerWaiting }
        let started = ContinuousClock.now
        switch ending {
        case .stop: await reader?.stop()
        case .abort: reader?.abort()
        case .release: reader = nil
        }
        // stop() gives the loop 2 s to leave by itself before it cancels it; a waiting thread is woken at once.
        #expect(ContinuousClock.now - started < .seconds(1.5))
        #expect(!window.isProducerWaiting)
        let got = Collector(messages)
        try await got.waitForFinish()
        let texts = got.items.map(\.text)
        #expect(texts.count >= 3, "the two buffered and the one in hand")
        #expect(texts == (0..<texts.count).map { "\($0)" })
        if let reader { #expect(reader.traffic.dropped == 0) }
        await publisher.client.stop()
    }

    enum Leaving: String, CaseIterable, CustomTestStringConvertible {
        case cancelled, brokeOut
        var testDescription: String { rawValue }
    }

    @Test(
        "a consumer that stops reading (its task cancelled, or its loop left) does not leave the network thread waiting: what nobody takes is dropped and counted",
        arguments: Leaving.allCases)
    func consumerGone(_ leaving: Leaving) async throws {
        let broker = try await TestBroker.startAsync()
        let reader = try await startReader(broker, id: "gone-\(leaving)", buffer: 2, filter: "gone/#")
        let consumer = Task {
            var taken = 0
            for await _ in reader.messages {
                taken += 1
                if leaving == .brokeOut { break }
                while !Task.isCancelled { try? await Task.sleep(for: .seconds(60)) }
            }
            return taken
        }
        let publisher = try await makeClient(broker, id: "gone-publisher-\(leaving)")
        try await flood(publisher.client, "gone/n", count: 10)
        if leaving == .cancelled {
            try await waitUntil("the network thread to wait for room") { reader.core.inbound.isProducerWaiting }
            consumer.cancel()
        }
        try await waitUntil("all 10 messages to reach the client") { reader.traffic.received == 10 }
        let taken = await consumer.value
        #expect(!reader.core.inbound.isProducerWaiting)
        if leaving == .brokeOut {
            // One taken, two buffered for a later reader, the other seven dropped.
            #expect(taken == 1 && reader.traffic.dropped == 7)
            var later = reader.messages.makeAsyncIterator()
            #expect(await later.next()?.text == "1")
            #expect(await later.next()?.text == "2")
        } else {
            // The cancelled loop took what was buffered when the stream finished; nothing waited in vain.
            #expect(taken + Int(reader.traffic.dropped) == 10)
            // The stream is finished: what arrives now is dropped and counted, and the thread never waits.
            try await flood(publisher.client, "gone/n", from: 10, count: 10)
            try await waitUntil("10 more messages to reach the client") { reader.traffic.received == 20 }
            #expect(reader.traffic.dropped == UInt64(20 - taken))
            #expect(!reader.core.inbound.isProducerWaiting)
        }
        await publisher.client.stop()
        await reader.stop()
    }
}
