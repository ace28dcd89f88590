import BrokerHarness
import MQTT
import Synchronization
import Testing

@Suite("MQTT client against a real mosquitto")
struct MQTTClientTests {
    @Test(
        "connect, subscribe, publish QoS 0 and 1 round trip (binary payload)",
        arguments: [MQTTOptions.ProtocolVersion.v5, .v311])
    func roundTrip(version: MQTTOptions.ProtocolVersion) async throws {
        let broker = try await TestBroker.startAsync()
        let h = try await makeClient(
            broker, id: "rt-\(version)", configure: { $0.protocolVersion = version },
            subscriptions: [("rt/#", 1)])
        #expect(h.client.isConnected)
        try await ensureSubscribed(h, probeTopic: "rt/probe")
        let binary: [UInt8] = [0xff, 0x00, 0xfe, 0xc3, 0x28]  // not UTF-8
        try h.client.publish("rt/zero", bytes("hello"), qos: 0)
        try h.client.publish("rt/one", binary, qos: 1)
        let zero = try await h.waitForMessage(topic: "rt/zero")
        let one = try await h.waitForMessage(topic: "rt/one")
        #expect(zero.text == "hello")
        #expect(zero.qos == 0)
        #expect(zero.retain == false)
        #expect(one.payload == binary)
        #expect(one.qos == 1)
        #expect(one.retain == false)
        #expect(one.responseTopic == nil && one.correlationData == nil)
        let events = try await h.events.wait("the connect event") { !$0.isEmpty }
        #expect(events.first == .connected(sessionPresent: false))
        await h.client.stop()
    }

    /// Connected means subscribed: a message another client publishes as soon as waitUntilConnected
    /// returns reaches the subscriptions made before start(), even when the broker receives the
    /// SUBSCRIBE well after it answered CONNECT (held 600 ms here by a proxy). Before, the hub could
    /// say "connected" while its command topics were not yet subscribed, and the first command sent
    /// right then was dropped by the broker (CI's HTTPAPITests failure).
    @Test("waitUntilConnected returns only once the subscriptions made before start() are acknowledged")
    func connectedMeansSubscribed() async throws {
        let broker = try await TestBroker.startAsync()
        let proxy = try TCPProxy(upstreamPort: broker.port, holdAfterFirstChunk: .milliseconds(600))
        defer { proxy.close() }
        let slow = try await makeClient(
            broker, id: "slow-sub", configure: { $0.port = proxy.port },
            subscriptions: [("early/#", 1)])
        let other = try await makeClient(broker, id: "early-publisher")
        try await other.client.publishAndWait("early/first", bytes("right after connect"), qos: 1, timeout: .seconds(5))
        #expect(try await slow.waitForMessage(topic: "early/first").text == "right after connect")
        await other.client.stop()
        await slow.client.stop()
    }

    @Test("a large payload (1 MiB) and an empty payload survive the round trip")
    func largeAndEmptyPayloads() async throws {
        let broker = try await TestBroker.startAsync()
        let h = try await makeClient(broker, id: "big", subscriptions: [("big/#", 1)])
        try await ensureSubscribed(h, probeTopic: "big/probe")
        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        try await h.client.publishAndWait("big/one", big, qos: 1, timeout: .seconds(5))
        try await h.client.publishAndWait("big/empty", [], qos: 1, timeout: .seconds(5))
        #expect(try await h.waitForMessage(topic: "big/one").payload == big)
        #expect(try await h.waitForMessage(topic: "big/empty").payload == [])
        await h.client.stop()
    }

    @Test("retained message reaches a later subscriber with retain = true; live traffic has retain = false")
    func retained() async throws {
        let broker = try await TestBroker.startAsync()
        let publisher = try await makeClient(broker, id: "ret-pub")
        try await publisher.client.publishAndWait("state/lamp", bytes("ON"), qos: 1, retain: true, timeout: .seconds(5))

        let late = try await makeClient(broker, id: "ret-sub", subscriptions: [("state/#", 1)])
        let stored = try await late.waitForMessage(topic: "state/lamp")
        #expect(stored.text == "ON")
        #expect(stored.retain == true)

        try await publisher.client.publishAndWait("state/lamp", bytes("OFF"), qos: 1, retain: true, timeout: .seconds(5))
        let live = try await late.messages.wait("live OFF") { $0.contains { $0.text == "OFF" } }.first { $0.text == "OFF" }!
        #expect(live.retain == false)
        await publisher.client.stop()
        await late.client.stop()
    }

    @Test("publishAndWait returns after the broker's acknowledgement for QoS 0, 1 and 2")
    func publishAndWait() async throws {
        let broker = try await TestBroker.startAsync()
        let h = try await makeClient(broker, id: "paw", subscriptions: [("paw/#", 2)])
        try await ensureSubscribed(h, probeTopic: "paw/probe")
        for qos in 0...2 {
            let clock = ContinuousClock()
            let elapsed = try await clock.measure {
                try await h.client.publishAndWait("paw/\(qos)", bytes("q\(qos)"), qos: qos, timeout: .seconds(5))
            }
            #expect(elapsed < .seconds(2))
        }
        // Many concurrent waits: every one completes (no ack lost between publish and wait).
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<50 {
                group.addTask { try await h.client.publishAndWait("paw/many", bytes("\(i)"), qos: 1, timeout: .seconds(5)) }
            }
            try await group.waitForAll()
        }
        try await h.messages.wait("50 messages") { $0.filter { $0.topic == "paw/many" }.count == 50 }
        // QoS 0 while not connected is an error, not a silent drop.
        let offline = try MQTTClient(options: MQTTOptions(host: broker.host, port: broker.port, clientId: "paw-offline"))
        #expect(throws: MQTTError.self) { try offline.publish("paw/x", [1], qos: 0) }
        await h.client.stop()
    }

    @Test("acknowledgements are tracked by message id: thousands of waits among plain publishes, each done only when acknowledged")
    func manyWaitsAmongPlainPublishes() async throws {
        let broker = try await TestBroker.startAsync()
        let h = try await makeClient(broker, id: "acks", subscriptions: [("acks/waited", 1)])
        try await ensureSubscribed(h, probeTopic: "acks/waited")
        // Plain publishes are acknowledged too; none of those acknowledgements may be kept for, or
        // complete, a later wait (message ids wrap at 65535: more than that go through here).
        let plain = Task {
            for i in 0..<70_000 { _ = try? h.client.publish("acks/plain", bytes("\(i)"), qos: 1) }
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                group.addTask {
                    for i in 0..<250 {
                        try await h.client.publishAndWait("acks/waited", bytes("\(worker)-\(i)"), qos: 1, timeout: .seconds(30))
                    }
                }
            }
            try await group.waitForAll()
        }
        await plain.value
        let deadline = ContinuousClock.now + .seconds(30)
        func waited() -> [String] { h.messages.items.filter { $0.topic == "acks/waited" }.map(\.text).filter { $0.contains("-") } }
        while waited().count < 4000, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let waited = waited()
        #expect(waited.count == 4000 && Set(waited).count == 4000, "got \(waited.count) (\(Set(waited).count) distinct)")
        // A wait that outlives the client fails instead of hanging.
        let pending = Task { try await h.client.publishAndWait("acks/waited", bytes("last"), qos: 1) }
        await h.client.stop()
        _ = await pending.result  // acknowledged just before the stop, or failed by it: either way it returns
        await #expect(throws: MQTTError.self) { try await h.client.publishAndWait("acks/waited", bytes("after"), qos: 1) }
    }

    @Test("whenAcknowledged is told once per message: success once the broker acknowledged it, the failure if the client stops first")
    func acknowledgementsTold() async throws {
        let broker = try await TestBroker.startAsync()
        let h = try await makeClient(broker, id: "told", subscriptions: [("told/#", 1)])
        try await ensureSubscribed(h, probeTopic: "told/probe")
        let told = Told()
        for i in 0..<500 {
            try h.client.publish("told/\(i % 7)", bytes("\(i)"), qos: 1) { told.add(i, $0) }
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while told.count < 500, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(100))  // nothing is told twice
        #expect(told.successes == Set(0..<500) && told.count == 500, "\(told.count) told, \(told.successes.count) distinct successes")
        try await h.messages.wait("500 messages") { $0.filter { $0.topic.hasPrefix("told/") && $0.topic != "told/probe" }.count == 500 }
        await h.client.stop()

        // Never connected: QoS 1 messages wait in the client's queue; stopping it tells their failure.
        let offline = try MQTTClient(options: MQTTOptions(host: broker.host, port: broker.port, clientId: "told-offline"))
        let failed = Told()
        for i in 0..<3 { try offline.publish("told/queued", bytes("\(i)"), qos: 1) { failed.add(i, $0) } }
        #expect(failed.count == 0)
        await offline.stop()
        #expect(failed.count == 3 && failed.successes.isEmpty)
        #expect(failed.failures.allSatisfy { ($0 as? MQTTError)?.kind == .stopped }, "\(failed.failures)")
    }

    /// libmosquitto numbers messages 1...65535 when they are published, also while they wait in its
    /// queue, so with more than that outstanding two messages carry the same id; it pairs each
    /// acknowledgement with the oldest message of that id. So must the client: the older message is
    /// told on its own acknowledgement, and the newer one only on the newer's, never on the older's
    /// (a `publishAndWait` returned, and the event feed counted an event acknowledged, while the
    /// message still waited in the queue; the bench's end-of-run flush returned with a third of the
    /// messages before it unsent).
    @Test("a message id reused before its acknowledgement: each message is told on its own acknowledgement, in order")
    func reusedMessageIdIsToldOnItsOwnAcknowledgement() async throws {
        let broker = try await TestBroker.startAsync()
        // Not started yet: every QoS 1 message waits in libmosquitto's queue with its id.
        let client = try MQTTClient(options: MQTTOptions(host: broker.host, port: broker.port, clientId: "reuse"))
        let told = Told()
        try client.publish("reuse/tracked", bytes("older"), qos: 1) { told.add(0, $0) }
        for i in 0..<65_533 { try client.publish("reuse/plain", bytes("\(i)"), qos: 1) }
        try client.publish("reuse/tracked", bytes("before newer"), qos: 1) { told.add(1, $0) }
        try client.publish("reuse/tracked", bytes("newer"), qos: 1) { told.add(2, $0) }  // the older one's id again
        try client.start()
        let deadline = ContinuousClock.now + .seconds(60)
        while told.count < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(told.count == 3 && told.failures.isEmpty, "\(told.failures)")
        #expect(told.order == [0, 1, 2], "told in the order \(told.order)")
        await client.stop()
    }

    /// Outcomes told to `whenAcknowledged`, from the network thread.
    final class Told: Sendable {
        private let state = Mutex<(count: Int, successes: Set<Int>, failures: [any Error], order: [Int])>((0, [], [], []))
        func add(_ i: Int, _ result: Result<Void, any Error>) {
            state.withLock { s in
                s.count += 1
                s.order.append(i)
                switch result {
                case .success: s.successes.insert(i)
                case .failure(let error): s.failures.append(error)
                }
            }
        }
        var count: Int { state.withLock { $0.count } }
        var successes: Set<Int> { state.withLock { $0.successes } }
        var failures: [any Error] { state.withLock { $0.failures } }
        var order: [Int] { state.withLock { $0.order } }
    }

    @Test("the will is published when the client vanishes without DISCONNECT")
    func lastWill() async throws {
        let broker = try await TestBroker.startAsync()
        let observer = try await makeClient(broker, id: "will-observer", subscriptions: [("hub/status", 1)])
        try await ensureSubscribed(observer, probeTopic: "hub/status")
        let dying = try await makeClient(
            broker, id: "will-dying",
            configure: {
                $0.will = .init(topic: "hub/status", payload: bytes("offline"), qos: 1, retain: true)
            })
        try await dying.client.publishAndWait("hub/status", bytes("online"), qos: 1, retain: true, timeout: .seconds(5))
        _ = try await observer.messages.wait("online") { $0.contains { $0.text == "online" } }
        dying.client.abort()
        let will = try await observer.messages.wait("will") { $0.contains { $0.text == "offline" } }.first { $0.text == "offline" }!
        #expect(will.topic == "hub/status")
        await observer.client.stop()
    }

    @Test("stop(finalMessage:) publishes the final message, disconnects cleanly (no will) and finishes the streams")
    func stopWithFinalMessage() async throws {
        let broker = try await TestBroker.startAsync()
        let observer = try await makeClient(broker, id: "final-observer", subscriptions: [("hub/status", 1)])
        try await ensureSubscribed(observer, probeTopic: "hub/status")
        let hub = try await makeClient(
            broker, id: "final-hub",
            configure: {
                $0.will = .init(topic: "hub/status", payload: bytes("lost"), qos: 1, retain: true)
            })
        await hub.client.stop(finalMessage: (topic: "hub/status", payload: bytes("offline"), retain: true))
        #expect(!hub.client.isConnected)
        _ = try await observer.messages.wait("offline") { $0.contains { $0.text == "offline" } }
        try await Task.sleep(for: .milliseconds(300))
        #expect(!observer.messages.items.contains { $0.text == "lost" }, "clean DISCONNECT must not fire the will")
        try await hub.events.waitForFinish()
        try await hub.messages.waitForFinish()
        #expect(hub.events.items.last == .disconnected(reason: "stopped by the client"))
        // Stopped clients refuse work instead of crashing.
        #expect(throws: MQTTError.self) { try hub.client.publish("x", [1], qos: 1) }
        await hub.client.stop()  // idempotent
        await observer.client.stop()
    }

    @Test("after a broker restart the client reconnects, re-subscribes and sends what it queued meanwhile")
    func brokerRestart() async throws {
        let broker = try await TestBroker.startAsync()
        let h = try await makeClient(
            broker, id: "restart", configure: { $0.keepAlive = 5 },
            subscriptions: [("r/#", 1)])
        try await ensureSubscribed(h, probeTopic: "r/probe")

        await broker.stopAsync()
        try await h.events.wait("disconnected") { $0.contains { if case .disconnected = $0 { true } else { false } } }
        #expect(!h.client.isConnected)
        // QoS 1 while disconnected: queued by libmosquitto, sent after the reconnect.
        let queued = Task { try await h.client.publishAndWait("r/queued", bytes("kept"), qos: 1, timeout: .seconds(10)) }
        #expect(throws: MQTTError.self) { try h.client.publish("r/dropped", [1], qos: 0) }

        try await broker.restartAsync()
        try await h.events.wait(timeout: .seconds(8), "reconnected") { events in
            events.filter { if case .connected = $0 { true } else { false } }.count == 2
        }
        try await queued.value
        #expect(try await h.waitForMessage(topic: "r/queued").text == "kept")

        let other = try await makeClient(broker, id: "restart-other")
        try await other.client.publishAndWait("r/after", bytes("after restart"), qos: 1, timeout: .seconds(5))
        #expect(try await h.waitForMessage(topic: "r/after").text == "after restart")
        await other.client.stop()
        await h.client.stop()
    }

    @Test("a client started while the broker is down connects once it comes up")
    func startWhileBrokerDown() async throws {
        let broker = try await TestBroker.startAsync()
        await broker.killAsync()
        let clock = ContinuousClock()
        var client: Harnessed?
        let startTime = try await clock.measure {
            client = try await makeClient(broker, id: "early", subscriptions: [("early/#", 1)], connect: false)
        }
        let h = try #require(client)
        #expect(startTime < .milliseconds(500), "start() must not block on a dead broker")
        await #expect(throws: MQTTError.self) { try await h.client.waitUntilConnected(timeout: .milliseconds(300)) }
        try await broker.restartAsync()
        try await h.client.waitUntilConnected(timeout: .seconds(8))
        try await ensureSubscribed(h, probeTopic: "early/probe")
        await h.client.stop()
    }

    @Test("unreachable broker: waitUntilConnected throws a clear error naming host:port")
    func unreachable() async throws {
        let broker = try await TestBroker.startAsync()
        let port = broker.port
        await broker.killAsync()
        let client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: port, clientId: "nobody"))
        try client.start()
        do {
            try await client.waitUntilConnected(timeout: .seconds(1))
            Issue.record("connected to a stopped broker?")
        } catch let error as MQTTError {
            #expect(error.kind == .unreachable || error.kind == .timeout)
            #expect(error.description.contains("127.0.0.1:\(port)"))
        }
        await client.stop()
    }

    @Test(
        "persistent session: QoS 1 messages sent while the client is away arrive after it reconnects",
        arguments: [MQTTOptions.ProtocolVersion.v5, .v311])
    func persistentSession(version: MQTTOptions.ProtocolVersion) async throws {
        let broker = try await TestBroker.startAsync()
        let id = "persistent-\(version)"
        let first = try await makeClient(
            broker, id: id, configure: { $0.protocolVersion = version },
            subscriptions: [("p/#", 1)])
        try await ensureSubscribed(first, probeTopic: "p/probe")
        await first.client.stop()

        let sender = try await makeClient(broker, id: "sender-\(version)")
        for i in 1...3 {
            try await sender.client.publishAndWait("p/\(i)", bytes("m\(i)"), qos: 1, timeout: .seconds(5))
        }
        await sender.client.stop()

        // Same client id, no subscribe call: the session kept the subscription and the messages.
        let again = try await makeClient(broker, id: id, configure: { $0.protocolVersion = version })
        // The recorder reads the event stream on its own task: wait for the event, not just the connection.
        let events = try await again.events.wait("the connect event") { !$0.isEmpty }
        #expect(events.first == .connected(sessionPresent: true))
        let got = try await again.messages.wait("3 queued messages") {
            $0.filter { $0.topic.hasPrefix("p/") && $0.topic != "p/probe" }.count == 3
        }
        #expect(got.filter { $0.topic != "p/probe" }.map(\.text) == ["m1", "m2", "m3"])
        await again.client.stop()
    }

    @Test("MQTT 5 response topic and correlation data round trip; absent with MQTT 3.1.1")
    func requestResponse() async throws {
        let broker = try await TestBroker.startAsync()
        let responder = try await makeClient(broker, id: "responder", subscriptions: [("req/#", 1)])
        let requester = try await makeClient(broker, id: "requester", subscriptions: [("resp/#", 1)])
        try await ensureSubscribed(responder, probeTopic: "req/probe")
        try await ensureSubscribed(requester, probeTopic: "resp/probe")

        let correlation: [UInt8] = [0, 1, 2, 0xff]
        try await requester.client.publishAndWait(
            "req/ping", bytes("ping"), qos: 1,
            responseTopic: "resp/ping", correlationData: correlation,
            timeout: .seconds(5))
        let request = try await responder.waitForMessage(topic: "req/ping")
        #expect(request.responseTopic == "resp/ping")
        #expect(request.correlationData == correlation)
        try await responder.client.publishAndWait(
            request.responseTopic!, bytes("pong"), qos: 1,
            correlationData: request.correlationData, timeout: .seconds(5))
        let response = try await requester.waitForMessage(topic: "resp/ping")
        #expect(response.text == "pong")
        #expect(response.correlationData == correlation)
        #expect(response.responseTopic == nil)

        // An MQTT 3.1.1 publisher simply has no properties.
        let old = try await makeClient(broker, id: "v311", configure: { $0.protocolVersion = .v311 })
        try await old.client.publishAndWait(
            "req/old", bytes("x"), qos: 1, responseTopic: "resp/old",
            correlationData: [9], timeout: .seconds(5))
        let plain = try await responder.waitForMessage(topic: "req/old")
        #expect(plain.responseTopic == nil && plain.correlationData == nil)
        await old.client.stop()
        await requester.client.stop()
        await responder.client.stop()
    }

    @Test(
        "secured broker: wrong password fails fast with a clear reason, right password works",
        arguments: [MQTTOptions.ProtocolVersion.v5, .v311])
    func credentials(version: MQTTOptions.ProtocolVersion) async throws {
        let broker = try await TestBroker.startAsync(secured: true, users: [("hub", "s3cret"), ("other", "pw")])
        let bad = try await makeClient(
            broker, id: "bad-\(version)",
            configure: {
                $0.protocolVersion = version
                $0.username = "hub"
                $0.password = "wrong"
            }, connect: false)
        let clock = ContinuousClock()
        var caught: MQTTError?
        let elapsed = await clock.measure {
            do { try await bad.client.waitUntilConnected(timeout: .seconds(5)) } catch let e as MQTTError { caught = e } catch {}
        }
        let error = try #require(caught)
        #expect(elapsed < .seconds(4), "must fail from the CONNACK, not by timing out")
        let text = error.description.lowercased()
        #expect(text.contains("not authorized") || text.contains("bad user name or password"), "\(error)")
        #expect(text.contains("127.0.0.1:\(broker.port)"))
        try await bad.events.waitForFinish()
        #expect(bad.events.items.contains { if case .failed = $0 { true } else { false } })
        // Waiting again throws the same failure at once (the client is dead, not spinning).
        await #expect(throws: MQTTError.self) { try await bad.client.waitUntilConnected(timeout: .seconds(5)) }
        await bad.client.stop()

        let good = try await makeClient(
            broker, id: "good-\(version)",
            configure: {
                $0.protocolVersion = version
                $0.username = "hub"
                $0.password = "s3cret"
            }, subscriptions: [("sec/#", 1)])
        try await ensureSubscribed(good, probeTopic: "sec/probe")
        await good.client.stop()
    }

    @Test("TLS towards a plain listener fails with a TLS error instead of hanging")
    func tlsFailure() async throws {
        let broker = try await TestBroker.startAsync()
        let h = try await makeClient(
            broker, id: "tls",
            configure: {
                $0.tls = .init(caPath: "/etc/ssl/certs")
            }, connect: false)
        do {
            // Fails from the handshake, long before this timeout.
            try await h.client.waitUntilConnected(timeout: .seconds(20))
            Issue.record("TLS to a plain listener connected?")
        } catch let error as MQTTError {
            #expect(error.kind == .tls, "\(error)")
            #expect(error.description.contains("TLS"))
        }
        await h.client.stop()
    }

    @Test("MQTT 5: a publish denied by the broker's ACL makes publishAndWait throw")
    func aclDeniedPublish() async throws {
        let acl = """
            user hub
            topic readwrite hub/#
            """
        let broker = try await TestBroker.startAsync(secured: true, users: [("hub", "pw")], acl: acl)
        let h = try await makeClient(
            broker, id: "acl",
            configure: {
                $0.username = "hub"
                $0.password = "pw"
            }, subscriptions: [("hub/#", 1)])
        try await ensureSubscribed(h, probeTopic: "hub/probe")
        try await h.client.publishAndWait("hub/ok", bytes("fine"), qos: 1, timeout: .seconds(5))
        do {
            try await h.client.publishAndWait("forbidden/x", bytes("no"), qos: 1, timeout: .seconds(5))
            Issue.record("ACL-denied publish was acknowledged as success")
        } catch let error as MQTTError {
            #expect(error.kind == .publishRejected, "\(error)")
        }
        // The client stays usable (it may have to reconnect first: the broker can drop the link).
        try await h.client.waitUntilConnected(timeout: .seconds(5))
        try await h.client.publishAndWait("hub/ok", bytes("still fine"), qos: 1, timeout: .seconds(5))
        await h.client.stop()
    }
}
