import Foundation
import HubDomain
import HubEngine
import HubHTTP
import HubLog
import HubMQTT

/// `hub export` / `hub import`: the whole log as JSON Lines, each line an event with its chain hash.
/// Both stream: memory stays bounded whatever the log's or the file's size.
/// Export -> import into an empty data directory -> export gives identical output, whatever the
/// backends on either side (the chain hash is defined over the record, not over a backend's files).
public enum LogTransfer {
    /// Writes every event to `path` ("-" for standard output).
    ///
    /// - Parameters:
    ///   - store: The log to export (any backend).
    ///   - path: The file to write (written to `path.partial` and renamed when complete), or "-".
    /// - Returns: The number of events written.
    /// - Throws: When the log cannot be read or the file cannot be written.
    @discardableResult
    public static func export(store: any EventStore, to path: String) async throws -> UInt64 {
        let writer = try LineWriter(path: path)
        var count: UInt64 = 0
        try await store.readViews(from: 1, through: store.lastSequence) { view in
            try writer.write(EventLines.exportLine(view))
            count += 1
            return true
        }
        try writer.finish()
        return count
    }

    /// Imports an export file in two passes over it, so memory stays bounded whatever its size:
    /// the first checks every line (JSON, event shapes, gapless sequence, stream versions, and the
    /// hash chain when the lines carry hashes) and writes nothing unless every line is sound; the
    /// second reads the file again and appends it in batches. The data directory must hold no
    /// events; its own event log (see ``HubPaths/openEventStore(readOnly:options:)``) receives them.
    ///
    /// - Parameters:
    ///   - path: The exported JSON Lines file.
    ///   - paths: The data directory to import into.
    /// - Returns: The number of events in the log afterwards.
    /// - Throws: `EventLines.LineError` naming the first bad line, `HubError` when the directory
    ///   already holds events, when a log already there cannot be read (its error named), or the
    ///   file changed between the passes, or what the store throws.
    @discardableResult
    public static func importFile(_ path: String, into paths: HubPaths) async throws -> UInt64 {
        let checked = try check(fileAt: path)  // a bad file is refused before anything is made
        let place = paths.logURL == nil ? paths.dataDirectory : paths.logDescription
        if paths.mayHoldLog {
            // A log that cannot be read is not an empty one: that error is said, and nothing is made.
            let existing: (any EventStore)?
            do {
                existing = try await paths.openEventStore(readOnly: true)
            } catch EventLogError.noLog {
                existing = nil
            } catch {
                throw HubError.failed("cannot tell whether \(place) holds events: \(error)")
            }
            if let existing {
                let count = existing.lastSequence
                await existing.close()
                if count > 0 { throw HubError.failed("\(place) already holds \(count) events; import needs an empty log") }
            }
        }
        let store = try await paths.openEventStore()
        do {
            // On PostgreSQL, a hub holding the lease refuses the import; otherwise it holds the lease while it writes.
            let lease = try await ToolLease.take(store, for: "hub import")
            let count = try await write(path, into: store, expecting: checked)
            try await lease?.release()
            await store.close()
            return count
        } catch {
            await store.close()
            throw error
        }
    }

    /// The first pass: checks every line of an export file, keeping nothing but the chain's state.
    ///
    /// - Returns: The number of events and the chain hash after the last.
    /// - Throws: `EventLines.LineError` naming the first bad line, `HubError` when the file cannot be read.
    public static func check(fileAt path: String) throws -> (events: UInt64, lastHash: [UInt8]) {
        let reader = try ExportReader(path: path)
        while try reader.next() != nil {}
        return (reader.count, reader.previousHash)
    }

    /// Imports an export file into an empty store of any backend in two passes: every line is checked
    /// first (nothing is written unless all are sound), then appended batch by batch, keeping the
    /// streams, causations and command ids, so the imported log has the same sequences and hashes.
    /// Memory stays bounded whatever the file's size.
    ///
    /// - Returns: The store's last sequence afterwards.
    /// - Throws: `EventLines.LineError` naming the first bad line; `HubError` when the store already
    ///   holds events or the file changed between the passes; the first append's error.
    @discardableResult
    public static func importFile(_ path: String, into store: any EventStore) async throws -> UInt64 {
        try await write(path, into: store, expecting: check(fileAt: path))
    }

    /// The second pass: appends a checked file to an empty store, batch by batch.
    static func write(
        _ path: String, into store: any EventStore, expecting checked: (events: UInt64, lastHash: [UInt8])
    ) async throws -> UInt64 {
        guard store.lastSequence == 0 else {
            throw HubError.failed("the event log already holds \(store.lastSequence) events; import needs an empty one")
        }
        let reader = try ExportReader(path: path)
        var batch = ImportBatch()
        do {
            while let record = try reader.next() {
                if batch.add(record) { try await append(batch.take(), to: store) }
            }
        } catch let error as EventLines.LineError {
            throw HubError.failed("\(path) changed while it was imported (\(error)); \(store.lastSequence) events were written")
        }
        batch.close()
        try await append(batch.take(), to: store)
        guard reader.count == checked.events, reader.previousHash == checked.lastHash else {
            throw HubError.failed("\(path) changed while it was imported; \(store.lastSequence) events were written")
        }
        return store.lastSequence
    }

    static func append(_ requests: [AppendRequest], to store: any EventStore) async throws {
        guard !requests.isEmpty else { return }
        for result in await store.appendAll(requests) { _ = try result.get() }
    }
}

/// Consecutive records grouped into append requests: one per command (consecutive events of one
/// stream with one command id), handed over about ``limit`` events at a time.
struct ImportBatch {
    static let limit = 2000
    private var requests: [AppendRequest] = []
    private var open: AppendRequest?
    private var events = 0

    /// Adds a record; true when the batch is full and should be taken.
    mutating func add(_ record: EventRecord) -> Bool {
        let event = ProposedEvent(
            type: record.type, schemaVersion: record.schemaVersion, timestamp: record.timestamp, payload: record.payload)
        if var current = open, current.causation.commandId != nil, current.stream == record.stream, current.causation == record.causation {
            open = nil  // no copy of the events while appending
            current.events.append(event)
            open = current
        } else {
            close()
            open = AppendRequest(stream: record.stream, expected: .any, causation: record.causation, events: [event])
        }
        events += 1
        return events >= Self.limit && !requests.isEmpty
    }

    /// Ends the open request (at the end of the file).
    mutating func close() {
        if let open { requests.append(open) }
        open = nil
    }

    /// The complete requests; the open one stays.
    mutating func take() -> [AppendRequest] {
        defer {
            requests = []
            events = open?.events.count ?? 0
        }
        return requests
    }
}

/// Reads an export file line by line in fixed-size chunks and checks each line against the ones
/// before it (sequence, stream versions, hash chain); holds one chunk and the streams' versions.
final class ExportReader {
    let path: String
    private let handle: FileHandle
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    private var lineNumber = 0
    private(set) var count: UInt64 = 0
    private(set) var previousHash = RecordFormat.genesisHash
    private var streams: [String: UInt64] = [:]
    private var scratch: [UInt8] = []
    static let chunk = 1 << 20

    init(path: String) throws {
        self.path = path
        guard let handle = FileHandle(forReadingAtPath: path) else { throw HubError.failed("cannot read \(path)") }
        self.handle = handle
    }

    deinit { try? handle.close() }

    /// The next checked record, or nil at the end of the file.
    func next() throws -> EventRecord? {
        guard let line = try nextLine() else { return nil }
        lineNumber += 1
        if line.isEmpty {
            // A file that is one newline is empty; otherwise an empty line is an error.
            if lineNumber == 1, try nextLine() == nil { return nil }
            throw EventLines.LineError(line: lineNumber, reason: "empty line")
        }
        guard let text = String(validating: line, as: UTF8.self) else {
            throw EventLines.LineError(line: lineNumber, reason: "not valid UTF-8")
        }
        let parsed = try EventLines.parse(text, line: lineNumber)
        let record = parsed.record
        let expected = count + 1
        guard record.sequence == expected else {
            throw EventLines.LineError(line: lineNumber, reason: "sequence \(record.sequence) where \(expected) was expected")
        }
        let expectedVersion = streams[record.stream].map { $0 + 1 } ?? 0
        guard record.streamVersion == expectedVersion else {
            throw EventLines.LineError(
                line: lineNumber, reason: "stream \(record.stream) version \(record.streamVersion) where \(expectedVersion) was expected")
        }
        streams[record.stream] = record.streamVersion
        scratch.removeAll(keepingCapacity: true)
        let hash = try RecordFormat.appendFrame(to: &scratch, record: record, previousHash: previousHash)
        if let claimed = parsed.hash, claimed != LogVerifier.hex(hash) {
            throw EventLines.LineError(line: lineNumber, reason: "hash does not continue the chain: the line or one before it was altered")
        }
        previousHash = hash
        count += 1
        return record
    }

    /// The next line without its newline; the last line needs none. Nil at the end.
    private func nextLine() throws -> ArraySlice<UInt8>? {
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                defer { start = newline + 1 }
                return buffer[start..<newline]
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                defer { start = buffer.count }
                return buffer[start...]
            }
            buffer.removeFirst(start)
            start = 0
            let data = try handle.read(upToCount: Self.chunk) ?? Data()
            if data.isEmpty { atEnd = true } else { buffer.append(contentsOf: data) }
        }
    }
}

/// Buffered line output to a file (written to a temporary name and renamed when complete) or stdout.
final class LineWriter {
    let path: String
    let handle: FileHandle
    let temporary: String?
    var buffer: [UInt8] = []

    init(path: String) throws {
        self.path = path
        if path == "-" {
            handle = FileHandle.standardOutput
            temporary = nil
        } else {
            let temp = path + ".partial"
            guard FileManager.default.createFile(atPath: temp, contents: nil) else {
                throw HubError.failed("cannot create \(temp)")
            }
            handle = try FileHandle(forWritingTo: URL(fileURLWithPath: temp))
            temporary = temp
        }
        buffer.reserveCapacity(1 << 20)
    }

    func write(_ line: String) throws {
        buffer += line.utf8
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= 1 << 20 { try flush() }
    }

    func flush() throws {
        guard !buffer.isEmpty else { return }
        try handle.write(contentsOf: buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    func finish() throws {
        try flush()
        if let temporary {
            try handle.close()
            _ = try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.moveItem(atPath: temporary, toPath: path)
        }
    }
}
