import ArgumentParser
import BrokerHarness
import CLISupport
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import Logging
import MQTT
import Synchronization
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
    @Flag(help: "Measure ingest only (skip the latency runs).")
    var ingestOnly = false
    @Option(help: "Where to put the hub's data (removed afterwards).")
    var dir = "./hub-bench-mqtt"

    func run() async throws {
        try await Console.guarded {
            let broker = try TestBroker.start()
            defer { broker.stop() }
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            Console.note("bench: mosquitto on 127.0.0.1:\(broker.port)")
            let cpu = CPUMeter(brokerPid: broker.pid)

            var mark = cpu.now()
            let bareIngest = try await bareIngestRate(port: broker.port).rate
            let bareCPU = cpu.since(mark, messages: ingest)
            Console.note("bench: bare broker throughput \(Int(bareIngest)) messages/s")
            mark = cpu.now()
            let relayIngest = try await bareIngestRate(port: broker.port, receiving: .answering).rate
            let relayCPU = cpu.since(mark, messages: ingest)
            Console.note("bench: bare broker, receiver answering each message and publishing an event: \(Int(relayIngest)) messages/s")
            mark = cpu.now()
            let durableRelay = try await bareIngestRate(port: broker.port, receiving: .answeringDurably(directory: root))
            let durableRelayCPU = cpu.since(mark, messages: ingest)
            let perCommit = String(format: "%.1f", durableRelay.perCommit ?? 0)
            Console.note(
                "bench: the same, answering once each message is durable (group commits of \(perCommit) on average): \(Int(durableRelay.rate)) messages/s"
            )
            let bare = ingestOnly ? Latencies(samples: []) : try await bareRoundTrips(port: broker.port)
            Console.note("bench: bare round trip p50 \(ms(bare.p50)) ms, p99 \(ms(bare.p99)) ms")
            // The command's floor: the bare round trip and its two durable appends (the command, the
            // device's confirmation), each at least one fdatasync into a preallocated file.
            let syncs = 2000
            let sync = 1 / (try FsyncFloor.rate(path: root + "/fsync-floor", writes: syncs, preallocate: true))
            let floor = bare.p50 + 2 * sync
            let peer = ingestOnly ? Latencies(samples: []) : try await peerRoundTrips(port: broker.port, root: root)
            Console.note("bench: the path without the hub p50 \(ms(peer.p50)) ms, p99 \(ms(peer.p99)) ms")

            mark = cpu.now()
            let direct = try await directRate(root: root + "/core-alone")
            let directCPU = cpu.since(mark, messages: directCount)
            Console.note("bench: hub core alone, Hub.execute from 32 tasks: \(Int(direct)) commands/s")

            let hubSyncs = SyncTimes()
            let service = try await Bench.startHub(
                port: broker.port, root: root,
                devices: [HubConfig.Device(id: "bench", driver: "virtual", name: "Bench", config: "{}")],
                syncs: hubSyncs)
            hubSyncs.recording(true)
            let hubLatency = ingestOnly ? Latencies(samples: []) : try await hubRoundTrips(port: broker.port)
            hubSyncs.recording(false)
            let hubSync = Latencies(samples: hubSyncs.seconds)
            Console.note("bench: hub command p50 \(ms(hubLatency.p50)) ms, p99 \(ms(hubLatency.p99)) ms")
            mark = cpu.now()
            let rate = try await ingestRate(port: broker.port, service: service)
            let hubCPU = cpu.since(mark, messages: ingest)
            Console.note(
                "bench: ingest \(Int(rate.durable)) messages/s into durable events, \(Int(rate.complete)) messages/s answered and published as events"
            )
            Console.note(
                "bench: the hub published \(String(format: "%.2f", rate.publishedPerMessage)) messages per message taken in (answer, event, state topics)"
            )
            try await service.stop()

            // If the work of a message were only the hub core's plus what the broker and clients
            // spend carrying the hub's traffic, all cores busy: the most this machine could take in.
            let ceiling = Double(CPUMeter.cores) / ((directCPU.total + relayCPU.total) / 1e6)
            func cpuCell(_ c: CPUMeter.PerMessage) -> String {
                String(format: "%.0f µs (%.0f + %.0f)", c.total, c.process, c.broker)
            }
            print(
                """
                | measure | p50 | p99 | mean |
                |---|---:|---:|---:|
                | bare broker round trip, QoS 1 publish -> subscriber (\(bare.count) messages) | \(ms(bare.p50)) ms | \(ms(bare.p99)) ms | \(ms(bare.mean)) ms |
                | hub: switch/set -> confirmed retained `switch` state (\(hubLatency.count) commands) | \(ms(hubLatency.p50)) ms | \(ms(hubLatency.p99)) ms | \(ms(hubLatency.mean)) ms |
                | hub minus bare | \(ms(hubLatency.p50 - bare.p50)) ms | \(ms(hubLatency.p99 - bare.p99)) ms | |
                | hub / bare | \(ratio(hubLatency.p50, bare.p50)) | \(ratio(hubLatency.p99, bare.p99)) | |
                | floor: bare p50 + two fdatasyncs (\(ms(sync)) ms each, mean of \(syncs) into a preallocated file) | \(ms(floor)) ms | | |
                | hub minus the floor | \(ms(hubLatency.p50 - floor)) ms | | |
                | the hub log's own fdatasyncs during its commands (\(hubSync.count), \(String(format: "%.2f", Double(hubSync.count) / Double(max(1, hubLatency.count + 100)))) per command) | \(ms(hubSync.p50)) ms | \(ms(hubSync.p99)) ms | \(ms(hubSync.mean)) ms |
                | the path without the hub: a client making two durable writes through a writer thread and publishing the answer, two events and the retained state (\(peer.count) commands) | \(ms(peer.p50)) ms | \(ms(peer.p99)) ms | \(ms(peer.mean)) ms |
                | hub minus the path without the hub | \(ms(hubLatency.p50 - peer.p50)) ms | \(ms(hubLatency.p99 - peer.p99)) ms | |

                | ingest (\(ingest) messages from \(publishers) publishers, \(CPUMeter.cores) cores) | messages/s | CPU per message (bench process + broker) |
                |---|---:|---:|
                | bare broker: QoS 1 publishers -> one QoS 1 subscriber | \(Int(bareIngest)) | \(cpuCell(bareCPU)) |
                | bare broker, the hub's traffic without the hub: the subscriber publishes an answer and an event (QoS 1) per message | \(Int(relayIngest)) | \(cpuCell(relayCPU)) |
                | the hub's traffic and durability without the hub: the subscriber hands each message to a writer thread (group commits: one write and one fdatasync each, \(perCommit) messages on average) and publishes the answer and the event from that thread once durable | \(Int(durableRelay.rate)) | \(cpuCell(durableRelayCPU)) |
                | hub core alone: record_reading into `Hub.execute` from 32 tasks, durable, no MQTT (\(directCount) commands) | \(Int(direct)) | \(cpuCell(directCPU)) |
                | hub: `request/command` record_reading over 100 devices -> durable events | \(Int(rate.durable)) | |
                | hub: the same, until every command is also answered and every event acknowledged on `hub/events` | \(Int(rate.complete)) | \(cpuCell(hubCPU)) |
                | hub: messages its client published per message taken in (the peer above: 2) | \(String(format: "%.2f", rate.publishedPerMessage)) | |
                | ceiling from CPU: cores / (hub core + the hub's traffic without the hub) | \(Int(ceiling)) | |
                | hub (answered and published) / bare broker with the hub's traffic | \(String(format: "%.2f", rate.complete / relayIngest)) | |
                | hub (answered and published) / CPU ceiling | \(String(format: "%.2f", rate.complete / ceiling)) | |
                | hub (answered and published) / the hub's traffic and durability without the hub | \(String(format: "%.2f", rate.complete / durableRelay.rate)) | |
                | hub CPU per message / that peer's | \(String(format: "%.2fx", hubCPU.total / max(1, durableRelayCPU.total))) | |
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

    func bareRoundTrips(port: Int) async throws -> Latencies {
        let receiver = try await Bench.client(port, "bench-bare-sub", subscribe: ["bench/echo"])
        let sender = try await Bench.client(port, "bench-bare-pub")
        try await Task.sleep(for: .milliseconds(200))
        var messages = receiver.messages.makeAsyncIterator()
        var samples: [Double] = []
        for i in 0..<(commands + 100) {
            let payload = Array("\(i)".utf8)
            let start = ContinuousClock.now
            try sender.publish("bench/echo", payload, qos: 1)
            while let message = await messages.next(), message.payload != payload {}
            if i >= 100 { samples.append((ContinuousClock.now - start).inSeconds) }  // the first 100 warm up
        }
        await sender.stop(finalMessage: nil)
        await receiver.stop(finalMessage: nil)
        return Latencies(samples: samples)
    }

    /// The command's path without the hub, on the same broker: a peer client that, for each `set` it
    /// receives, makes two durable 64-byte writes as the log does (each handed to a writer thread
    /// and awaited: `HandOffWriter`) and publishes at QoS 1 what the hub publishes for a switch
    /// command: after the first write the event and the answer, after the second the event and the
    /// retained state. The bench's client watches the same kinds of topics as in `hubRoundTrips`.
    func peerRoundTrips(port: Int, root: String) async throws -> Latencies {
        let rounds = commands + 100
        let path = root + "/peer-writes"
        let fd = try FsyncFloor.openFloorFile(path, preallocating: rounds * 2 * FsyncFloor.recordSize)
        let writer = HandOffWriter(fd: fd)
        defer { writer.stop(); close(fd); unlink(path) }
        let peer = try await Bench.client(port, "bench-peer", subscribe: ["bench/peer/set"])
        let watcher = try await Bench.client(
            port, "bench-peer-sub", subscribe: ["bench/peer/state", "bench/peer/response", "bench/peer/events/#"])
        let sender = try await Bench.client(port, "bench-peer-pub")
        let serving = Task {
            do {
                var offset: off_t = 0
                for await message in peer.messages {
                    guard await writer.write(at: offset) else { throw HubError.failed("the peer's write and sync failed") }
                    try peer.publish("bench/peer/events/requested", message.payload, qos: 1)
                    try peer.publish("bench/peer/response", message.payload, qos: 1)
                    guard await writer.write(at: offset + off_t(FsyncFloor.recordSize)) else {
                        throw HubError.failed("the peer's write and sync failed")
                    }
                    try peer.publish("bench/peer/events/toggled", message.payload, qos: 1)
                    try peer.publish("bench/peer/state", message.payload, qos: 1, retain: true)
                    offset += off_t(2 * FsyncFloor.recordSize)
                }
            } catch {
                await watcher.stop(finalMessage: nil)  // ends the wait below, which then reports this error
                throw error
            }
        }
        defer { serving.cancel() }
        var messages = watcher.messages.makeAsyncIterator()
        var samples: [Double] = []
        for i in 0..<rounds {
            let target = Array((i % 2 == 0 ? "ON" : "OFF").utf8)
            let start = ContinuousClock.now
            try sender.publish("bench/peer/set", target, qos: 1)
            while true {
                guard let message = await messages.next() else {
                    serving.cancel()
                    if case .failure(let error) = await serving.result { throw error }
                    throw HubError.failed("the path without the hub: the watching client stopped")
                }
                if message.topic == "bench/peer/state" && message.payload == target { break }
            }
            if i >= 100 { samples.append((ContinuousClock.now - start).inSeconds) }
        }
        await sender.stop(finalMessage: nil)
        await watcher.stop(finalMessage: nil)
        await peer.stop(finalMessage: nil)
        return Latencies(samples: samples)
    }

    func hubRoundTrips(port: Int) async throws -> Latencies {
        let watcher = try await Bench.client(
            port, "bench-hub-sub",
            subscribe: ["hub/device/bench/switch", "hub/response/device/bench/switch/set", "hub/events/device/bench/#"])
        let sender = try await Bench.client(port, "bench-hub-pub")
        var messages = watcher.messages.makeAsyncIterator()
        var samples: [Double] = []
        var on = true
        // Read once: building the environment's dictionary for every message took the bench's own
        // CPU inside the measured round trip.
        let tracing = ProcessInfo.processInfo.environment["HUB_BENCH_TRACE"] != nil
        for i in 0..<(commands + 100) {
            let target = on ? "ON" : "OFF"
            on.toggle()
            let start = ContinuousClock.now
            try sender.publish("hub/device/bench/switch/set", Array(target.utf8), qos: 1)
            while let message = await messages.next() {
                if tracing && i < 5 {
                    Console.note("trace \(i): +\(ms((ContinuousClock.now - start).inSeconds)) ms \(message.topic)")
                }
                if message.topic == "hub/device/bench/switch", String(decoding: message.payload, as: UTF8.self) == target { break }
            }
            if i >= 100 { samples.append((ContinuousClock.now - start).inSeconds) }
        }
        await sender.stop(finalMessage: nil)
        await watcher.stop(finalMessage: nil)
        return Latencies(samples: samples)
    }

    /// What the ingest's subscriber does with each message it receives.
    enum Receiving {
        /// Counts it.
        case counting
        /// Publishes two QoS 1 messages per message, as the hub must (the answer and the event): the
        /// most this broker and machine allow the hub.
        case answering
        /// Hands it to a `GroupCommitWriter` (a 64-byte record in a preallocated file in this
        /// directory), and publishes the answer and the event from the writer's thread once its group
        /// commit is durable: the hub's traffic and its durability, with no more hand-offs than that
        /// needs.
        case answeringDurably(directory: String)
    }

    /// The broker alone: the same number of QoS 1 messages from the same publishers to one subscriber,
    /// which does with each what `receiving` says. Returns messages per second, and for
    /// `.answeringDurably` the messages per group commit.
    func bareIngestRate(port: Int, receiving: Receiving = .counting) async throws -> (rate: Double, perCommit: Double?) {
        let receiver = try await Bench.client(port, "bench-bare-ingest-sub", subscribe: ["bench/ingest"])
        var clients: [MQTTClient] = []
        for p in 0..<publishers { clients.append(try await Bench.client(port, "bench-bare-ingest-\(p)")) }
        let perPublisher = ingest / publishers
        let total = perPublisher * publishers
        let payload = Array(#"{"command":"record_reading","device":"meter-1","quantity":"power","value":120}"#.utf8)
        var writer: (GroupCommitWriter, fd: Int32, path: String)?
        if case .answeringDurably(let directory) = receiving {
            let path = directory + "/durable-peer"
            let fd = try FsyncFloor.openFloorFile(path, preallocating: total * FsyncFloor.recordSize)
            writer = (GroupCommitWriter(fd: fd), fd, path)
        }
        defer {
            if let (writer, fd, path) = writer {
                writer.stop()
                close(fd)
                unlink(path)
            }
        }
        // Counted from the writer's thread: the last durable message ends the wait below.
        let (allDurable, lastDurable) = AsyncStream<Void>.makeStream()
        let durable = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        let start = ContinuousClock.now
        let counter = Task { [writer] in
            var seen = 0
            @Sendable func answer(_ payload: [UInt8]) {
                do {
                    try receiver.publish("bench/answer", payload, qos: 1)
                    try receiver.publish("bench/event", payload, qos: 1)
                } catch {
                    failed.add(1, ordering: .relaxed)
                }
            }
            for await message in receiver.messages {
                seen += 1
                switch receiving {
                case .counting:
                    break
                case .answering:
                    answer(message.payload)
                case .answeringDurably:
                    let payload = message.payload
                    writer?.0.append { ok in
                        if ok { answer(payload) } else { failed.add(1, ordering: .relaxed) }
                        if durable.add(1, ordering: .relaxed).newValue == total { lastDurable.finish() }
                    }
                }
                if seen == total { break }
            }
        }
        let publishing = clients.map { c in
            Task { for _ in 0..<perPublisher { try c.publish("bench/ingest", payload, qos: 1) } }
        }
        for publisher in publishing {
            // Publishing only queues, so this is quick; a refused publish ends the run at once
            // instead of leaving the subscriber waiting for a message that never comes.
            if case .failure(let error) = await publisher.result {
                counter.cancel()
                for c in clients { await c.stop(finalMessage: nil) }
                await receiver.stop(finalMessage: nil)
                throw HubError.failed("a publisher of the bare broker's ingest could not publish: \(error)")
            }
        }
        await counter.value
        if writer != nil { for await _ in allDurable {} }
        // The answers may still sit in the client's queue (sent in order): done when the broker
        // acknowledged a message published after them.
        if case .counting = receiving {} else { try await receiver.publishAndWait("bench/event", [], qos: 1) }
        let elapsed = (ContinuousClock.now - start).inSeconds
        for c in clients { await c.stop(finalMessage: nil) }
        await receiver.stop(finalMessage: nil)
        if failed.load(ordering: .relaxed) > 0 {
            throw HubError.failed("the broker's subscriber could not answer or make durable \(failed.load(ordering: .relaxed)) messages")
        }
        let commits = writer.map { $0.0.stop() } ?? 0
        return (Double(total) / elapsed, writer == nil ? nil : Double(total) / Double(max(1, commits)))
    }

    var directCount: Int { min(ingest, 50_000) }

    /// The hub core alone: a hub of its own (no MQTT surface, no drivers, its own log) takes the same
    /// commands straight into `Hub.execute` from 32 tasks (as many as the surface's lanes).
    func directRate(root: String) async throws -> Double {
        let hub = try await Hub(paths: HubPaths(dataDirectory: root))
        for d in 0..<100 {
            _ = try await hub.execute(
                .registerDevice(id: "meter-\(d)", driver: "virtual", name: "Meter \(d)", config: "{}", hardwareId: nil),
                actor: "bench", now: currentMicros())
        }
        let count = directCount
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<32 {
                group.addTask {
                    for i in stride(from: lane, to: count, by: 32) {
                        _ = try await hub.execute(
                            .recordReading(
                                subject: .device("meter-\(i % 100)"), quantity: .power,
                                value: Double(100 + i % 50), measuredAt: currentMicros()),
                            actor: "bench", now: currentMicros())
                    }
                }
            }
            try await group.waitForAll()
        }
        let rate = Double(count) / (ContinuousClock.now - start).inSeconds
        try await hub.close()
        return rate
    }

    struct IngestRates {
        /// Until the last event was durable in the log.
        var durable: Double
        /// Until, in addition, every command was answered and every event acknowledged on `hub/events`.
        var complete: Double
        /// What the hub's client published per message taken in: the answer, the event, and the
        /// device's state topics (coalesced when the state publisher falls behind).
        var publishedPerMessage: Double
    }

    /// Commands the ingest's publishers keep unanswered at most, together: four command lanes'
    /// worth (a lane holds 1,024 and answers `hub_busy` beyond; the 100 devices spread over 32).
    /// Commands refused that way are counted, said, and not waited for.
    static let ingestWindow = 4 * MQTTSurface.laneCapacity

    func ingestRate(port: Int, service: HubService) async throws -> IngestRates {
        guard let surface = service.surface else { throw HubError.failed("the hub has no MQTT surface") }
        var clients: [MQTTClient] = []
        for p in 0..<publishers { clients.append(try await Bench.client(port, "bench-ingest-\(p)")) }
        let base = service.hub.store.lastSequence
        let answeredBefore = surface.answered
        let publishedBefore = surface.client.traffic.published
        let perPublisher = ingest / publishers
        let total = UInt64(perPublisher * publishers)
        let start = ContinuousClock.now
        // The publishers keep at most `ingestWindow` commands unanswered, as clients waiting for
        // answers do: a command lane holds 1,024 and answers `hub_busy` beyond that.
        let sent = SentCount()
        let refusedBefore = surface.commandWindow.refusedBusy
        var refused: UInt64 { UInt64(surface.commandWindow.refusedBusy - refusedBefore) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (p, c) in clients.enumerated() {
                group.addTask {
                    for i in 0..<perPublisher {
                        while sent.value.load(ordering: .relaxed) - (surface.answered - answeredBefore) >= Self.ingestWindow {
                            try await Task.sleep(for: .milliseconds(1))
                        }
                        let device = "meter-\((p * perPublisher + i) % 100)"
                        let json = #"{"command":"record_reading","device":"\#(device)","quantity":"power","value":\#(100 + i % 50)}"#
                        try c.publish("hub/request/command", Array(json.utf8), qos: 1)
                        sent.value.add(1, ordering: .relaxed)
                    }
                }
            }
            try await group.waitForAll()
        }
        var lastReport = ContinuousClock.now
        func wait(until done: () -> Bool, _ what: String, progress: () -> String) async throws {
            while !done() {
                if ContinuousClock.now - start > .seconds(300) { throw HubError.failed("ingest: \(what) did not finish in 300 s") }
                if ContinuousClock.now - lastReport > .seconds(2) {
                    lastReport = ContinuousClock.now
                    Console.note("bench: ingest \(progress())")
                }
                try await Task.sleep(for: .milliseconds(1))
            }
        }
        try await wait(until: { service.hub.store.lastSequence + refused >= base + total }, "logging") {
            "\(service.hub.store.lastSequence - base) of \(total) events durable (\(refused) refused hub_busy, "
                + "\(surface.answered - answeredBefore) answered, \(surface.client.traffic.dropped) dropped by the MQTT client)"
        }
        let durable = (ContinuousClock.now - start).inSeconds
        if refused > 0 { Console.note("bench: ingest: \(refused) of \(total) commands were refused (hub_busy) and not sent again") }
        try await wait(
            until: { surface.answered - answeredBefore >= Int(total) && surface.eventsAcknowledged + refused >= base + total }, "answering"
        ) {
            "\(surface.answered - answeredBefore) answered, \(surface.eventsAcknowledged - min(base, surface.eventsAcknowledged)) events acknowledged (\(surface.eventsInFlight) in flight)"
        }
        // Answers may still sit in the client's queue (it sends in order): done when a later message is acknowledged.
        try await surface.client.publishAndWait("bench/flush", [], qos: 1)
        let complete = (ContinuousClock.now - start).inSeconds
        for c in clients { await c.stop(finalMessage: nil) }
        let published = surface.client.traffic.published - publishedBefore - 1  // less the flush
        return IngestRates(
            durable: Double(total) / durable, complete: Double(total) / complete,
            publishedPerMessage: Double(published) / Double(total))
    }
}

/// CPU time of this process (hub, publishers, subscribers) and of the broker, per phase.
struct CPUMeter {
    let brokerPid: Int32?
    static let cores = ProcessInfo.processInfo.activeProcessorCount

    struct Reading { var process: Double; var broker: Double }
    struct PerMessage {
        var process: Double
        var broker: Double
        var total: Double { process + broker }
    }

    func now() -> Reading {
        Reading(process: (try? cpuSeconds(getpid())) ?? 0, broker: brokerPid.flatMap { try? cpuSeconds($0) } ?? 0)
    }

    /// Microseconds of CPU per message since `start`.
    func since(_ start: Reading, messages: Int) -> PerMessage {
        let end = now()
        let n = Double(max(1, messages))
        return PerMessage(process: (end.process - start.process) * 1e6 / n, broker: (end.broker - start.broker) * 1e6 / n)
    }
}

/// Commands the ingest's publishers sent, shared between their tasks.
private final class SentCount: Sendable {
    let value = Atomic<Int>(0)
}
