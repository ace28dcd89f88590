import Crypto

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The on-disk half of the command-id index (`commands.idx` in the log's directory): a hash table of
/// fixed-size slots, read and written with pread/pwrite so it costs no memory beyond the page cache.
///
/// Layout (little-endian):
/// - header, 128 bytes: magic `HUBCIX01`, slot count (a power of two), entries, the sequence the
///   index is complete through (the mark), the log's chain hash at the mark, then a CRC32C of the
///   bytes before it;
/// - slots, 32 bytes each: the first 16 bytes of SHA-256 of the command id, the first and the last
///   sequence of the command's append. A slot whose first sequence is 0 is empty. Linear probing.
///
/// A slot is only a hint: the store confirms every hit against the log record at that sequence, so
/// an entry for a record cut from a torn tail (or any other stale entry) is never answered. The
/// header is written only after the slots it covers are synced, so every command through the mark
/// is in the file; commands after the mark are indexed again from the log's tail on opening.
///
/// Not thread-safe: used under ``CommandIndex``'s lock, or by the opening store before anything else sees it.
final class CommandIndexFile: @unchecked Sendable {
    static let fileName = "commands.idx"
    static let magic: [UInt8] = Array("HUBCIX01".utf8)
    static let headerSize = 128
    static let slotSize = 32
    static let initialSlots: UInt64 = 4096
    /// Probed at once: one read covers the usual chain.
    static let probeChunk = 16

    struct Slot: Equatable {
        var key: (UInt64, UInt64)
        var first: UInt64
        var last: UInt64
        static func == (a: Slot, b: Slot) -> Bool { a.key == b.key && a.first == b.first && a.last == b.last }
    }

    let path: String
    let directory: String
    private(set) var fd: Int32
    private(set) var slotCount: UInt64
    private(set) var count: UInt64
    /// Every command through this sequence is in the file (as of the last header write).
    private(set) var mark: UInt64
    private(set) var markHash: [UInt8]

    private init(path: String, directory: String, fd: Int32, slotCount: UInt64, count: UInt64, mark: UInt64, markHash: [UInt8]) {
        self.path = path
        self.directory = directory
        self.fd = fd
        self.slotCount = slotCount
        self.count = count
        self.mark = mark
        self.markHash = markHash
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// What opening the file found.
    enum Opening {
        case opened(CommandIndexFile)
        case missing
        case damaged(String)
    }

    /// Opens the index in `directory` and checks its header (not its slots: hits are confirmed
    /// against the log).
    static func open(directory: String) throws -> Opening {
        let path = directory + "/" + fileName
        guard FileIO.exists(path) else { return .missing }
        let fd = try FileIO.openFile(path, flags: O_RDWR)
        var header = [UInt8](repeating: 0, count: headerSize)
        let n = try header.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: 0) }
        let size = try FileIO.size(fd: fd, path: path)
        guard n == headerSize, Array(header[0..<8]) == magic else {
            Glibc.close(fd)
            return .damaged(n == headerSize ? "not a command index (bad magic)" : "header cut short")
        }
        let stored = header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 72, as: UInt32.self).littleEndian }
        guard stored == header.withUnsafeBytes({ CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[0..<72])) }) else {
            Glibc.close(fd)
            return .damaged("header checksum mismatch")
        }
        let load = { (at: Int) in header.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt64.self).littleEndian } }
        let slots = load(8), count = load(16), mark = load(24)
        guard slots >= initialSlots, slots & (slots - 1) == 0, count < slots,
            size == headerSize + Int(slots) * slotSize
        else {
            Glibc.close(fd)
            return .damaged("\(slots) slots and \(count) entries do not fit a file of \(size) bytes")
        }
        return .opened(
            CommandIndexFile(
                path: path, directory: directory, fd: fd, slotCount: slots, count: count,
                mark: mark, markHash: Array(header[32..<64])))
    }

    /// Makes an empty index (replacing any file there), complete through sequence 0.
    static func create(directory: String, slots: UInt64 = initialSlots) throws -> CommandIndexFile {
        let path = directory + "/" + fileName
        let fresh = try makeFile(path: path + ".new", directory: directory, slots: slots)
        try FileIO.rename(fresh.path, path)
        try FileIO.syncDirectory(directory)
        return CommandIndexFile(
            path: path, directory: directory, fd: fresh.fd, slotCount: slots, count: 0,
            mark: 0, markHash: RecordFormat.genesisHash)
    }

    private static func makeFile(path: String, directory: String, slots: UInt64) throws -> (path: String, fd: Int32) {
        let fd = try FileIO.openFile(path, flags: O_RDWR | O_CREAT | O_TRUNC)
        do {
            try FileIO.truncate(fd: fd, path: path, to: headerSize + Int(slots) * slotSize)
            try writeHeader(fd: fd, path: path, slots: slots, count: 0, mark: 0, markHash: RecordFormat.genesisHash)
            try FileIO.dataSync(fd: fd, path: path)
        } catch {
            Glibc.close(fd)
            throw error
        }
        return (path, fd)
    }

    /// SHA-256 of the id, its first 16 bytes: the slot key.
    static func key(_ commandId: String) -> (UInt64, UInt64) {
        let digest = SHA256.hash(data: Array(commandId.utf8))
        return digest.withUnsafeBytes {
            (
                UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
    }

    /// Every entry stored under a command id's key (``key(_:)``; usually none or one): candidates to confirm.
    func candidates(key: (UInt64, UInt64)) throws -> [(first: UInt64, last: UInt64)] {
        var found: [(UInt64, UInt64)] = []
        try probe(key) { slot, _ in
            if slot.key == key { found.append((slot.first, slot.last)) }
            return true
        }
        return found
    }

    /// Records a command's sequences: a slot with the same key and first sequence is updated (a
    /// command's events seen one by one), otherwise a new slot is taken. Grows the table when 70 % full.
    func upsert(_ commandId: String, first: UInt64, last: UInt64) throws {
        try upsert(key: Self.key(commandId), first: first, last: last)
    }

    /// ``upsert(_:first:last:)`` with the id's key already made.
    func upsert(key: (UInt64, UInt64), first: UInt64, last: UInt64) throws {
        var target: UInt64? = nil
        var fresh = false, found = false, distance = 0
        let ended = try probe(key) { slot, position in
            distance += 1
            if slot.first == 0 { target = position; fresh = true; return false }
            if slot.key == key && slot.first == first {
                found = true
                if slot.last != last { target = position }
                return false
            }
            return true
        }
        if !ended {
            // Every slot taken: the header's count was behind (slots written after its last
            // checkpoint, before a crash). Growing counts them again.
            try grow()
            return try upsert(key: key, first: first, last: last)
        }
        guard let target else { return }
        try write(Slot(key: key, first: first, last: last), at: target)
        if fresh && !found {
            count += 1
            if count * 10 >= slotCount * 7 || distance > Self.longProbe { try grow() }
        }
    }

    /// A probe chain this long means the table is fuller than its count says: it grows (and recounts).
    static let longProbe = 512

    /// Syncs the slots, then records that every command through `sequence` (whose chain hash is
    /// `hash`) is in the file.
    func checkpoint(through sequence: UInt64, hash: [UInt8]) throws {
        try FileIO.dataSync(fd: fd, path: path)
        try Self.writeHeader(fd: fd, path: path, slots: slotCount, count: count, mark: sequence, markHash: hash)
        try FileIO.dataSync(fd: fd, path: path)
        mark = sequence
        markHash = hash
    }

    /// Walks the probe chain from `key`'s home slot until `body` returns false or an empty slot
    /// (which is handed to `body` too); false when it went round the whole table instead.
    @discardableResult
    private func probe(_ key: (UInt64, UInt64), _ body: (Slot, UInt64) throws -> Bool) throws -> Bool {
        let mask = slotCount - 1
        var position = key.0 & mask
        var buffer = [UInt8](repeating: 0, count: Self.probeChunk * Self.slotSize)
        var visited: UInt64 = 0
        while visited < slotCount {
            let run = Int(min(UInt64(Self.probeChunk), slotCount - position))
            let wanted = run * Self.slotSize
            let n = try buffer.withUnsafeMutableBytes {
                try FileIO.read(
                    fd: fd, path: path, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<wanted]),
                    at: Self.headerSize + Int(position) * Self.slotSize)
            }
            guard n == wanted else { throw EventLogError.io(path: path, operation: "read (file shorter than its slots)", errno: EIO) }
            for i in 0..<run {
                let slot = buffer.withUnsafeBytes { Self.decode($0, at: i * Self.slotSize) }
                if try !body(slot, position + UInt64(i)) || slot.first == 0 { return true }
            }
            visited += UInt64(run)
            position = (position + UInt64(run)) & mask
        }
        return false
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Slot {
        let load = { (at: Int) in UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + at, as: UInt64.self)) }
        return Slot(key: (load(0), load(8)), first: load(16), last: load(24))
    }

    private func write(_ slot: Slot, at position: UInt64) throws {
        try Self.write(slot, fd: fd, path: path, at: position)
    }

    private static func write(_ slot: Slot, fd: Int32, path: String, at position: UInt64) throws {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(slotSize)
        RecordFormat.appendLE(&bytes, slot.key.0)
        RecordFormat.appendLE(&bytes, slot.key.1)
        RecordFormat.appendLE(&bytes, slot.first)
        RecordFormat.appendLE(&bytes, slot.last)
        try pwriteAll(fd: fd, path: path, bytes, at: headerSize + Int(position) * slotSize)
    }

    private static func writeHeader(fd: Int32, path: String, slots: UInt64, count: UInt64, mark: UInt64, markHash: [UInt8]) throws {
        var header = magic
        RecordFormat.appendLE(&header, slots)
        RecordFormat.appendLE(&header, count)
        RecordFormat.appendLE(&header, mark)
        header += markHash
        header += [UInt8](repeating: 0, count: 72 - header.count)
        let crc = header.withUnsafeBytes { CRC32C.checksum($0) }
        RecordFormat.appendLE(&header, crc)
        header += [UInt8](repeating: 0, count: headerSize - header.count)
        try pwriteAll(fd: fd, path: path, header, at: 0)
    }

    private static func pwriteAll(fd: Int32, path: String, _ bytes: [UInt8], at offset: Int) throws {
        try bytes.withUnsafeBytes { try FileIO.writeAll(fd: fd, path: path, $0, at: offset) }
    }

    /// Doubles the table (or more, when the recount says so): every entry is placed again in a new
    /// file, which replaces this one once synced. The mark stays what it was (the new file holds at
    /// least as much); the count is what the old file really held.
    ///
    /// A new table of up to ``growInMemoryBytes`` bytes is laid out in memory and written in large
    /// writes; a larger one slot by slot in the new file (two system calls a slot: slow, but it
    /// takes no memory the size of the table).
    private func grow() throws {
        count = try countEntries()
        var slots = slotCount * 2
        while count * 10 >= slots * 7 { slots *= 2 }
        let fresh = try Self.makeFile(path: path + ".new", directory: directory, slots: slots)
        do {
            if Int(slots) * Self.slotSize <= growInMemoryBytes {
                var table = Table(slots: slots)
                try forEachEntry { table.place($0) }
                try table.write(fd: fresh.fd, path: fresh.path)
            } else {
                try forEachEntry { try Self.place($0, fd: fresh.fd, path: fresh.path, slots: slots) }
            }
            try Self.writeHeader(fd: fresh.fd, path: fresh.path, slots: slots, count: count, mark: mark, markHash: markHash)
            try FileIO.dataSync(fd: fresh.fd, path: fresh.path)
            try FileIO.rename(fresh.path, path)
            try FileIO.syncDirectory(directory)
        } catch {
            Glibc.close(fresh.fd)
            throw error
        }
        Glibc.close(fd)
        fd = fresh.fd
        slotCount = slots
    }

    /// The largest table ``grow()`` lays out in memory: 32 MiB, a table of 1,048,576 slots (up to
    /// about 730,000 commands). Held only while the table grows. (A test sets it lower.)
    var growInMemoryBytes = 32 << 20

    /// Calls `body` with every slot in use, reading the table in chunks.
    private func forEachEntry(_ body: (Slot) throws -> Void) throws {
        let chunk = 4096
        var buffer = [UInt8](repeating: 0, count: chunk * Self.slotSize)
        var position: UInt64 = 0
        while position < slotCount {
            let run = Int(min(UInt64(chunk), slotCount - position))
            _ = try buffer.withUnsafeMutableBytes {
                try FileIO.read(
                    fd: fd, path: path, into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<(run * Self.slotSize)]),
                    at: Self.headerSize + Int(position) * Self.slotSize)
            }
            for i in 0..<run {
                let slot = buffer.withUnsafeBytes { Self.decode($0, at: i * Self.slotSize) }
                if slot.first != 0 { try body(slot) }
            }
            position += UInt64(run)
        }
    }

    /// A new table's slots in memory, as the file lays them out, while ``grow()`` fills it.
    private struct Table {
        let mask: UInt64
        var bytes: [UInt8]

        init(slots: UInt64) {
            mask = slots - 1
            bytes = [UInt8](repeating: 0, count: Int(slots) * CommandIndexFile.slotSize)
        }

        /// The first empty place of the slot's chain (the table has room: it is at most 70 % full).
        mutating func place(_ slot: Slot) {
            var position = Int(slot.key.0 & mask)
            bytes.withUnsafeMutableBytes { raw in
                while raw.loadUnaligned(fromByteOffset: position * CommandIndexFile.slotSize + 16, as: UInt64.self) != 0 {
                    position = (position + 1) & Int(mask)
                }
                let base = position * CommandIndexFile.slotSize
                raw.storeBytes(of: slot.key.0.littleEndian, toByteOffset: base, as: UInt64.self)
                raw.storeBytes(of: slot.key.1.littleEndian, toByteOffset: base + 8, as: UInt64.self)
                raw.storeBytes(of: slot.first.littleEndian, toByteOffset: base + 16, as: UInt64.self)
                raw.storeBytes(of: slot.last.littleEndian, toByteOffset: base + 24, as: UInt64.self)
            }
        }

        /// Writes the slots after the header, 1 MiB at a time.
        func write(fd: Int32, path: String) throws {
            let chunk = 1 << 20
            for start in stride(from: 0, to: bytes.count, by: chunk) {
                try bytes.withUnsafeBytes {
                    try FileIO.writeAll(
                        fd: fd, path: path, UnsafeRawBufferPointer(rebasing: $0[start..<min(start + chunk, bytes.count)]),
                        at: CommandIndexFile.headerSize + start)
                }
            }
        }
    }

    /// The slots in use, counted by reading the whole table.
    private func countEntries() throws -> UInt64 {
        var used: UInt64 = 0
        try forEachEntry { _ in used += 1 }
        return used
    }

    /// Puts a slot in the first empty place of its chain in a table being filled (no duplicates there).
    private static func place(_ slot: Slot, fd: Int32, path: String, slots: UInt64) throws {
        let mask = slots - 1
        var position = slot.key.0 & mask
        var bytes = [UInt8](repeating: 0, count: slotSize)
        while true {
            _ = try bytes.withUnsafeMutableBytes {
                try FileIO.read(fd: fd, path: path, into: $0, at: headerSize + Int(position) * slotSize)
            }
            let first = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 16, as: UInt64.self)) }
            if first == 0 { return try write(slot, fd: fd, path: path, at: position) }
            position = (position + 1) & mask
        }
    }

    /// Closes the file (the header is left as the last checkpoint wrote it).
    func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }
}
