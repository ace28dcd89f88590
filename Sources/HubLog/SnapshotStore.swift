/// Projection snapshots: opaque bytes together with the log sequence they cover, so start-up only
/// replays the tail. Each file is `HUBSNAP1`, u64 sequence, u32 length, u32 CRC32C, bytes; written
/// atomically (temp file, fsync, rename). The newest few are kept; a damaged one is skipped.
public struct SnapshotStore: Sendable {
    public let directory: String
    public var keep = 2
    static let magic = Array("HUBSNAP1".utf8)

    public init(directory: String) throws {
        self.directory = directory
        try FileIO.makeDirectory(directory)
    }

    public func save(sequence: UInt64, bytes: [UInt8]) throws {
        var file = Self.magic
        RecordFormat.appendLE(&file, sequence)
        RecordFormat.appendLE(&file, UInt32(bytes.count))
        RecordFormat.appendLE(&file, CRC32C.checksum(bytes))
        file += bytes
        let name = "snapshot-" + LogRecovery.segmentName(sequence).replacingSuffix(".seg", with: ".snap")
        try FileIO.writeAtomically(file, to: directory + "/" + name, directory: directory)
        let all = try names()
        for old in all.dropLast(keep) { FileIO.remove(directory + "/" + old) }
    }

    func names() throws -> [String] {
        try FileIO.listDirectory(directory).filter { $0.hasPrefix("snapshot-") && $0.hasSuffix(".snap") }
    }

    /// The newest sound snapshot covering at most `maxSequence`, with the reasons others were skipped.
    public func loadLatest(maxSequence: UInt64) throws -> (sequence: UInt64, bytes: [UInt8])? {
        for name in try names().reversed() {
            guard let bytes = try? FileIO.readAll(path: directory + "/" + name), bytes.count >= 24,
                  Array(bytes[0..<8]) == Self.magic else { continue }
            let (sequence, length, crc) = bytes.withUnsafeBytes {
                ($0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian,
                 Int($0.loadUnaligned(fromByteOffset: 16, as: UInt32.self).littleEndian),
                 $0.loadUnaligned(fromByteOffset: 20, as: UInt32.self).littleEndian)
            }
            guard bytes.count == 24 + length, sequence <= maxSequence else { continue }
            let body = Array(bytes[24...])
            guard CRC32C.checksum(body) == crc else { continue }
            return (sequence, body)
        }
        return nil
    }
}

extension String {
    func replacingSuffix(_ suffix: String, with replacement: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) + replacement : self
    }
}
