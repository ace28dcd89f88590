import Crypto

/// Projection snapshots, each bound to the log it was taken from, so start-up only replays the tail.
///
/// A file is `HUBSNAP2`, u64 sequence, the log's 32-byte chain hash at that sequence, u32 length,
/// u32 CRC32C of the bytes, a 32-byte seal (HMAC-SHA256 under this directory's `seal.key` over the
/// sequence, the chain hash and the bytes), then the bytes; written atomically (temp file, fsync,
/// rename). The newest few are kept.
///
/// A snapshot is used only when it is sound, carries this directory's seal, and records the chain
/// hash the log has at its sequence (``loadLatest(chainHash:)``). One that fails is **set aside**:
/// renamed to `<name>.set-aside` (never used again, never deleted), with a line saying why.
public struct SnapshotStore: Sendable {
    /// The directory holding the snapshot files and the seal key.
    public let directory: String
    /// How many snapshots ``save(sequence:chainHash:bytes:)`` keeps.
    public var keep = 2
    /// What opening the directory did (a damaged seal key set aside), in words for the operator.
    public private(set) var notes: [String] = []
    /// The seal key; nil only for a read-only look at a directory that has none.
    let key: [UInt8]?
    static let magic = Array("HUBSNAP2".utf8)
    static let headerSize = 8 + 8 + 32 + 4 + 4 + 32
    static let keyName = "seal.key"
    static let setAsideSuffix = ".set-aside"

    /// A snapshot read back from its file.
    public struct Snapshot: Sendable {
        /// The file's name in the directory.
        public var name: String
        /// The last log sequence the bytes cover.
        public var sequence: UInt64
        /// The log's chain hash at ``sequence`` when the snapshot was taken.
        public var chainHash: [UInt8]
        /// The snapshot's content.
        public var bytes: [UInt8]
    }

    /// Opens (making if needed) the snapshot directory and its seal key.
    ///
    /// - Parameters:
    ///   - directory: Where the snapshots are kept.
    ///   - readOnly: Make nothing (for `hub verify` beside a running hub). Without a readable key,
    ///     seals are not checked (``checksSeals`` is false).
    /// - Throws: ``EventLogError/io(path:operation:errno:)`` when the directory or key cannot be made.
    public init(directory: String, readOnly: Bool = false) throws {
        self.directory = directory
        let keyPath = directory + "/" + Self.keyName
        if readOnly {
            let bytes = try? FileIO.readAll(path: keyPath)
            key = bytes?.count == 32 ? bytes : nil
            return
        }
        try FileIO.makeDirectory(directory)
        if FileIO.exists(keyPath), let bytes = try? FileIO.readAll(path: keyPath), bytes.count == 32 {
            key = bytes
            return
        }
        if FileIO.exists(keyPath) {
            let aside = try Self.freeName(directory: directory, base: Self.keyName + Self.setAsideSuffix)
            try FileIO.rename(keyPath, directory + "/" + aside)
            notes.append(
                "snapshot seal key \(keyPath) is damaged: set aside as \(aside); a new key is made and older snapshots are set aside")
        }
        var generator = SystemRandomNumberGenerator()
        let fresh = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        try FileIO.writeAtomically(fresh, to: keyPath, directory: directory, mode: 0o600)
        key = fresh
    }

    /// Writes a snapshot of `bytes`, bound to the log by `chainHash`, and drops all but the newest ``keep``.
    ///
    /// - Parameters:
    ///   - sequence: The last log sequence the bytes cover.
    ///   - chainHash: The log's chain hash at `sequence` (``EventStore/chainHash(at:)``).
    ///   - bytes: The snapshot's content.
    /// - Throws: ``EventLogError/io(path:operation:errno:)``; ``EventLogError/invalid(_:)`` when read-only.
    public func save(sequence: UInt64, chainHash: [UInt8], bytes: [UInt8]) throws {
        guard let key else { throw EventLogError.invalid("the snapshot directory \(directory) was opened read-only") }
        var file = Self.magic
        RecordFormat.appendLE(&file, sequence)
        file += chainHash
        RecordFormat.appendLE(&file, UInt32(bytes.count))
        RecordFormat.appendLE(&file, CRC32C.checksum(bytes))
        file += Self.seal(key: key, sequence: sequence, chainHash: chainHash, bytes: bytes)
        file += bytes
        try FileIO.writeAtomically(file, to: directory + "/" + Self.name(sequence), directory: directory)
        let all = try names()
        for old in all.dropLast(keep) { FileIO.remove(directory + "/" + old) }
    }

    static func name(_ sequence: UInt64) -> String {
        "snapshot-" + LogRecovery.segmentName(sequence).replacingSuffix(".seg", with: ".snap")
    }

    static func seal(key: [UInt8], sequence: UInt64, chainHash: [UInt8], bytes: [UInt8]) -> [UInt8] {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: key))
        var header: [UInt8] = []
        RecordFormat.appendLE(&header, sequence)
        hmac.update(data: header)
        hmac.update(data: chainHash)
        hmac.update(data: bytes)
        return Array(hmac.finalize())
    }

    /// The names of the snapshot files (not those set aside), oldest first.
    ///
    /// - Returns: File names in the directory.
    /// - Throws: ``EventLogError/io(path:operation:errno:)`` when the directory cannot be listed.
    public func names() throws -> [String] {
        try FileIO.listDirectory(directory).filter { $0.hasPrefix("snapshot-") && $0.hasSuffix(".snap") }
    }

    /// Whether ``read(_:)`` checks seals (false only read-only without a readable key).
    public var checksSeals: Bool { key != nil }

    /// Reads one snapshot file and checks its frame and seal (not yet its binding to the log).
    ///
    /// - Parameter name: A name from ``names()``.
    /// - Returns: The snapshot, or why it cannot be used.
    public func read(_ name: String) -> Result<Snapshot, SnapshotProblem> {
        guard let bytes = try? FileIO.readAll(path: directory + "/" + name) else { return .failure(.unreadable) }
        if bytes.count >= 8, Array(bytes[0..<8]) == Array("HUBSNAP1".utf8) { return .failure(.unbound) }
        guard bytes.count >= Self.headerSize, Array(bytes[0..<8]) == Self.magic else { return .failure(.damaged("not a snapshot file")) }
        let (sequence, length, crc) = bytes.withUnsafeBytes {
            (
                $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian,
                Int($0.loadUnaligned(fromByteOffset: 48, as: UInt32.self).littleEndian),
                $0.loadUnaligned(fromByteOffset: 52, as: UInt32.self).littleEndian
            )
        }
        guard bytes.count == Self.headerSize + length else {
            return .failure(.damaged("\(bytes.count - Self.headerSize) bytes where the header says \(length)"))
        }
        let chainHash = Array(bytes[16..<48])
        let body = Array(bytes[Self.headerSize...])
        guard CRC32C.checksum(body) == crc else { return .failure(.damaged("CRC32C mismatch")) }
        if let key, Self.seal(key: key, sequence: sequence, chainHash: chainHash, bytes: body) != Array(bytes[56..<88]) {
            return .failure(.badSeal)
        }
        return .success(Snapshot(name: name, sequence: sequence, chainHash: chainHash, bytes: body))
    }

    /// The newest snapshot the log vouches for. Every newer one that fails is set aside, with a note.
    ///
    /// - Parameter chainHash: The log's chain hash at a sequence, or nil beyond its end
    ///   (``EventStore/chainHash(at:)``).
    /// - Returns: The snapshot to use (or nil: replay from the start) and a line per file set aside.
    /// - Throws: What `chainHash` throws; ``EventLogError/io(path:operation:errno:)`` when a file
    ///   cannot be set aside.
    public nonisolated(nonsending) func loadLatest(
        chainHash: nonisolated(nonsending) (UInt64) async throws -> [UInt8]?
    ) async throws -> (snapshot: Snapshot?, notes: [String]) {
        var notes: [String] = []
        for name in try names().reversed() {
            switch read(name) {
            case .failure(let problem):
                notes.append(try setAside(name, because: problem.description))
            case .success(let snapshot):
                if let problem = Self.bindingProblem(snapshot, logHash: try await chainHash(snapshot.sequence)) {
                    notes.append(try setAside(name, because: problem))
                    continue
                }
                return (snapshot, notes)
            }
        }
        return (nil, notes)
    }

    /// Why a sound snapshot is not bound to the log, or nil when the log has its chain hash.
    ///
    /// - Parameters:
    ///   - snapshot: A snapshot read with ``read(_:)``.
    ///   - logHash: The log's chain hash at the snapshot's sequence (nil beyond the log's end).
    /// - Returns: Why the snapshot does not match the log, or nil.
    public static func bindingProblem(_ snapshot: Snapshot, logHash: [UInt8]?) -> String? {
        guard let logHash else { return "it covers sequence \(snapshot.sequence), beyond the end of the log" }
        guard logHash == snapshot.chainHash else {
            return "it records chain hash \(LogVerifier.hex(snapshot.chainHash).prefix(16))… at sequence \(snapshot.sequence), "
                + "the log has \(LogVerifier.hex(logHash).prefix(16))… (taken from a log that has changed since)"
        }
        return nil
    }

    /// Renames a snapshot file so it is never used (nor pruned) again; returns the line to log.
    ///
    /// - Parameters:
    ///   - name: The snapshot file's name.
    ///   - reason: Why it is set aside.
    /// - Returns: A line naming the file, the new name and the reason.
    /// - Throws: ``EventLogError/io(path:operation:errno:)`` when it cannot be renamed.
    public func setAside(_ name: String, because reason: String) throws -> String {
        let aside = try Self.freeName(directory: directory, base: name + Self.setAsideSuffix)
        try FileIO.rename(directory + "/" + name, directory + "/" + aside)
        try FileIO.syncDirectory(directory)
        return "snapshot \(name) set aside as \(aside) (kept, never used): \(reason); the read models come from the log"
    }

    static func freeName(directory: String, base: String) throws -> String {
        var name = base, n = 1
        while FileIO.exists(directory + "/" + name) { n += 1; name = base + "-\(n)" }
        return name
    }
}

/// Why a snapshot file cannot be used.
public enum SnapshotProblem: Error, Equatable, CustomStringConvertible {
    /// The file cannot be read.
    case unreadable
    /// A `HUBSNAP1` file from before snapshots were bound to the log.
    case unbound
    /// Not a sound snapshot file.
    case damaged(String)
    /// The seal does not match the content.
    case badSeal

    /// The problem in words.
    public var description: String {
        switch self {
        case .unreadable: return "the file cannot be read"
        case .unbound: return "written by an older hub version, without a binding to the log"
        case .damaged(let why): return "damaged (\(why))"
        case .badSeal: return "its seal does not match its content (edited after it was written, or sealed with another key)"
        }
    }
}

extension String {
    func replacingSuffix(_ suffix: String, with replacement: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) + replacement : self
    }
}
