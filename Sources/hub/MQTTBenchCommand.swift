import ArgumentParser
import BrokerHarness
import Foundation
import HubDomain
import HubRuntime
import MQTT
import VirtualDriver

/// `hub bench mqtt`: command latency through the hub against the bare broker round trip, and
/// ingest (messages per second turned into durable events), on a mosquitto it starts itself.
struct MQTTBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mqtt",
        abstract: "Command latency (switch/set -> confirmed retained state) vs the bare broker round trip, and ingest rate.")

    @Option(help: "Commands (and bare round trips) to time.")
    var commands = 10_000
    @Option(help: "Messages for the ingest run.")
    var ingest = 100_000
    @Option(help: "Concurrent publishers for the ingest run.")
    var publishers = 16
    @Option(help: "Where to put the hub's data (removed afterwards).")
    var dir = "./hub-bench-mqtt"

    func run() async throws {
        try await Console.guarded {
            let broker = try TestBroker.start()
            defer { broker.stop() }
            let root = (dir as NSString).standardizingPath
            try? FileManager.default.removeItem(atPath: root)
            defer { try? FileManager.default.removeItem(atPath: root) }
            Console.note("bench: mosquitto on 127.0.0.1:\(broker.port)")

            let bareIngest = try await bareIngestRate(port: broker.port)
            Console.note("bench: bare broker throughput \(Int(bareIngest)) messages/s")
            let bare = try await bareRoundTrips(port: broker.port)
            Console.note("bench: bare round trip p50 \(ms(bare.p50)) ms, p99 \(ms(bare.p99)) ms")

            var config = HubConfig()
            config.mqtt.port = broker.port
            config.devices = [HubConfig.Device(id: "bench", driver: "virtual", name: "Bench", config: "{}")]
                + (0..<100).map { HubConfig.Device(id: "meter-\($0)", driver: "virtual", name: "Meter \($0)", config: "{}") }
            let service = try await HubService.start(HubServiceOptions(paths: HubPaths(dataDirectory: root), config: config,
                                                                       factories: [VirtualDriverFactory()]), note: { _ in })
            let hubLatency = try await hubRoundTrips(port: broker.port)
            Console.note("bench: hub command p50 \(ms(hubLatency.p50)) ms, p99 \(ms(hubLatency.p99)) ms")
            let direct = try await directRate(service: service)
            Console.note("bench: direct Hub.execute from 32 tasks: \(Int(direct)) commands/s")
            let rate = try await ingestRate(port: broker.port, service: service)
            Console.note("bench: ingest \(Int(rate)) messages/s into durable events")
            try await service.stop()

            print("""
            | measure | p50 | p99 | mean |
            |---|---:|---:|---:|
            | bare broker round trip, QoS 1 publish -> subscriber (\(bare.count) messages) | \(ms(bare.p50)) ms | \(ms(bare.p99)) ms | \(ms(bare.mean)) ms |
            | hub: switch/set -> confirmed retained `switch` state (\(hubLatency.count) commands) | \(ms(hubLatency.p50)) ms | \(ms(hubLatency.p99)) ms | \(ms(hubLatency.mean)) ms |
            | hub minus bare | \(ms(hubLatency.p50 - bare.p50)) ms | \(ms(hubLatency.p99 - bare.p99)) ms | |
            | hub / bare | \(ratio(hubLatency.p50, bare.p50)) | \(ratio(hubLatency.p99, bare.p99)) | |

            | ingest (\(ingest) messages from \(publishers) publishers) | messages/s |
            |---|---:|
            | bare broker: QoS 1 publishers -> one QoS 1 subscriber | \(Int(bareIngest)) |
            | hub: `request/command` record_reading over 100 devices -> durable events (each answered, published as an event, folded) | \(Int(rate)) |
            | hub core alone: the same commands into `Hub.execute` from 32 tasks, no MQTT | \(Int(direct)) |
            | hub / bare broker | \(String(format: "%.2f", rate / bareIngest)) |
            """)
        }
    }

    struct Latencies {
        var samples: [Double]
        var count: Int { samples.count }
        var p50: Double { percentile(0.5) }
        var p99: Double { percentile(0.99) }
        var mean: Double { samples.reduce(0, +) / Double(max(1, samples.count)) }
        func percentile(_ p: Double) -> Double {
            let sorted = samples.sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
    }

    func ms(_ seconds: Double) -> String { String(format: "%.3f", seconds * 1000) }
    func ratio(_ a: Double, _ b: Double) -> String { b > 0 ? String(format: "%.2fx", a / b) : "-" }

    func client(_ port: Int, _ id: String, subscribe: [String] = []) async throws -> MQTTClient {
        let client = try MQTTClient(options: MQTTOptions(port: port, clientId: id, cleanSession: true))
        for filter in subscribe { try client.subscribe(filter, qos: 1) }
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(5))
        return client
    }

    func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }

    func bareRoundTrips(port: Int) async throws -> Latencies {
        let receiver = try await client(port, "bench-bare-sub", subscribe: ["bench/echo"])
        let sender = try await client(port, "bench-bare-pub")
        try await Task.sleep(for: .milliseconds(200))
        var messages = receiver.messages.makeAsyncIterator()
        var samples: [Double] = []
        for i in 0..<(commands + 100) {
            let payload = Array("\(i)".utf8)
            let start = ContinuousClock.now
            try sender.publish("bench/echo", payload, qos: 1)
            while let message = await messages.next(), message.payload != payload {}
            if i >= 100 { samples.append(seconds(ContinuousClock.now - start)) } // the first 100 warm up
        }
        await sender.stop(finalMessage: nil)
        await receiver.stop(finalMessage: nil)
        return Latencies(samples: samples)
    }

    func hubRoundTrips(port: Int) async throws -> Latencies {
        let watcher = try await client(port, "bench-hub-sub", subscribe: ["hub/device/bench/switch", "hub/response/device/bench/switch/set", "hub/events/device/bench/#"])
        let sender = try await client(port, "bench-hub-pub")
        var messages = watcher.messages.makeAsyncIterator()
        var samples: [Double] = []
        var on = true
        for i in 0..<(commands + 100) {
            let target = on ? "ON" : "OFF"
            on.toggle()
            let start = ContinuousClock.now
            try sender.publish("hub/device/bench/switch/set", Array(target.utf8), qos: 1)
            while let message = await messages.next() {
                if ProcessInfo.processInfo.environment["HUB_BENCH_TRACE"] != nil && i < 5 {
                    Console.note("trace \(i): +\(ms(seconds(ContinuousClock.now - start))) ms \(message.topic)")
                }
                if message.topic == "hub/device/bench/switch", String(decoding: message.payload, as: UTF8.self) == target { break }
            }
            if i >= 100 { samples.append(seconds(ContinuousClock.now - start)) }
        }
        await sender.stop(finalMessage: nil)
        await watcher.stop(finalMessage: nil)
        return Latencies(samples: samples)
    }

    /// The broker alone: the same number of QoS 1 messages from the same publishers to one subscriber.
    func bareIngestRate(port: Int) async throws -> Double {
        let receiver = try await client(port, "bench-bare-ingest-sub", subscribe: ["bench/ingest"])
        var clients: [MQTTClient] = []
        for p in 0..<publishers { clients.append(try await client(port, "bench-bare-ingest-\(p)")) }
        let perPublisher = ingest / publishers
        let total = perPublisher * publishers
        let payload = Array(#"{"command":"record_reading","device":"meter-1","quantity":"power","value":120}"#.utf8)
        let start = ContinuousClock.now
        let counter = Task {
            var seen = 0
            for await _ in receiver.messages {
                seen += 1
                if seen == total { break }
            }
        }
        for c in clients {
            Task { for _ in 0..<perPublisher { try? c.publish("bench/ingest", payload, qos: 1) } }
        }
        await counter.value
        let elapsed = seconds(ContinuousClock.now - start)
        for c in clients { await c.stop(finalMessage: nil) }
        await receiver.stop(finalMessage: nil)
        return Double(total) / elapsed
    }

    /// The hub core alone: the same commands straight into `Hub.execute` from 32 tasks (as many as
    /// the surface's lanes), no MQTT.
    func directRate(service: HubService) async throws -> Double {
        let count = min(ingest, 20_000)
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<32 {
                group.addTask {
                    for i in stride(from: lane, to: count, by: 32) {
                        _ = try await service.hub.execute(.recordReading(subject: .device("meter-\(i % 100)"), quantity: .power,
                                                                         value: Double(100 + i % 50), measuredAt: currentMicros()),
                                                          actor: "bench", now: currentMicros())
                    }
                }
            }
            try await group.waitForAll()
        }
        return Double(count) / seconds(ContinuousClock.now - start)
    }

    func ingestRate(port: Int, service: HubService) async throws -> Double {
        var clients: [MQTTClient] = []
        for p in 0..<publishers { clients.append(try await client(port, "bench-ingest-\(p)")) }
        let base = service.hub.store.lastSequence
        let perPublisher = ingest / publishers
        let total = UInt64(perPublisher * publishers)
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (p, c) in clients.enumerated() {
                group.addTask {
                    for i in 0..<perPublisher {
                        let device = "meter-\((p * perPublisher + i) % 100)"
                        let json = #"{"command":"record_reading","device":"\#(device)","quantity":"power","value":\#(100 + i % 50)}"#
                        try c.publish("hub/request/command", Array(json.utf8), qos: 1)
                    }
                }
            }
            try await group.waitForAll()
        }
        var lastReport = ContinuousClock.now
        while service.hub.store.lastSequence < base + total {
            if ContinuousClock.now - start > .seconds(300) { throw HubError.failed("ingest did not finish in 300 s") }
            if ContinuousClock.now - lastReport > .seconds(2) {
                lastReport = ContinuousClock.now
                Console.note("bench: ingest \(service.hub.store.lastSequence - base) of \(total) events so far")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = seconds(ContinuousClock.now - start)
        for c in clients { await c.stop(finalMessage: nil) }
        return Double(total) / elapsed
    }
}
