import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT

/// `hub-bench history`: the history read model under a year of one-minute power readings for 500
/// devices (262,800,000 readings), folded straight into the model as `ReadingRecorded` events (the
/// fold the hub runs after each append, without the log: writing 262 M events would measure the
/// log, which `hub-bench log` does). Then history queries, answered and rendered as
/// `hub/request/history` answers them: latency p50/p99, and the model's memory. With `--files`, the
/// same into the running hub's history files (`HistoryFiles`) instead of the in-memory model.
struct HistoryBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "History read model: fold a year of minute readings for many devices, then time queries; memory per series.")

    @Option(help: "Devices, one power reading a minute each.") var devices = 500
    @Option(help: "Days of readings, ending now.") var days = 365
    @Option(help: "Queries of each kind.") var queries = 2000
    @Flag(help: "Fold into the running hub's history files (in --dir) instead of the in-memory model.") var files = false
    @Option(help: "With --files: where the files go (removed afterwards).") var dir = "./hub-bench-history"

    func run() async throws {
        try await Console.guarded {
            let minute: Int64 = 60_000_000
            let minutes = Int64(days) * 1440
            let end = (currentMicros() / Civil.microsPerDay) * Civil.microsPerDay  // today's midnight, UTC
            let start = end - minutes * minute
            let rssBefore = try memoryKiB(getpid(), "VmRSS")
            var state = HubState(foldsHistory: !files)
            let onDisk: HistoryFiles?
            if files {
                try? FileManager.default.removeItem(atPath: dir)
                onDisk = try HistoryFiles(directory: dir)
            } else {
                onDisk = nil
            }
            defer { if files { try? FileManager.default.removeItem(atPath: dir) } }
            let subjects = (0..<devices).map { Subject.device("dev-\($0)") }
            Console.note("bench: folding \(minutes * Int64(devices)) readings (\(devices) devices x \(minutes) minutes)")
            let foldStarted = ContinuousClock.now
            var sequence: UInt64 = 0
            // Into the files as the hub folds a stretch of log at start-up (a rebuild): in bulk.
            func fold() {
                for m in 0..<minutes {
                    let at = start + m * minute
                    for (d, subject) in subjects.enumerated() {
                        sequence += 1
                        let watts = Double((Int(m) &* 7 &+ d &* 13) % 2000) + 0.5
                        let event = HubEvent.readingRecorded(
                            ReadingRecorded(subject: subject, quantity: .power, value: watts, measuredAt: at))
                        let context = EventContext(sequence: sequence, timestamp: at, actor: "bench")
                        if let onDisk { onDisk.apply(event, context: context) } else { state.history.apply(event, context: context) }
                    }
                    if m % (1440 * 30) == 0 && m > 0 { Console.note("bench: \(m / 1440) days folded") }
                }
            }
            if let onDisk { await onDisk.foldingInBulk(fold) } else { fold() }
            try onDisk?.sync(sequence: sequence, chainHash: [UInt8](repeating: 0, count: 32))
            let foldSeconds = (ContinuousClock.now - foldStarted).inSeconds
            let rssAfter = try memoryKiB(getpid(), "VmRSS")
            let storage = onDisk.map { Self.diskUsage($0.directory) } ?? state.history.storageBytes
            let perSeries = storage / devices
            let source: any HistorySource = onDisk ?? state.history

            var random = SystemRandomNumberGenerator()
            func iso(_ micros: Int64) -> String { ISO8601.format(micros: micros) }
            // "A day of one device at 1h" (any day of the year), a day at 1m (within the 7 days kept), the year at 1d.
            let dayAt1h = try measure { () throws -> Int in
                let day = Int64.random(in: 1...Int64(max(1, days - 1)), using: &random)
                return try answer(
                    state, source, "device/dev-\(Int.random(in: 0..<devices, using: &random))",
                    iso(end - day * Civil.microsPerDay), iso(end - (day - 1) * Civil.microsPerDay), "1h")
            }
            let dayAt1m = try measure { () throws -> Int in
                let day = Int64.random(in: 1...Int64(min(6, max(1, days - 1))), using: &random)
                return try answer(
                    state, source, "device/dev-\(Int.random(in: 0..<devices, using: &random))",
                    iso(end - day * Civil.microsPerDay), iso(end - (day - 1) * Civil.microsPerDay), "1m")
            }
            let yearAt1d = try measure { () throws -> Int in
                try answer(state, source, "device/dev-\(Int.random(in: 0..<devices, using: &random))", iso(start), iso(end), "1d")
            }
            Console.note("bench: done")
            print(
                """
                | measure | value |
                |---|---|
                | readings folded (\(devices) devices x \(minutes) minutes) | \(minutes * Int64(devices)) in \(String(format: "%.1f", foldSeconds)) s (\(String(format: "%.1f", Double(minutes * Int64(devices)) / foldSeconds / 1e6)) M/s) |
                | series | \(devices) |
                | \(files ? "history files on disk (blocks allocated)" : "history model storage (allocated ring slots x \(HistoryModel.bytesPerBucket) bytes)") | \(mib(storage)) MiB |
                | per series | \(perSeries) bytes |
                | RSS before folding / after | \(rssBefore / 1024) MiB / \(rssAfter / 1024) MiB (+\((rssAfter - rssBefore) / 1024) MiB) |

                | query (parse, answer, render the JSON data; \(queries) each) | buckets | p50 | p99 |
                |---|---|---|---|
                | a day of one device at 1h | \(dayAt1h.buckets) | \(ms(dayAt1h.p50)) ms | \(ms(dayAt1h.p99)) ms |
                | a day of one device at 1m | \(dayAt1m.buckets) | \(ms(dayAt1m.p50)) ms | \(ms(dayAt1m.p99)) ms |
                | the whole range of one device at 1d | \(yearAt1d.buckets) | \(ms(yearAt1d.p50)) ms | \(ms(yearAt1d.p99)) ms |
                """)
        }
    }

    /// One query as the MQTT surface answers it: parse, answer, render; returns the number of buckets.
    func answer(
        _ state: HubState, _ source: any HistorySource, _ subject: String, _ from: String, _ to: String, _ bucket: String
    ) throws -> Int {
        let query = try HistoryQuery.parse(subject: subject, quantity: "power", from: from, to: to, bucket: bucket)
        let data = HistoryJSON.data(try state.history(query, in: source))
        guard case .array(let items) = data, !data.serialized().isEmpty else { throw HubError.failed("no data") }
        return items.count
    }

    struct Timing { var p50: Double; var p99: Double; var buckets: Int }

    func measure(_ body: () throws -> Int) throws -> Timing {
        var samples: [Double] = []
        var buckets = 0
        for _ in 0..<queries {
            let t = ContinuousClock.now
            buckets = try body()
            samples.append((ContinuousClock.now - t).inSeconds)
        }
        samples.sort()
        return Timing(p50: samples[samples.count / 2], p99: samples[min(samples.count - 1, samples.count * 99 / 100)], buckets: buckets)
    }

    /// Bytes the files in `directory` take on disk (allocated blocks, not their sparse length).
    static func diskUsage(_ directory: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { total, name in
            var st = stat()
            return total + (stat(directory + "/" + name, &st) == 0 ? Int(st.st_blocks) * 512 : 0)
        }
    }

    func ms(_ s: Double) -> String { String(format: "%.3f", s * 1000) }
    func mib(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
}
