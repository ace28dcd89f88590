import Foundation
import HubLog

/// The log benchmark, generic over any `EventStore`. On a fresh store it measures, in order:
///
/// a) one writer, one event per append, each awaited before the next → durable appends/s;
/// b) `concurrentWriters` tasks appending one event per append concurrently → durable appends/s;
/// c) batches of `bulkBatchSize` events per append until the store holds `replayEventCount` → events/s;
/// d) replay: every event from sequence 1 through the caller's `replay` closure (decode + fold) → events/s.
///
/// Requests are built outside the timed regions: a) and b) are generated up front; c) generates
/// each batch before timing its append and sums the append times. d) includes the caller's closure.
public struct LogBenchmark: Sendable {
    /// How much each phase does.
    public struct Configuration: Sendable, Equatable {
        /// Events the store holds when the bulk load ends, and so the events replayed.
        public var replayEventCount: Int
        /// Appends (one event each) of the single sequential writer.
        public var sequentialAppends: Int
        /// Concurrent writer tasks.
        public var concurrentWriters: Int
        /// Appends (one event each) over all concurrent writers together.
        public var concurrentAppendsTotal: Int
        /// Events per append in the bulk load.
        public var bulkBatchSize: Int

        /// The defaults `hub-bench log` runs: 1,000,000 events replayed, 5,000 sequential appends, 64 writers sharing 20,000 appends, batches of 100.
        public init(
            replayEventCount: Int = 1_000_000, sequentialAppends: Int = 5_000,
            concurrentWriters: Int = 64, concurrentAppendsTotal: Int = 20_000, bulkBatchSize: Int = 100
        ) {
            self.replayEventCount = replayEventCount
            self.sequentialAppends = sequentialAppends
            self.concurrentWriters = concurrentWriters
            self.concurrentAppendsTotal = concurrentAppendsTotal
            self.bulkBatchSize = bulkBatchSize
        }
    }

    /// How much each phase does.
    public var configuration: Configuration
    /// The events written.
    public var workload: BenchmarkWorkload

    /// A benchmark with the default configuration and workload unless given.
    public init(configuration: Configuration = Configuration(), workload: BenchmarkWorkload = BenchmarkWorkload()) {
        self.configuration = configuration
        self.workload = workload
    }

    /// Progress lines go to standard error.
    public static let stderrProgress: @Sendable (String) -> Void = { line in
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Runs phases a–d on `store`, which must be empty. `label` names the backend in the result and
    /// in progress lines. Throws if the store is not empty, an append fails, or the replay does not
    /// see every event exactly once in sequence order.
    public func run(
        store: any EventStore, label: String = "store",
        progress: @Sendable (String) -> Void = LogBenchmark.stderrProgress,
        replay: (EventRecord) throws -> Void,
        replayAll: ((_ through: UInt64) async throws -> (events: UInt64, payloadBytes: Int))? = nil
    ) async throws -> LogBenchmarkResult {
        let config = configuration
        guard config.sequentialAppends >= 0, config.concurrentAppendsTotal >= 0, config.concurrentWriters > 0,
            config.bulkBatchSize > 0, config.replayEventCount >= 0
        else {
            throw EventLogError.invalid("benchmark: invalid configuration \(config)")
        }
        guard store.lastSequence == 0 else {
            throw EventLogError.invalid("benchmark: the store is not empty (last sequence \(store.lastSequence))")
        }
        let clock = ContinuousClock()
        var appendNumber = 0  // also the event index for single-event appends
        var eventIndex = 0

        // a) One writer, one event per append, awaited one at a time.
        progress("[\(label)] a) 1 writer, 1 event/append: \(config.sequentialAppends) appends")
        var sequentialRequests: [AppendRequest] = []
        sequentialRequests.reserveCapacity(config.sequentialAppends)
        for _ in 0..<config.sequentialAppends {
            sequentialRequests.append(workload.request(appendNumber: appendNumber, firstIndex: eventIndex, count: 1))
            appendNumber += 1
            eventIndex += 1
        }
        var expectedLast: UInt64 = 0
        let aStart = clock.now
        for request in sequentialRequests {
            let result = try await store.append(request)
            guard !result.duplicate, result.firstSequence == expectedLast + 1, result.lastSequence == expectedLast + 1 else {
                throw EventLogError.invalid("benchmark a): unexpected append result \(result) after sequence \(expectedLast)")
            }
            expectedLast = result.lastSequence
        }
        let aSeconds = seconds(clock.now - aStart)
        sequentialRequests = []

        // b) Concurrent writers, one event per append.
        let writers = config.concurrentWriters
        progress("[\(label)] b) \(writers) concurrent writers, 1 event/append: \(config.concurrentAppendsTotal) appends")
        var perWriter: [[AppendRequest]] = Array(repeating: [], count: writers)
        for w in 0..<writers {
            let count = config.concurrentAppendsTotal / writers + (w < config.concurrentAppendsTotal % writers ? 1 : 0)
            perWriter[w].reserveCapacity(count)
            for _ in 0..<count {
                perWriter[w].append(workload.request(appendNumber: appendNumber, firstIndex: eventIndex, count: 1))
                appendNumber += 1
                eventIndex += 1
            }
        }
        let bStart = clock.now
        let concurrentEvents = try await withThrowingTaskGroup(of: Int.self) { group in
            for requests in perWriter {
                group.addTask {
                    var written = 0
                    for request in requests {
                        let result = try await store.append(request)
                        guard !result.duplicate else {
                            throw EventLogError.invalid("benchmark b): fresh command reported as duplicate: \(result)")
                        }
                        written += Int(result.lastSequence + 1 - result.firstSequence)
                    }
                    return written
                }
            }
            var total = 0
            for try await written in group { total += written }
            return total
        }
        let bSeconds = seconds(clock.now - bStart)
        perWriter = []
        expectedLast += UInt64(concurrentEvents)
        guard concurrentEvents == config.concurrentAppendsTotal, store.lastSequence == expectedLast else {
            throw EventLogError.invalid(
                "benchmark b): wrote \(concurrentEvents) events, store last sequence \(store.lastSequence), expected \(expectedLast)")
        }

        // c) Bulk load in batches until the store holds the replay count.
        let bulkEvents = max(0, config.replayEventCount - Int(expectedLast))
        progress("[\(label)] c) bulk load, \(config.bulkBatchSize) events/append: \(bulkEvents) events")
        var bulkAppends = 0
        var cDuration = Duration.zero
        var remaining = bulkEvents
        var lastReport = clock.now
        while remaining > 0 {
            let count = min(config.bulkBatchSize, remaining)
            let request = workload.request(appendNumber: appendNumber, firstIndex: eventIndex, count: count)
            appendNumber += 1
            eventIndex += count
            let start = clock.now
            let result = try await store.append(request)
            let end = clock.now
            cDuration += end - start
            guard !result.duplicate, result.firstSequence == expectedLast + 1,
                result.lastSequence == expectedLast + UInt64(count)
            else {
                throw EventLogError.invalid("benchmark c): unexpected append result \(result) after sequence \(expectedLast)")
            }
            expectedLast = result.lastSequence
            remaining -= count
            bulkAppends += 1
            if end - lastReport > .seconds(10) {
                progress("[\(label)]    … \(bulkEvents - remaining)/\(bulkEvents) events")
                lastReport = end
            }
        }
        let cSeconds = seconds(cDuration)

        // d) Replay everything through the caller's closure.
        let total = store.lastSequence
        guard total == expectedLast else {
            throw EventLogError.invalid("benchmark: store last sequence \(total), expected \(expectedLast)")
        }
        progress("[\(label)] d) replay: \(total) events")
        var replayed: UInt64 = 0
        var payloadBytes = 0
        var outOfOrder: (expected: UInt64, got: UInt64)?
        let dStart = clock.now
        if let replayAll {
            // The store's own fast path (e.g. borrowed record views); it must visit 1...total in order.
            (replayed, payloadBytes) = try await replayAll(total)
        } else {
            try await store.read(from: 1, through: total) { record in
                guard record.sequence == replayed + 1 else {
                    outOfOrder = (replayed + 1, record.sequence)
                    return false
                }
                try replay(record)
                replayed += 1
                payloadBytes += record.payload.count
                return true
            }
        }
        let dSeconds = seconds(clock.now - dStart)
        if let outOfOrder {
            throw EventLogError.invalid("benchmark d): replay expected sequence \(outOfOrder.expected), got \(outOfOrder.got)")
        }
        guard replayed == total else {
            throw EventLogError.invalid("benchmark d): replayed \(replayed) of \(total) events")
        }

        let result = LogBenchmarkResult(
            backend: label, configuration: config,
            sequential: .init(appends: config.sequentialAppends, events: config.sequentialAppends, seconds: aSeconds),
            concurrent: .init(appends: config.concurrentAppendsTotal, events: concurrentEvents, seconds: bSeconds),
            bulk: .init(appends: bulkAppends, events: bulkEvents, seconds: cSeconds),
            replay: .init(appends: 0, events: Int(replayed), seconds: dSeconds),
            lastSequence: total,
            averagePayloadBytes: replayed == 0 ? 0 : Double(payloadBytes) / Double(replayed))
        progress("[\(label)] done: \(result.summary)")
        return result
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}

/// The figures of one `LogBenchmark.run`.
public struct LogBenchmarkResult: Sendable, Equatable {
    /// One timed phase: what it did and how long it took.
    public struct Phase: Sendable, Equatable {
        /// Appends made.
        public var appends: Int
        /// Events written (or replayed).
        public var events: Int
        /// Wall time, in seconds.
        public var seconds: Double

        /// Creates a phase.
        public init(appends: Int, events: Int, seconds: Double) {
            self.appends = appends
            self.events = events
            self.seconds = seconds
        }

        /// Appends per second; nil when nothing was timed or appended.
        public var appendsPerSecond: Double? { seconds > 0 && appends > 0 ? Double(appends) / seconds : nil }
        /// Events per second; nil when nothing was timed or written.
        public var eventsPerSecond: Double? { seconds > 0 && events > 0 ? Double(events) / seconds : nil }
    }

    /// The store's name, as the report shows it.
    public var backend: String
    /// What each phase did.
    public var configuration: LogBenchmark.Configuration
    /// a) one writer, one event per append.
    public var sequential: Phase
    /// b) concurrent writers, one event per append.
    public var concurrent: Phase
    /// c) bulk load in batches.
    public var bulk: Phase
    /// d) replay through the caller's closure.
    public var replay: Phase
    /// The store's last sequence after the bulk load (== events replayed).
    public var lastSequence: UInt64
    /// The mean payload size of the events written, in bytes.
    public var averagePayloadBytes: Double

    /// Creates a result.
    public init(
        backend: String, configuration: LogBenchmark.Configuration, sequential: Phase, concurrent: Phase,
        bulk: Phase, replay: Phase, lastSequence: UInt64, averagePayloadBytes: Double
    ) {
        self.backend = backend
        self.configuration = configuration
        self.sequential = sequential
        self.concurrent = concurrent
        self.bulk = bulk
        self.replay = replay
        self.lastSequence = lastSequence
        self.averagePayloadBytes = averagePayloadBytes
    }

    /// Wall time of the four timed phases together.
    public var elapsedSeconds: Double { sequential.seconds + concurrent.seconds + bulk.seconds + replay.seconds }

    /// One line: the four rates and the elapsed time.
    public var summary: String {
        "a) \(Self.rate(sequential.appendsPerSecond)) appends/s, b) \(Self.rate(concurrent.appendsPerSecond)) appends/s, "
            + "c) \(Self.rate(bulk.eventsPerSecond)) events/s, d) \(Self.rate(replay.eventsPerSecond)) events/s, "
            + "elapsed \(Self.decimal(elapsedSeconds, 2)) s"
    }

    /// A Markdown table comparing the hub log (either backend) with SQLite: workload | hub log | SQLite | ratio.
    /// - Parameter hubLabel: The first column's heading (`hub log`, or `PostgreSQL` for that backend).
    public static func table(hub: LogBenchmarkResult, sqlite: LogBenchmarkResult, machine: String, hubLabel: String = "hub log") -> String {
        let c = hub.configuration
        func countNote(_ h: Int, _ s: Int) -> String { h == s ? group(h) : "\(group(h)) / SQLite \(group(s))" }
        func row(_ workload: String, _ h: Double?, _ s: Double?, _ unit: String, _ hs: Double, _ ss: Double) -> String {
            let ratio = (h != nil && s != nil && s! > 0) ? decimal(h! / s!, 1) + "x" : "—"
            return "| \(workload) | \(cell(h, unit, hs)) | \(cell(s, unit, ss)) | \(ratio) |"
        }
        var lines: [String] = []
        lines.append("Machine: \(machine)")
        lines.append("")
        lines.append(
            "Events: \(group(Int(hub.lastSequence))) total, payload avg \(decimal(max(hub.averagePayloadBytes, sqlite.averagePayloadBytes), 0)) B; "
                + "every append durable (fsync) before it returns.")
        lines.append("")
        lines.append("| workload | \(hubLabel) | SQLite (WAL, FULL) | ratio |")
        lines.append("|---|---:|---:|---:|")
        lines.append(
            row(
                "a) 1 writer, 1 event/append (\(countNote(hub.sequential.appends, sqlite.sequential.appends)) appends)",
                hub.sequential.appendsPerSecond, sqlite.sequential.appendsPerSecond, "appends/s",
                hub.sequential.seconds, sqlite.sequential.seconds))
        lines.append(
            row(
                "b) \(c.concurrentWriters) concurrent writers, 1 event/append "
                    + "(\(countNote(hub.concurrent.appends, sqlite.concurrent.appends)) appends)",
                hub.concurrent.appendsPerSecond, sqlite.concurrent.appendsPerSecond, "appends/s",
                hub.concurrent.seconds, sqlite.concurrent.seconds))
        lines.append(
            row(
                "c) bulk load, \(c.bulkBatchSize) events/append (\(countNote(hub.bulk.events, sqlite.bulk.events)) events)",
                hub.bulk.eventsPerSecond, sqlite.bulk.eventsPerSecond, "events/s",
                hub.bulk.seconds, sqlite.bulk.seconds))
        lines.append(
            row(
                "d) replay from 1, decode + fold (\(countNote(hub.replay.events, sqlite.replay.events)) events)",
                hub.replay.eventsPerSecond, sqlite.replay.eventsPerSecond, "events/s",
                hub.replay.seconds, sqlite.replay.seconds))
        let ratio = sqlite.elapsedSeconds > 0 ? decimal(hub.elapsedSeconds / sqlite.elapsedSeconds, 1) + "x" : "—"
        lines.append(
            "| elapsed, a–d (lower is better) | \(decimal(hub.elapsedSeconds, 2)) s | "
                + "\(decimal(sqlite.elapsedSeconds, 2)) s | \(ratio) |")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func cell(_ value: Double?, _ unit: String, _ seconds: Double) -> String {
        guard let value else { return "—" }
        return "\(rate(value)) \(unit) (\(decimal(seconds, 2)) s)"
    }

    static func rate(_ value: Double?) -> String {
        guard let value else { return "—" }
        return group(Int(value.rounded()))
    }

    /// 1234567 → "1,234,567".
    static func group(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, ch) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(ch)
        }
        return n < 0 ? "-" + out : out
    }

    static func decimal(_ value: Double, _ places: Int) -> String {
        String(format: "%.\(places)f", value)
    }
}
