import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubBench
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import HubPostgres
import Synchronization

struct LogBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Durable appends and replay: the hub's log against SQLite (WAL, synchronous=FULL) in the same run.")

    @Option(help: "Events in the log when replay is measured.")
    var events = 1_000_000
    @Option(help: "Appends by one writer, one event each, awaited one at a time.")
    var sequential = 5_000
    @Option(help: "Appends by the concurrent writers in total.")
    var concurrent = 20_000
    @Option(help: "Concurrent writers.")
    var writers = 64
    @Option(help: "Where to put the two stores (removed afterwards).")
    var dir = "./hub-bench"
    @Option(help: "Also write the Markdown table to this file.")
    var markdown: String?
    @Option(
        help: "Bytes the hub log's newest segment is extended by, in written zeros, ahead of its records (0: it grows with every write).")
    var preallocation = SegmentStoreOptions().preallocation
    @Option(
        help: ArgumentHelp(
            "Also run it on the PostgreSQL log at this URL (an empty database: postgres://user@host:5432/db), beside SQLite.",
            valueName: "url"))
    var postgres: String?

    func run() async throws {
        try await Console.guarded {
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let config = LogBenchmark.Configuration(
                replayEventCount: events, sequentialAppends: sequential,
                concurrentWriters: writers, concurrentAppendsTotal: concurrent, bulkBatchSize: 100)

            // The disk's floor for one writer, just before the logs' own phase a).
            let floor = try await FsyncFloor.measure(directory: root, writes: sequential)
            let hubStore = try SegmentStore(directory: root + "/hub-log", options: SegmentStoreOptions(preallocation: preallocation))
            let hubResult = try await LogBenchmark(configuration: config, workload: DomainWorkload.make()).run(
                store: hubStore, label: "hub log",
                replay: { _ in },
                replayAll: { through in
                    // Exactly what the hub does at start-up: Hub.fold.
                    var state = HubState()
                    let unreadable = try await Hub.fold(store: hubStore, into: &state, through: through)
                    guard unreadable == 0, state.lastSequence == through else {
                        throw HubError.failed("replay folded through \(state.lastSequence) with \(unreadable) unreadable events")
                    }
                    return (through, 0)
                })
            hubStore.close()

            let sqlite = try SQLiteEventStore(path: root + "/sqlite.db")
            var sqliteState = HubState()
            let sqliteResult = try await LogBenchmark(configuration: config, workload: DomainWorkload.make()).run(
                store: sqlite, label: "SQLite",
                replay: { record in
                    let event = try HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
                    sqliteState.apply(
                        event,
                        context: EventContext(
                            sequence: record.sequence, timestamp: record.timestamp,
                            actor: record.causation.actor, commandId: record.causation.commandId))
                })
            sqlite.close()

            let machine = machineDescription(dataDirectory: root) + ", CRC32C " + (CRC32C.hardware ? "in hardware" : "by table")
            var table = LogBenchmarkResult.table(hub: hubResult, sqlite: sqliteResult, machine: machine)
            table += "\n" + floor.lines(hubOneWriter: hubResult.sequential.appendsPerSecond, writes: sequential) + "\n"
            if let postgres {
                let store = try await PostgresEventStore.open(location: PostgresLocation(url: postgres))
                let result = try await LogBenchmark(configuration: config, workload: DomainWorkload.make()).run(
                    store: store, label: "PostgreSQL", replay: { _ in },
                    replayAll: { through in
                        var state = HubState()
                        let unreadable = try await Hub.fold(store: store, into: &state, through: through)
                        guard unreadable == 0, state.lastSequence == through else {
                            throw HubError.failed("replay folded through \(state.lastSequence) with \(unreadable) unreadable events")
                        }
                        return (through, 0)
                    })
                await store.close()
                table +=
                    "\nThe same on PostgreSQL (\(store.location), synchronous_commit on; \(store.transactionsCommitted) transactions, \(store.writerStatements) writer statements):\n\n"
                    + LogBenchmarkResult.table(hub: result, sqlite: sqliteResult, machine: machine, hubLabel: "PostgreSQL")
            }
            print(table)
            if let markdown { try table.write(toFile: markdown, atomically: true, encoding: .utf8) }
        }
    }
}

/// Real domain events for the benchmark: each stream starts with its registration (a device
/// registered, an animal admitted), then readings, switches, availability and activations.
enum DomainWorkload {
    static func make() -> BenchmarkWorkload {
        let seen = Mutex(Set<String>())
        return BenchmarkWorkload(encoder: { kind, stream, index in
            let key = StreamKey(stream: stream)
            let id = key?.id ?? "x"
            let isAnimal = key?.animalId != nil
            let first = seen.withLock { $0.insert(stream).inserted }
            let at = 1_767_225_600_000_000 + Int64(index) * 1_000
            let event: HubEvent
            if first {
                event =
                    isAnimal
                    ? .animalAdmitted(
                        Admission(
                            animal: id, name: "Animal \(id)", gender: "female", birthDate: "2021-04-02", weightKg: 23.5,
                            species: "dog", breed: "mixed", coat: "brown", ownerName: nil, ownerAddress: nil,
                            ownerPhone: nil, motive: "observation", veterinarian: "Dr. Lima", observations: nil,
                            photo: nil, beacon: "1de4b189115e45f6b44e5093522699\(String(index % 100, radix: 16))"))
                    : .deviceRegistered(
                        DeviceRegistered(
                            device: id, driver: "powerplug", name: "Plug \(id)",
                            config: #"{"host":"10.0.0.\#(index % 250)","port":230}"#))
            } else if isAnimal {
                event = .readingRecorded(
                    ReadingRecorded(
                        subject: .animal(id), quantity: index % 2 == 0 ? .heartRate : .temperature,
                        value: index % 2 == 0 ? Double(70 + index % 40) : 38.5 + Double(index % 10) / 10,
                        measuredAt: at))
            } else {
                switch kind {
                case .readingRecorded:
                    let quantity: Quantity = [.power, .voltage, .current, .energy][index % 4]
                    event = .readingRecorded(
                        ReadingRecorded(
                            subject: .device(id), quantity: quantity,
                            value: quantity == .energy ? Double(index) : 100 + Double(index % 900) / 10,
                            measuredAt: at))
                case .switchToggled:
                    event = .switchToggled(SwitchToggled(device: id, state: index % 40 == 0 ? .on : .off, cause: .command))
                case .availabilityChanged:
                    event = .availabilityChanged(AvailabilityChanged(device: id, available: index % 40 != 5, reason: "status timeout"))
                case .activationChanged:
                    event = .activationChanged(
                        ActivationChanged(
                            device: id, change: .updated, name: "lawn",
                            start: 1_767_290_400 + Int64(index % 100) * 60,
                            lengthMinutes: 30, periodMinutes: 1440))
                }
            }
            return (event.typeName, event.schemaVersion, event.encodePayload())
        })
    }
}
