/// What `verify` found in a sound log.
public struct VerifyReport: Sendable {
    public var segments: Int
    public var records: UInt64
    public var bytes: Int
    /// Hex SHA-256 chain hash of the last record: keep it to detect later truncation or rewriting.
    public var headHash: String
    /// Set when the newest segment ends inside a record (a crash mid-append): opening cuts it.
    public var incompleteTail: String?
}

/// Checks every frame and the whole hash chain without changing anything.
public enum LogVerifier {
    /// Throws `EventLogError.corrupt` naming the first bad segment, offset and sequence.
    /// `progress` is called with (bytes checked, total bytes) as the check advances.
    public static func verify(directory: String, progress: ((Int, Int) -> Void)? = nil) throws -> VerifyReport {
        let names = try LogRecovery.segmentFiles(in: directory)
        var total = 0
        for name in names {
            let fd = try FileIO.openFile(directory + "/" + name, flags: 0)
            total += (try? FileIO.size(fd: fd, path: name)) ?? 0
            _ = closeFD(fd)
        }
        var report = VerifyReport(segments: names.count, records: 0, bytes: total, headHash: hex(RecordFormat.genesisHash), incompleteTail: nil)
        var lastSequence: UInt64 = 0
        var previousHash = RecordFormat.genesisHash
        var streams: [String: UInt64] = [:]
        var done = 0
        var lastProgress = 0
        for (position, name) in names.enumerated() {
            let path = directory + "/" + name
            if let problem = try LogRecovery.checkHeader(path: path, expectedFirst: lastSequence + 1) {
                throw EventLogError.corrupt(segment: name, offset: 0, sequence: lastSequence + 1, reason: problem.description)
            }
            let cursor = try SegmentCursor(path: path)
            var failure: EventLogError? = nil
            var segmentEnd = RecordFormat.segmentHeaderSize
            let ended = try cursor.scan(from: RecordFormat.segmentHeaderSize) { view, offset, length in
                let expected = lastSequence + 1
                func fail(_ reason: String) -> Bool {
                    failure = .corrupt(segment: name, offset: UInt64(offset), sequence: expected, reason: reason)
                    return false
                }
                if view.sequence != expected {
                    return fail("sequence \(view.sequence) where \(expected) was expected (a record was removed, added or moved)")
                }
                let stream = view.stream
                let expectedVersion = streams[stream].map { $0 + 1 } ?? 0
                if view.streamVersion != expectedVersion {
                    return fail("stream \(stream) version \(view.streamVersion) where \(expectedVersion) was expected")
                }
                let computed = RecordFormat.chainHash(previous: previousHash, body: view.body)
                let stored = view.hash
                if computed != stored {
                    return fail("hash chain broken: the record's content or order was altered")
                }
                streams[stream] = view.streamVersion
                previousHash = stored
                lastSequence = view.sequence
                done += length
                segmentEnd = offset + length
                if let progress, done - lastProgress >= 1 << 20 { lastProgress = done; progress(done, total) }
                return true
            }
            if let failure { throw failure }
            switch ended {
            case .end, .stopped: break
            case .incomplete(let offset):
                if position == names.count - 1 {
                    report.incompleteTail = "segment \(name) ends inside a record at offset \(offset) (a torn write; the next open cuts it)"
                } else {
                    throw EventLogError.corrupt(segment: name, offset: UInt64(offset), sequence: lastSequence + 1,
                                                reason: "record cut short in a segment that is not the last")
                }
            case .damaged(let offset, let reason):
                throw EventLogError.corrupt(segment: name, offset: UInt64(offset), sequence: lastSequence + 1, reason: reason)
            }
            _ = segmentEnd
        }
        progress?(total, total)
        report.records = lastSequence
        report.headHash = hex(previousHash)
        return report
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }
}

#if canImport(Glibc)
import Glibc
func closeFD(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#elseif canImport(Darwin)
import Darwin
func closeFD(_ fd: Int32) -> Int32 { Darwin.close(fd) }
#endif
