import BrokerHarness
import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import HubPostgres
import PostgresHarness

/// The two backends every contract test runs against.
enum Backend: String, CaseIterable, CustomStringConvertible, Sendable {
    case segments
    case postgres

    var description: String { rawValue }
}

/// A log of one backend that a test can open, close and open again.
struct LogPlace {
    let backend: Backend
    /// The data directory (snapshots, keys; the segment log in `log/`).
    let dataDirectory: String
    /// The PostgreSQL URL (nil for the segment log).
    let url: String?

    var paths: HubPaths { HubPaths(dataDirectory: dataDirectory, logURL: url) }

    func open(readOnly: Bool = false) async throws -> any EventStore {
        try await paths.openEventStore(readOnly: readOnly)
    }

    /// A fresh, empty log of `backend`; nil (the test is skipped, said once) when PostgreSQL is not installed.
    static func fresh(_ backend: Backend) throws -> LogPlace? {
        let dir = testRoot + "/\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        switch backend {
        case .segments:
            return LogPlace(backend: backend, dataDirectory: dir, url: nil)
        case .postgres:
            guard let server = try PostgresServer.shared() else { return nil }
            return LogPlace(backend: backend, dataDirectory: dir, url: try server.createDatabase())
        }
    }
}

/// This test process's directories, removed when it exits.
let testRoot: String = {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("hub-pg-tests-\(getpid())").path
    atexit {
        try? FileManager.default.removeItem(
            atPath: FileManager.default.temporaryDirectory.appendingPathComponent("hub-pg-tests-\(getpid())").path)
    }
    return root
}()

/// One proposed event with a recognisable payload.
func event(_ n: Int, type: String = "Noted") -> ProposedEvent {
    ProposedEvent(type: type, schemaVersion: 1, timestamp: 1_795_000_000_000_000 + Int64(n), payload: Array("payload \(n)".utf8))
}

func request(_ stream: String, _ events: [ProposedEvent], expected: ExpectedVersion = .any, commandId: String? = nil) -> AppendRequest {
    AppendRequest(stream: stream, expected: expected, causation: Causation(commandId: commandId, actor: "test"), events: events)
}

/// Every record of the log, in order.
func allRecords(_ store: any EventStore) async throws -> [EventRecord] {
    var records: [EventRecord] = []
    try await store.read(from: 1, through: store.lastSequence) {
        records.append($0); return true
    }
    return records
}
