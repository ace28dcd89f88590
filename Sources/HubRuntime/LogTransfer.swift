import Foundation
import HubDomain
import HubLog

/// `hub export` / `hub import`: the whole log as JSON Lines, each line an event with its chain hash.
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
    public static func export(store: any EventStore, to path: String) throws -> UInt64 {
        let writer = try LineWriter(path: path)
        var count: UInt64 = 0
        try store.readViews(from: 1, through: store.lastSequence) { view in
            let record = view.record
            let event = try? HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
            try writer.write(EventLines.json(record, event: event, hash: LogVerifier.hex(view.hash)).serialized())
            count += 1
            return true
        }
        try writer.finish()
        return count
    }

    /// Reads and checks the whole file first (JSON, event shapes, gapless sequence, stream versions,
    /// and the hash chain when the lines carry hashes); writes nothing unless every line is sound.
    /// The data directory must hold no events; its own event log (see
    /// ``HubPaths/openEventStore(readOnly:options:)``) receives them.
    ///
    /// - Parameters:
    ///   - path: The exported JSON Lines file.
    ///   - paths: The data directory to import into.
    /// - Returns: The number of events in the log afterwards.
    /// - Throws: `EventLines.LineError` naming the first bad line, `HubError` when the directory
    ///   already holds events, or what the store throws.
    @discardableResult
    public static func importFile(_ path: String, into paths: HubPaths) async throws -> UInt64 {
        let records = try parse(fileAt: path)
        if FileManager.default.fileExists(atPath: paths.log) {
            let existing = try? paths.openEventStore(readOnly: true)
            if let existing, existing.lastSequence > 0 {
                throw HubError.failed("\(paths.dataDirectory) already holds \(existing.lastSequence) events; import needs an empty data directory")
            }
        }
        let store = try paths.openEventStore()
        do {
            let count = try await importRecords(records, into: store)
            await store.close()
            return count
        } catch {
            await store.close()
            throw error
        }
    }

    /// Appends checked records (from ``parse(fileAt:)``) to an empty store, keeping their streams,
    /// causations and command ids, so the imported log has the same sequences and chain hashes.
    ///
    /// - Parameters:
    ///   - records: Records in sequence order from 1, gapless.
    ///   - store: An empty store of any backend.
    /// - Returns: The store's last sequence afterwards.
    /// - Throws: `HubError` when the store already holds events, or the first append's error.
    @discardableResult
    public static func importRecords(_ records: [EventRecord], into store: any EventStore) async throws -> UInt64 {
        guard store.lastSequence == 0 else {
            throw HubError.failed("the event log already holds \(store.lastSequence) events; import needs an empty one")
        }
        // One append per command (consecutive events of one stream with one command id), many per commit.
        var requests: [AppendRequest] = []
        var i = 0
        while i < records.count {
            let first = records[i]
            var j = i + 1
            if first.causation.commandId != nil {
                while j < records.count, records[j].stream == first.stream, records[j].causation == first.causation { j += 1 }
            }
            requests.append(AppendRequest(stream: first.stream, expected: .any, causation: first.causation,
                                          events: records[i..<j].map {
                                              ProposedEvent(type: $0.type, schemaVersion: $0.schemaVersion, timestamp: $0.timestamp, payload: $0.payload)
                                          }))
            i = j
        }
        var offset = 0
        while offset < requests.count {
            let chunk = Array(requests[offset..<min(offset + 2000, requests.count)])
            for result in await store.appendAll(chunk) { _ = try result.get() }
            offset += chunk.count
        }
        return store.lastSequence
    }

    /// Parses and checks every line of an export file.
    public static func parse(fileAt path: String) throws -> [EventRecord] {
        guard var data = FileManager.default.contents(atPath: path) else {
            throw HubError.failed("cannot read \(path)")
        }
        if data.last == UInt8(ascii: "\n") { data.removeLast() }
        if data.isEmpty { return [] }
        var records: [EventRecord] = []
        var streams: [String: UInt64] = [:]
        var previousHash = RecordFormat.genesisHash
        var scratch: [UInt8] = []
        var lineNumber = 0
        for rawLine in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            if rawLine.isEmpty { throw EventLines.LineError(line: lineNumber, reason: "empty line") }
            guard let text = String(validating: rawLine, as: UTF8.self) else {
                throw EventLines.LineError(line: lineNumber, reason: "not valid UTF-8")
            }
            let parsed = try EventLines.parse(text, line: lineNumber)
            let record = parsed.record
            let expected = UInt64(records.count + 1)
            guard record.sequence == expected else {
                throw EventLines.LineError(line: lineNumber, reason: "sequence \(record.sequence) where \(expected) was expected")
            }
            let expectedVersion = streams[record.stream].map { $0 + 1 } ?? 0
            guard record.streamVersion == expectedVersion else {
                throw EventLines.LineError(line: lineNumber, reason: "stream \(record.stream) version \(record.streamVersion) where \(expectedVersion) was expected")
            }
            streams[record.stream] = record.streamVersion
            scratch.removeAll(keepingCapacity: true)
            let hash = try RecordFormat.appendFrame(to: &scratch, record: record, previousHash: previousHash)
            if let claimed = parsed.hash, claimed != LogVerifier.hex(hash) {
                throw EventLines.LineError(line: lineNumber, reason: "hash does not continue the chain: the line or one before it was altered")
            }
            previousHash = hash
            records.append(record)
        }
        return records
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
