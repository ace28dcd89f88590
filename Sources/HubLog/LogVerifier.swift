/// The segment store's `verify`: checks every frame and the whole hash chain of a log directory
/// without opening the store (no lock, no repair), so it runs beside a running hub.
public enum LogVerifier {
    /// Checks every segment file in `directory`.
    ///
    /// - Parameters:
    ///   - directory: The segment store's directory.
    ///   - progress: Called with (bytes checked, total bytes) as the check advances.
    /// - Returns: What was checked, the head hash, and a torn tail if the newest segment ends in one
    ///   (classified as opening does: see `LogRecovery.classifyTail`).
    /// - Throws: ``EventLogError/corrupt(segment:offset:sequence:reason:)`` naming the first bad
    ///   segment, offset and sequence.
    public static func verify(directory: String, progress: ((Int, Int) -> Void)? = nil) throws -> VerifyReport {
        let names = try LogRecovery.segmentFiles(in: directory)
        var total = 0
        for name in names {
            let fd = try FileIO.openFile(directory + "/" + name, flags: 0)
            total += (try? FileIO.size(fd: fd, path: name)) ?? 0
            _ = closeFD(fd)
        }
        var report = VerifyReport(segments: names.count, records: 0, bytes: total, headHash: hex(RecordFormat.genesisHash))
        var checker = ChainChecker()
        var done = 0
        var lastProgress = 0
        for (position, name) in names.enumerated() {
            let path = directory + "/" + name
            if let problem = try LogRecovery.checkHeader(path: path, expectedFirst: checker.lastSequence + 1) {
                throw EventLogError.corrupt(segment: name, offset: 0, sequence: checker.lastSequence + 1, reason: problem.description)
            }
            let cursor = try SegmentCursor(path: path)
            var failure: EventLogError? = nil
            let ended = try cursor.scan(from: RecordFormat.segmentHeaderSize) { view, offset, length in
                if let fault = checker.check(view) {
                    failure = .corrupt(segment: name, offset: UInt64(offset), sequence: checker.lastSequence + 1, reason: fault)
                    return false
                }
                done += length
                if let progress, done - lastProgress >= 1 << 20 { lastProgress = done; progress(done, total) }
                return true
            }
            if let failure { throw failure }
            // The same rule as opening the log: a torn write is left for the next open to cut into
            // quarantine; anything else is corruption.
            switch try LogRecovery.classifyTail(
                ended, cursor: cursor, isLast: position == names.count - 1,
                nextSequence: checker.lastSequence + 1)
            {
            case nil:
                break
            case .torn(let offset, let reason)?:
                report.incompleteTail =
                    "segment \(name) ends in a torn write at offset \(offset) (\(reason)); "
                    + "the next open cuts it and keeps the bytes in a quarantine file"
            case .corrupt(let offset, let reason)?:
                throw EventLogError.corrupt(segment: name, offset: UInt64(offset), sequence: checker.lastSequence + 1, reason: reason)
            }
        }
        progress?(total, total)
        // The segments' headers and records: not the unused zeros after the newest segment's records.
        report.bytes = names.count * RecordFormat.segmentHeaderSize + done
        report.records = checker.lastSequence
        report.headHash = hex(checker.previousHash)
        return report
    }

    /// Lower-case hex digits of `bytes` (how chain hashes are shown and exported).
    ///
    /// - Parameter bytes: The bytes to show.
    /// - Returns: Two hex digits per byte.
    public static func hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        writeHex(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends ``hex(_:)``'s text to `out`.
    public static func writeHex(_ bytes: [UInt8], to out: inout [UInt8]) {
        for b in bytes {
            out.append(hexDigit(b >> 4))
            out.append(hexDigit(b & 0xF))
        }
    }

    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? UInt8(ascii: "0") + v : UInt8(ascii: "a") + v - 10 }
}

#if canImport(Glibc)
import Glibc
func closeFD(_ fd: Int32) -> Int32 { Glibc.close(fd) }
#elseif canImport(Darwin)
import Darwin
func closeFD(_ fd: Int32) -> Int32 { Darwin.close(fd) }
#endif
