import Foundation
import HubDomain
import HubLog

/// The running hub's history read model, on disk: the same buckets as `HistoryModel` (1 minute
/// kept 7 days, 1 hour kept 365 days, 1 day kept 100 years; count, min, max, sum, last, and the
/// time weighting by the rule of `HistoryHold`, open tail included), so that
/// memory holds only what the household has (its series, and the bucket each resolution is
/// filling), never the buckets time adds.
///
/// **Files.** `<data>/history/<kind>.<id>.<quantity>.hist`, one per series (the id percent-encoded
/// where it has bytes other than letters, digits, `-` and `_`). A file is three rings of 128-byte
/// ``HistorySlot``s, 10,080 + 8,760 + 36,525 of them (7.1 MB at most, written sparsely): bucket
/// `b` of a resolution lives in slot `b mod ring`, so a new bucket takes the place of the one a
/// whole retention older, and no index is needed. A slot holding another bucket number is
/// absent. Each resolution's newest bucket stays in memory until the series moves to another
/// bucket, then it is written (no `fsync`).
///
/// **Crashes.** ``sync(sequence:chainHash:)`` (with every snapshot, and on close) writes the
/// cached buckets, `fsync`s the files and records in `history/synced` the sequence folded, the
/// log's chain hash there, the model's clock and each series' held value (``HistoryHold``), with
/// the files' format version. Opening trusts files only with that record (of this format), and
/// the hub folds the log from there. Buckets written after it may already hold some of those
/// events: each slot names the newest event it holds, and an event it already holds is not
/// folded again, so the replay is exact. Without the record, or when the log's chain hash at its
/// sequence differs (another log), the files are removed and refolded from the whole log.
///
/// Not thread-safe: the hub uses it inside its actor only (`hub-bench history --files` alone).
public final class HistoryFiles: HistorySource {
    /// The directory the series files and the sync record live in.
    public let directory: String
    /// The model's clock: the newest event timestamp folded.
    public private(set) var now: Int64 = 0
    /// The sequence of the newest event folded.
    package private(set) var foldedThrough: UInt64 = 0
    /// What the files were last synced at (nil: never, or not trusted).
    package private(set) var synced: Mark?
    /// Why the files stopped folding (a write failed); queries are then refused with it and the
    /// next start rebuilds them.
    package private(set) var problem: String?
    private var series: [HistorySeriesKey: Series] = [:]
    /// Series whose files were written since the last sync (or created: the directory too).
    private var unsynced: Set<HistorySeriesKey> = []
    private var created = false
    /// Open files by path, at most ``maxOpenFiles`` (one is closed, the oldest opened, to open another).
    private var openFiles: [String: Int32] = [:]
    private var openOrder: [String] = []
    static let maxOpenFiles = 128
    /// Finished buckets held back, by file and offset, and written together, adjacent slots in one
    /// `pwrite`: when ``maxHeld`` are held (``maxHeldInBulk`` while folding a stretch of the log at
    /// start-up, ``foldingInBulk(_:)``), and at every ``sync(sequence:chainHash:)``. A household's
    /// series then write a page each an hour or so instead of a slot each a minute (each such write
    /// a page to the disk, and a journal commit for the file's times); queries read them from here.
    private var held: [String: [Int: HistorySlot]] = [:]
    private var heldCount = 0
    private var inBulk = false
    static let maxHeld = 2048
    static let maxHeldInBulk = 8192

    /// The files' format: 2 since slots carry the time weighting (1, unnamed: 64-byte slots).
    package static let formatVersion = 2

    /// The sync record: the sequence the files hold, the log's chain hash there (hex), the clock,
    /// the files' format, and each series' held value by file name.
    public struct Mark: Codable, Equatable, Sendable {
        /// The sequence of the newest event the files hold.
        public var sequence: UInt64
        /// The log's chain hash at that sequence (hex); a different one means another log.
        public var chainHash: String
        /// The model's clock then, µs since the epoch.
        public var now: Int64
        /// The files' format (`formatVersion`); nil in records written before it was kept.
        public var version: Int?
        /// Each series' held value, by file name; nil in records written before holds were kept.
        public var holds: [String: StoredHold]?
    }

    /// A series' ``HistoryHold`` in the sync record, its value as the binary64 bit pattern (exact).
    public struct StoredHold: Codable, Equatable, Sendable {
        /// The held value's binary64 bit pattern; nil when none is held.
        public var value: UInt64?
        /// The measured time of the reading whose value is held, µs since the epoch.
        public var since: Int64
        /// The measured time of the series' newest reading; nil before any.
        public var newest: Int64?

        init(_ hold: HistoryHold) {
            value = hold.value?.bitPattern; since = hold.since; newest = hold.newest
        }

        var hold: HistoryHold { HistoryHold(value: value.map(Double.init(bitPattern:)), since: since, newest: newest) }
    }

    private struct Series {
        let path: String
        /// Per resolution (minute, hour, day): the bucket being filled, and whether the file lacks it.
        var cached: [HistorySlot?] = [nil, nil, nil]
        var dirty: [Bool] = [false, false, false]
        /// Per resolution, the newest bucket the file holds, when known (a file this process made:
        /// a bucket after it needs no read, its slot is empty or a lap older); nil: read the slot.
        var newestStored: [Int64?]
        /// The value held, for the time weighting.
        var hold = HistoryHold()

        init(path: String, new: Bool) {
            self.path = path
            newestStored = new ? [Int64.min, Int64.min, Int64.min] : [nil, nil, nil]
        }

        mutating func wrote(_ slot: HistorySlot, _ r: Int) {
            if let newest = newestStored[r] { newestStored[r] = Swift.max(newest, slot.bucket) }
            dirty[r] = false
        }
    }

    static let resolutions = HistoryResolution.allCases
    static let suffix = ".hist"
    static let markName = "synced"
    private var markPath: String { directory + "/" + Self.markName }

    /// Opens (or makes) the directory and reads its series and sync record.
    /// - Throws: When the directory cannot be made or listed.
    public init(directory: String) throws {
        self.directory = directory
        try FileIO.makeDirectory(directory)
        for name in try FileIO.listDirectory(directory) where name.hasSuffix(Self.suffix) {
            guard let key = Self.key(fileName: name) else { continue }
            series[key] = Series(path: directory + "/" + name, new: false)
        }
        if let mark = Self.mark(in: directory) {
            synced = mark
            now = mark.now
            foldedThrough = mark.sequence
            if mark.version == Self.formatVersion {
                for (name, stored) in mark.holds ?? [:] {
                    guard let key = Self.key(fileName: name) else { continue }
                    series[key, default: Series(path: directory + "/" + name, new: false)].hold = stored.hold
                }
            }
        }
    }

    /// The sync record in `directory` (nil when there is none, or it does not read).
    static func mark(in directory: String) -> Mark? {
        guard let bytes = try? FileIO.readAll(path: directory + "/" + markName) else { return nil }
        return try? JSONDecoder().decode(Mark.self, from: Data(bytes))
    }

    /// What `directory` holds, read without changing anything: its sync record and how many series
    /// files; nil when there is no such directory.
    public static func inspect(directory: String) -> (mark: Mark?, series: Int)? {
        guard let names = try? FileIO.listDirectory(directory) else { return nil }
        return (mark(in: directory), names.filter { $0.hasSuffix(suffix) && key(fileName: $0) != nil }.count)
    }

    /// Why files with this sync record cannot be trusted with `store`, or nil when they can: the
    /// log must have the chain hash the record names, at its sequence.
    public static func distrust(_ mark: Mark?, hasSeries: Bool, store: any EventStore) async throws -> String? {
        guard let mark else {
            return hasSeries ? "they were not synced (the hub stopped before it first synced them, or a write to them failed)" : nil
        }
        if mark.version != formatVersion {
            return "they are of an older format (\(mark.version ?? 1), now \(formatVersion): buckets weighted by time)"
        }
        let hash = try await store.chainHash(at: mark.sequence).map(LogVerifier.hex)
        if hash == mark.chainHash { return nil }
        return hash == nil
            ? "the log does not reach sequence \(mark.sequence) they were synced at"
            : "they were synced with another log (chain hash at sequence \(mark.sequence) differs)"
    }

    /// Whether the files hold any series.
    package var isEmpty: Bool { series.isEmpty }

    /// What the files know of the series of `key` besides its buckets: its held value (tests).
    func series(_ key: HistorySeriesKey) -> (path: String, hold: HistoryHold)? {
        series[key].map { ($0.path, $0.hold) }
    }

    /// Buckets held in memory: at most the one each resolution of each series is filling.
    var bucketsInMemory: Int { series.values.reduce(0) { $0 + $1.cached.count { $0 != nil } } }

    /// Removes every series file and the sync record: the files start again from sequence 0.
    package func reset() throws {
        closeFiles()
        held = [:]
        heldCount = 0
        // A file left behind would be listed again with buckets of the log it no longer matches.
        for path in [markPath] + series.values.map(\.path) where unlink(path) != 0 && errno != ENOENT {
            throw EventLogError.io(path: path, operation: "unlink", errno: errno)
        }
        try FileIO.syncDirectory(directory)
        series = [:]; unsynced = []
        synced = nil; problem = nil
        now = 0; foldedThrough = 0
    }

    // MARK: Folding

    /// Folds one event (`ReadingRecorded` makes buckets, and the events that end a held value
    /// weigh it, ``HistoryModel/stopsReporting(_:)``; every event moves the clock).
    public func apply(_ event: HubEvent, context: EventContext) {
        guard problem == nil else { return }
        if context.timestamp > now { now = context.timestamp }
        foldedThrough = max(foldedThrough, context.sequence)
        if let subject = HistoryModel.stopsReporting(event) {
            do {
                try end(subject, at: context.timestamp, sequence: context.sequence)
            } catch {
                fail("a held value could not be written: \(error)")
            }
            return
        }
        guard case .readingRecorded(let e) = event, HistoryModel.keeps(e.quantity), e.value.isFinite else { return }
        do {
            try record(HistorySeriesKey(subject: e.subject, quantity: e.quantity), e.value, at: e.measuredAt, sequence: context.sequence)
        } catch {
            fail("a reading could not be written: \(error)")
        }
    }

    /// Runs `body` (a fold of many events) with finished buckets written in batches instead of one
    /// at a time, then writes what is held. Memory: at most ``maxHeldInBulk`` buckets, for the duration.
    @discardableResult
    public nonisolated(nonsending) func foldingInBulk<T>(_ body: nonisolated(nonsending) () async throws -> T) async rethrows -> T {
        inBulk = true
        defer {
            inBulk = false
            do { try writeHeld() } catch { fail("buckets could not be written: \(error)") }
        }
        return try await body()
    }

    /// Moves past an event this hub version cannot read.
    package func skip(sequence: UInt64) {
        guard problem == nil else { return }
        foldedThrough = max(foldedThrough, sequence)
    }

    private func record(_ key: HistorySeriesKey, _ value: Double, at: Int64, sequence: UInt64) throws {
        var s = series[key] ?? Series(path: directory + "/" + Self.fileName(key), new: true)
        if series[key] == nil { created = true }
        defer { series[key] = s }
        // As the model does: the span the value held closes (weighed), then the reading is folded;
        // a bucket both touch takes both in one change (its newest sequence guards the pair).
        let closed = s.hold.take(value, at: at).closed
        for (r, resolution) in Self.resolutions.enumerated() {
            let horizon = resolution.horizon(now: now)
            let b = resolution.bucket(of: at)
            let sampled = b >= horizon  // else already past what this resolution keeps
            var sampleDone = false
            if let closed {
                try weigh(&s, r, resolution, closed, from: horizon, sequence: sequence) { piece, slot in
                    if sampled && piece == b { slot.add(value, at: at); sampleDone = true }
                }
            }
            if sampled && !sampleDone { try touch(&s, r, resolution, b, sequence: sequence) { $0.add(value, at: at) } }
        }
        unsynced.insert(key)
    }

    /// Ends the values held by every series of `subject` at `at`, weighing what they held.
    private func end(_ subject: Subject, at: Int64, sequence: UInt64) throws {
        for quantity in Quantity.allCases {
            let key = HistorySeriesKey(subject: subject, quantity: quantity)
            guard var s = series[key] else { continue }
            defer { series[key] = s }
            guard let closed = s.hold.end(at: at) else { continue }
            for (r, resolution) in Self.resolutions.enumerated() {
                try weigh(&s, r, resolution, closed, from: resolution.horizon(now: now), sequence: sequence) { _, _ in }
            }
            unsynced.insert(key)
        }
    }

    /// Adds `span` to the buckets it covers (from bucket `first`), each with `also` (the reading
    /// the same event folds there, if any).
    private func weigh(
        _ s: inout Series, _ r: Int, _ resolution: HistoryResolution, _ span: HistoryHold.Span, from first: Int64,
        sequence: UInt64, also: (Int64, inout HistorySlot) -> Void
    ) throws {
        try resolution.pieces(of: span, from: first) { b, micros in
            try touch(&s, r, resolution, b, sequence: sequence) { slot in
                slot.weigh(span.value, micros: micros)
                also(b, &slot)
            }
        }
    }

    /// Applies `change` to bucket `b` of resolution `r` unless the slot already holds event
    /// `sequence` (folded before a crash, and written). The bucket becomes the one cached; the one
    /// cached before is written when changed.
    private func touch(
        _ s: inout Series, _ r: Int, _ resolution: HistoryResolution, _ b: Int64, sequence: UInt64,
        _ change: (inout HistorySlot) -> Void
    ) throws {
        var slot: HistorySlot
        if let cached = s.cached[r], cached.bucket == b {
            slot = cached
        } else {
            if s.dirty[r], let cached = s.cached[r] {
                try write(cached, resolution, s.path)
                s.wrote(cached, r)
            }
            let unread = s.newestStored[r].map { b > $0 } ?? false
            let stored = unread ? nil : try read(s.path, resolution, buckets: b...b).first
            if let stored, stored.bucket > b { s.cached[r] = stored; return }  // a newer bucket holds its slot
            slot = stored.flatMap { $0.bucket == b ? $0 : nil } ?? HistorySlot(bucket: b)
        }
        if sequence > slot.through {
            change(&slot)
            slot.through = sequence
            s.dirty[r] = true
        }
        s.cached[r] = slot
    }

    /// Writes the cached buckets, `fsync`s every file written since the last sync, and records
    /// `sequence` (with the log's chain hash there) as what the files hold.
    /// - Throws: When a write or `fsync` fails; the previous record is then gone, and the next
    ///   start rebuilds the files.
    public func sync(sequence: UInt64, chainHash: [UInt8]) throws {
        guard problem == nil else { return }
        do {
            for key in unsynced {
                guard var s = series[key] else { continue }
                for (r, resolution) in Self.resolutions.enumerated() where s.dirty[r] {
                    if let slot = s.cached[r] {
                        try write(slot, resolution, s.path)
                        s.wrote(slot, r)
                    }
                }
                series[key] = s
            }
            try writeHeld()
            for key in unsynced {
                guard let s = series[key] else { continue }
                if let fd = try file(s.path, creating: false) { try FileIO.dataSync(fd: fd, path: s.path) }
            }
            if created { try FileIO.syncDirectory(directory) }
            let holds = Dictionary(uniqueKeysWithValues: series.map { (Self.fileName($0.key), StoredHold($0.value.hold)) })
            let mark = Mark(sequence: sequence, chainHash: LogVerifier.hex(chainHash), now: now, version: Self.formatVersion, holds: holds)
            try FileIO.writeAtomically([UInt8](try JSONEncoder().encode(mark)), to: markPath, directory: directory)
            synced = mark
            unsynced = []; created = false
        } catch {
            fail("the history could not be synced: \(error)")
            throw error
        }
    }

    /// Whether events were folded since the last sync.
    package var needsSync: Bool { problem == nil && foldedThrough != synced?.sequence }

    private func fail(_ reason: String) {
        problem = reason + "; the history is rebuilt from the log at the next start"
        FileIO.remove(markPath)
        synced = nil
    }

    // MARK: Queries

    /// Whether any reading of `subject` has a series file.
    public func knows(_ subject: Subject) -> Bool {
        Quantity.allCases.contains { series[HistorySeriesKey(subject: subject, quantity: $0)] != nil }
    }

    /// The buckets of `key` at `resolution` starting in `[from, to)` (µs), oldest first.
    /// - Throws: `history_unavailable` once the files stopped folding after a write failure.
    public func buckets(
        _ key: HistorySeriesKey, _ resolution: HistoryResolution, from: Int64, to: Int64
    ) throws(Rejection) -> [HistoryBucket] {
        if let problem { throw Rejection(code: "history_unavailable", message: problem) }
        guard let s = series[key], to > from else { return [] }
        let last = resolution.bucket(of: to - 1)
        let first = max(resolution.bucket(of: from), last - Int64(resolution.retainedBuckets) + 1)
        var slots: [HistorySlot]
        do {
            slots = try read(s.path, resolution, buckets: first...last)
        } catch {
            fail("\(s.path) could not be read: \(error)")
            throw Rejection(code: "history_unavailable", message: problem ?? "")
        }
        slots = slots.filter { $0.bucket >= first && $0.bucket <= last }
        let r = Self.resolutions.firstIndex(of: resolution)!
        if let cached = s.cached[r], !cached.isEmpty, cached.bucket >= first, cached.bucket <= last {
            if let i = slots.firstIndex(where: { $0.bucket == cached.bucket }) {
                slots[i] = cached
            } else {
                slots.append(cached)
                slots.sort { $0.bucket < $1.bucket }
            }
        }
        return withOpenTail(
            slots.map { $0.answer(width: resolution.width) }, hold: s.hold, now: now, resolution,
            from: max(from, first * resolution.width), to: to)
    }

    // MARK: The files

    /// Where resolution `r`'s ring starts in a series file.
    static func regionOffset(_ resolution: HistoryResolution) -> Int {
        var offset = 0
        for r in resolutions {
            if r == resolution { return offset }
            offset += r.retainedBuckets * HistorySlot.size
        }
        return offset
    }

    private static func slotIndex(_ b: Int64, _ resolution: HistoryResolution) -> Int {
        let n = Int64(resolution.retainedBuckets)
        return Int(((b % n) + n) % n)
    }

    /// The open file at `path`; nil when it does not exist and `creating` is false.
    private func file(_ path: String, creating: Bool) throws -> Int32? {
        if let fd = openFiles[path] { return fd }
        let flags = O_RDWR | O_CLOEXEC | (creating ? O_CREAT : 0)
        var fd = Glibc.open(path, flags, 0o644)
        if fd < 0, errno == EMFILE || errno == ENFILE, !openFiles.isEmpty {
            closeFiles()  // the process is at its limit of open files: give back ours, then try once more
            fd = Glibc.open(path, flags, 0o644)
        }
        if fd < 0 {
            if errno == ENOENT, !creating { return nil }
            throw EventLogError.io(path: path, operation: "open", errno: errno)
        }
        if openOrder.count >= Self.maxOpenFiles {
            let oldest = openOrder.removeFirst()
            if let old = openFiles.removeValue(forKey: oldest) { close(old) }
        }
        openFiles[path] = fd
        openOrder.append(path)
        return fd
    }

    /// Closes every open file (the hub closes; or the files are removed).
    public func closeFiles() {
        for fd in openFiles.values { close(fd) }
        openFiles = [:]; openOrder = []
    }

    deinit { closeFiles() }

    private func write(_ slot: HistorySlot, _ resolution: HistoryResolution, _ path: String) throws {
        let at = Self.regionOffset(resolution) + Self.slotIndex(slot.bucket, resolution) * HistorySlot.size
        if held[path, default: [:]].updateValue(slot, forKey: at) == nil { heldCount += 1 }
        if heldCount >= (inBulk ? Self.maxHeldInBulk : Self.maxHeld) { try writeHeld() }
    }

    /// Writes the held buckets, each run of adjacent slots in one `pwrite`.
    private func writeHeld() throws {
        guard !held.isEmpty else { return }
        for (path, slots) in held {
            held[path] = nil
            heldCount -= slots.count
            guard let fd = try file(path, creating: true) else { continue }
            let offsets = slots.keys.sorted()
            var i = 0
            while i < offsets.count {
                var j = i + 1
                while j < offsets.count, offsets[j] == offsets[j - 1] + HistorySlot.size { j += 1 }
                var run = [UInt8](repeating: 0, count: (j - i) * HistorySlot.size)
                run.withUnsafeMutableBytes { raw in
                    for k in i..<j {
                        slots[offsets[k]]!.encode(
                            into: UnsafeMutableRawBufferPointer(rebasing: raw[((k - i) * HistorySlot.size)...].prefix(HistorySlot.size)))
                    }
                }
                try run.withUnsafeBytes { try FileIO.writeAll(fd: fd, path: path, $0, at: offsets[i]) }
                i = j
            }
            FileIO.startWriteback(fd: fd)  // blocks of a slot not written before are allocated now
        }
    }

    /// The stored slots of `buckets` (at most a ring's worth) in bucket order, whatever bucket
    /// each holds; empty slots and a file not written yet are left out.
    private func read(_ path: String, _ resolution: HistoryResolution, buckets: ClosedRange<Int64>) throws -> [HistorySlot] {
        let n = resolution.retainedBuckets
        let count = min(Int(buckets.upperBound - buckets.lowerBound) + 1, n)
        let start = Self.slotIndex(buckets.lowerBound, resolution)
        let heldHere = held[path] ?? [:]
        guard let fd = try file(path, creating: false) else {
            return (0..<count).compactMap { heldHere[Self.regionOffset(resolution) + ((start + $0) % n) * HistorySlot.size] }
        }
        // At most two runs: up to the ring's end, then from its start.
        let runs = start + count <= n ? [(start, count)] : [(start, n - start), (0, count - (n - start))]
        var out: [HistorySlot] = []
        var buffer = [UInt8](repeating: 0, count: count * HistorySlot.size)
        try buffer.withUnsafeMutableBytes { raw in
            var filled = 0
            for (first, length) in runs {
                let piece = UnsafeMutableRawBufferPointer(rebasing: raw[filled..<(filled + length * HistorySlot.size)])
                _ = try FileIO.read(fd: fd, path: path, into: piece, at: Self.regionOffset(resolution) + first * HistorySlot.size)
                filled += piece.count
            }
            for i in 0..<count {
                if let slot = heldHere[Self.regionOffset(resolution) + ((start + i) % n) * HistorySlot.size] {
                    out.append(slot)  // held back, newer than the file's
                    continue
                }
                let bytes = UnsafeRawBufferPointer(rebasing: raw[(i * HistorySlot.size)..<((i + 1) * HistorySlot.size)])
                do {
                    if let slot = try HistorySlot.decode(bytes) { out.append(slot) }
                } catch {
                    throw HistoryFileError("\(path): the \(resolution.rawValue) slot \((start + i) % n) is damaged (checksum)")
                }
            }
        }
        return out
    }

    // MARK: Names

    static func fileName(_ key: HistorySeriesKey) -> String {
        "\(key.subject.kind).\(escape(key.subject.id)).\(key.quantity.rawValue)\(suffix)"
    }

    static func key(fileName name: String) -> HistorySeriesKey? {
        let parts = name.dropLast(suffix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let id = unescape(parts[1]), let quantity = Quantity(rawValue: String(parts[2])) else { return nil }
        switch parts[0] {
        case "device": return HistorySeriesKey(subject: .device(id), quantity: quantity)
        case "animal": return HistorySeriesKey(subject: .animal(id), quantity: quantity)
        default: return nil
        }
    }

    private static func escape(_ id: String) -> String {
        var out = ""
        for byte in id.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    private static func unescape(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            if utf8[i] == UInt8(ascii: "%") {
                let hi = utf8.index(after: i)
                guard hi < utf8.endIndex, utf8.index(after: hi) < utf8.endIndex,
                    let byte = UInt8(String(text[hi...utf8.index(after: hi)]), radix: 16)
                else { return nil }
                bytes.append(byte)
                i = utf8.index(hi, offsetBy: 2)
            } else {
                bytes.append(utf8[i])
                i = utf8.index(after: i)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
