import CThreadName
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Settings of the embedded segment-file backend.
public struct SegmentStoreOptions: Sendable {
    /// A new segment is started once the current one reaches this size.
    public var segmentSize: Int = 64 * 1024 * 1024
    /// Test-only fault injection: the n-th data sync (1-based) fails with EIO.
    public var failSyncNumber: Int? = nil
    /// Told how long each successful data sync (fdatasync) took, on the writer thread: keep it cheap
    /// (the runtime records it in a histogram).
    public var syncObserver: (@Sendable (Duration) -> Void)? = nil
    /// How many recent command ids (with their results) are kept in memory; older ones are looked
    /// up in the command index file (`commands.idx`).
    public var commandWindow: Int = 4096
    /// A recovery checkpoint (``RecoveryCheckpoint``, `recovery.ckpt`) is written after this many
    /// bytes of records (and at a clean close), so opening reads at most about this much of the log.
    public var checkpointEvery: Int = 8 * 1024 * 1024
    /// The newest segment is extended this many bytes at a time with written zeros, ahead of the
    /// records (while the writer is idle, or by a commit that needs the room), so a commit's
    /// `fdatasync` has only data to flush, not a new file size (on ext4 a journal commit).
    /// 0: the segment grows with every write. A closed segment is cut back to its last record;
    /// opening finds the end of the newest by its frames (see ``LogRecovery``).
    public var preallocation: Int = 1024 * 1024
    /// How long an observation's records (``Durability/observation``) may stay written but not yet
    /// synced: the writer syncs them this long after the first of them at the latest, sooner with
    /// an immediate append (whose sync carries them), once ``maxUnsyncedBytes`` are waiting, and at
    /// close. A household's few readings a minute then share one `fdatasync` and one page instead
    /// of a page each. Zero: every commit is synced before it returns (observations too).
    public var observationCommitDelay: Duration = .zero
    /// Observation bytes written but not synced after which the writer syncs at once.
    public static let maxUnsyncedBytes = 64 * 1024
    /// Where the writer keeps a copy of the observation frames it holds back (a tmpfs directory; nil:
    /// it holds none). With a delay, an observation-only commit that fits the zeros written ahead
    /// of the records is not written at all until the next write moment (an immediate commit, the
    /// delay up, ``maxUnsyncedBytes``, close): every write of the segment, and every change of its
    /// modification time that the file system journals, then happens at those moments only. The
    /// held frames are read from memory meanwhile, and staged here (``StagedFrames``) so a killed
    /// process loses none of them: the next open puts them back. Not a tmpfs: nothing is held (each
    /// commit is written at once, as with no staging directory).
    public var stagingDirectory: String? = "/dev/shm"

    /// Makes settings.
    ///
    /// - Parameters:
    ///   - segmentSize: Start a new segment once the current one reaches this many bytes.
    ///   - failSyncNumber: Test-only: make the n-th data sync fail.
    ///   - commandWindow: Recent command ids kept in memory (at least 1).
    ///   - checkpointEvery: Write a recovery checkpoint after this many bytes of records (at least 1).
    ///   - preallocation: Extend the newest segment this many bytes at a time, with written zeros
    ///     (0: grow with every write).
    ///   - observationCommitDelay: Sync observations at the latest this long after they are written
    ///     (zero: every commit is synced before it returns).
    public init(
        segmentSize: Int = 64 * 1024 * 1024, failSyncNumber: Int? = nil, commandWindow: Int = 4096,
        checkpointEvery: Int = 8 * 1024 * 1024, preallocation: Int = 1024 * 1024,
        observationCommitDelay: Duration = .zero
    ) {
        self.segmentSize = segmentSize
        self.failSyncNumber = failSyncNumber
        self.commandWindow = max(1, commandWindow)
        self.checkpointEvery = max(1, checkpointEvery)
        self.preallocation = max(0, preallocation)
        self.observationCommitDelay = max(.zero, observationCommitDelay)
    }
}

/// What opening the log found and did.
public struct RecoveryReport: Sendable, Equatable {
    /// Segment files found (after any repair).
    public var segments: Int
    /// Records found: the last sequence.
    public var records: UInt64
    /// Set when a torn tail was cut: the segment file, the offset it was cut at and the bytes removed.
    public var truncatedTail: (segment: String, offset: Int, bytes: Int)?
    /// The file (in the log's directory) that keeps the bytes cut from the torn tail: the hub never
    /// deletes bytes. Nil when nothing was cut (or the cut was empty).
    public var quarantine: String? = nil
    /// The sequence of the recovery checkpoint opening started after, nil when it scanned every record.
    public var checkpointSequence: UInt64? = nil
    /// Records opening read from the segment files (after the checkpoint, when one was used).
    public var scannedRecords: Int = 0

    /// Same counts and the same cut.
    public static func == (a: RecoveryReport, b: RecoveryReport) -> Bool {
        a.segments == b.segments && a.records == b.records && a.truncatedTail?.segment == b.truncatedTail?.segment
            && a.truncatedTail?.offset == b.truncatedTail?.offset && a.truncatedTail?.bytes == b.truncatedTail?.bytes
            && a.quarantine == b.quarantine
    }
}

/// The embedded default event store: append-only segment files in one directory.
///
/// One writer thread assigns gapless sequences and stream versions, writes each batch of waiting
/// appends with one write and one fdatasync (group commit), and only then acknowledges them. A
/// batch of observations only (``Durability/observation``) is written and acknowledged at once and
/// synced later, with the next immediate batch or after ``SegmentStoreOptions/observationCommitDelay``.
public final class SegmentStore: QueuedAppends, @unchecked Sendable {
    struct Segment: Sendable { var firstSequence: UInt64; var path: String; var name: String }
    /// Every `indexStride`-th record's position, for seeking.
    struct IndexEntry: Sendable { var sequence: UInt64; var segment: Int; var offset: Int }
    static let indexStride: UInt64 = 1024

    struct Shared: Sendable {
        var lastSequence: UInt64 = 0
        /// The chain hash of the record at `lastSequence`.
        var headHash = RecordFormat.genesisHash
        var streams: [String: UInt64] = [:]
        var segments: [Segment] = []
        var index: [IndexEntry] = []
        var stopped: String? = nil
        /// Full after a write found no space; ok again after a write or when the writer sees space.
        var storage: StorageCondition = .ok
        var closed = false
        var waiters = AppendWaiters()
        var syncs = 0
        /// The most recently committed records, so live followers (subscriptions, the hub's read
        /// models) read the tail from memory instead of the files.
        var recent: [EventRecord] = []
        /// Why the last recovery checkpoint could not be written, if it could not.
        var checkpointFault: String? = nil
        /// The frames of committed observations the writer holds back (not yet in their segment),
        /// and the last sequence in the files before them.
        var held: [UInt8] = []
        var writtenThrough: UInt64 = 0
        /// The last sequence synced to the disk, and who waits for it to pass a sequence.
        var durable: UInt64 = 0
        var durableWaiters = AppendWaiters()

        /// Moves ``durable`` to what a sync carried (of the records committed so far: a sync inside
        /// a commit counts once the commit is), and takes the tasks it wakes.
        mutating func advanceDurable(syncedThrough: UInt64) -> Wakeups {
            durable = max(durable, min(syncedThrough, lastSequence))
            return durableWaiters.takeReached(durable)
        }

        /// Why a task may not wait here (nil: it may).
        var refusal: EventLogError? { closed ? .closed : stopped.map { .writerStopped(reason: $0) } }
    }
    /// How many committed records stay in memory for followers (a few more, up to `recentSlack`,
    /// before the oldest are dropped): a fixed amount, so a long-running hub reaches it and stays
    /// there. A follower further behind reads the files (the page cache).
    static let recentCapacity = 512
    static let recentSlack = 64

    /// The directory holding the segment files and the `LOCK` file.
    public let directory: String
    /// What opening found and did (the torn tail cut, if any); ``openingNotes`` says it in words.
    public let recovery: RecoveryReport
    let options: SegmentStoreOptions
    let shared = Mutex(Shared())

    /// Every command id ever appended, with its original result (idempotency is permanent): a
    /// bounded window in memory, the rest in `commands.idx` (see ``CommandIndex``).
    let commands: CommandIndex
    /// What opening found of the command index, when it had to be rebuilt (for ``openingNotes``).
    let commandIndexNote: String?
    /// Why opening scanned every record (no usable recovery checkpoint), for ``openingNotes``.
    let checkpointNote: String?

    // Writer-thread state.
    private var lastHash: [UInt8]
    /// The newest record's timestamp: no record gets an earlier one (``EventStore``'s record time).
    private var lastTime: Int64 = .min
    private var segmentFD: Int32 = -1
    /// Where the newest segment's records end (the next frame is written here), and where its
    /// written bytes end: zeros from `segmentEnd` to `allocatedEnd` (see ``SegmentStoreOptions/preallocation``).
    private var segmentEnd = 0
    /// The newest segment is a `HUBLOG02` one: its frames carry their place in their sync group
    /// (see ``RecordFormat``); a `HUBLOG01` segment goes on with place 0 throughout.
    private var marksWrites = true
    /// Frames written to the newest segment since its last sync (its sync group so far): the next
    /// frame's place in its group. Every sync of the segment sets it back to 0.
    private var framesSinceSync: UInt32 = 0
    private var allocatedEnd = 0
    private var syncsStarted = 0
    /// While the disk is full: the free bytes the writer waits for before it calls it ok again.
    private var spaceNeeded: Int? = nil
    /// The last extension of the newest segment found no space: the idle writer does not try again
    /// until an extension succeeds or the writer sees free space again.
    private var roomRefused = false
    /// Bytes the current commit tried to write, and the segment files it created (undone when the
    /// disk turns out full).
    private var batchBytes = 0
    private var batchCreated: [String] = []
    /// Where the frame of the last committed record starts, and the bytes committed since the last
    /// recovery checkpoint.
    private var headOffset = 0
    private var sinceCheckpoint = 0
    /// Observation records written but not yet synced: since when, and how many bytes.
    private var unsyncedSince: ContinuousClock.Instant? = nil
    private var unsyncedBytes = 0
    /// The held frames (``Shared/held``): where they go in the newest segment, the last sequence
    /// among them, and their staged copy (nil: nothing is held).
    private var heldStart = 0
    private var heldThrough: UInt64 = 0
    private var staging: StagedFrames?
    /// The staging file of the held observations, while there is one (tests).
    var stagingPath: String? { staging?.path }
    /// What staging found on opening (frames a killed writer held, put back), for ``openingNotes``.
    let stagingNote: String?
    /// Why observations are written as they are committed, none held for a write moment, though
    /// the delay asks it (``SegmentStoreOptions/stagingDirectory`` is not a tmpfs, or the staging
    /// file could not be made); nil when they are held or the delay is zero.
    public private(set) var observationsNotHeld: String?
    /// The last sequence written to the files, and the last synced.
    private var fileThrough: UInt64 = 0
    private var syncedThrough: UInt64 = 0
    /// How often the writer looks at the free space while the disk is full and nothing is queued.
    static let spaceProbeInterval: TimeInterval = 1

    // The queue of appends waiting for the writer.
    private let queue = NSCondition()
    typealias Pending = PendingAppend
    private var pending: [Pending] = []
    /// When the first of `pending` came (guarded by `queue`): the writer looks for appends only
    /// while they come soon after its commits.
    private var firstPendingAt: ContinuousClock.Instant?
    /// Appends enqueued so far (counted outside the lock, for the writer's short look before it sleeps).
    private let enqueued = Atomic<Int>(0)
    /// How long after a commit the writer looks for the next append before it sleeps: a caller that
    /// waited for the last commit usually sends its next append within microseconds, and one found
    /// here saves waking a sleeping thread (tens of microseconds on a busy machine). It looks only
    /// while the appends come that soon (`WriterLook`).
    public static let lookBeforeSleeping: Duration = .microseconds(50)
    /// The writer thread's name in `top -H`, `ps -L` and profiles.
    public static let writerThreadName = "hub-log-writer"
    private var closing = false
    private var writerDone = false
    /// A write moment was asked for (``makeDurable()``; guarded by `queue`).
    private var momentAsked = false

    /// Read-only stores (for `events`, `replay`, `verify`, `export` beside a running hub) take no lock,
    /// never repair, and follow the writer by polling the files.
    public let readOnly: Bool
    private let follower: Mutex<LogRecovery.Opened>
    private var lockFD: Int32 = -1

    /// Opens (creating if needed) the log in `directory`: scans every segment, checks every frame,
    /// rebuilds the indexes and cuts a torn tail (read-only: leaves it and stops before it).
    ///
    /// - Parameters:
    ///   - directory: The log's directory.
    ///   - options: Segment size and fault injection.
    ///   - readOnly: Take no lock, repair nothing, accept no appends, follow the writer by polling.
    /// - Throws: ``EventLogError/corrupt(segment:offset:sequence:reason:)`` for damage before the tail;
    ///   ``EventLogError/io(path:operation:errno:)`` when the lock is held or a file cannot be used;
    ///   ``EventLogError/noLog(_:)`` when a read-only open finds no log.
    public init(directory: String, options: SegmentStoreOptions = SegmentStoreOptions(), readOnly: Bool = false) throws {
        self.directory = directory
        self.options = options
        self.readOnly = readOnly
        var lockFD: Int32 = -1
        if !readOnly {
            try FileIO.makeDirectory(directory)
            lockFD = try FileIO.lockExclusively(directory + "/LOCK")
        } else if !FileIO.exists(directory) {
            throw EventLogError.noLog("no event log at \(directory)")
        }
        self.lockFD = lockFD
        var opened: LogRecovery.Opened
        let indexing: CommandIndexOpening
        let stagingPath = readOnly ? nil : options.stagingDirectory.flatMap { StagedFrames.path(in: $0, logDirectory: directory) }
        var stagingNote: String? = nil
        do {
            if let stagingPath {
                switch try StagedFrames.restore(path: stagingPath, directory: directory) {
                case .nothing: break
                case .wrote(let segment, let offset, let bytes):
                    stagingNote =
                        "put back \(bytes) bytes of observations a stopped writer held (staged in \(stagingPath)) into segment \(segment) at offset \(offset)"
                case .ignored(let why):
                    stagingNote = "observations staged in \(stagingPath) were not put back: \(why)"
                }
            }
            indexing = readOnly ? CommandIndexOpening() : try CommandIndexOpening(directory: directory)
            opened = try LogRecovery.open(
                directory: directory, repair: !readOnly, commands: indexing.scanned,
                commandsAfter: indexing.after)
            // A full disk while indexing the tail is not fatal: those commands stay in memory.
            if let failure = opened.commandIndexError, !Self.isStorageFull(failure) { throw failure }
        } catch {
            if lockFD >= 0 { Glibc.close(lockFD) }
            throw error
        }
        opened.commandSink = nil
        let rebuild = indexing.mustRebuild(opened)
        follower = Mutex(readOnly ? opened : LogRecovery.Opened(report: opened.report))
        recovery = opened.report
        commands = CommandIndex(window: options.commandWindow)
        commandIndexNote = indexing.note(opened, rebuild: rebuild)
        checkpointNote = opened.checkpointNote
        self.stagingNote = stagingNote
        lastHash = opened.lastHash
        headOffset = opened.lastRecordOffset
        sinceCheckpoint = opened.scannedBytes
        shared.withLock {
            $0.lastSequence = opened.lastSequence
            $0.headHash = opened.lastHash
            $0.streams = opened.streams
            $0.segments = opened.segments
            $0.index = opened.index
            $0.writtenThrough = opened.lastSequence
            $0.durable = opened.lastSequence
        }
        fileThrough = opened.lastSequence
        syncedThrough = opened.lastSequence
        if readOnly { writerDone = true; return }
        do {
            try openCommandIndex(indexing, rebuild: rebuild, opened: opened)
        } catch {
            Glibc.close(lockFD)
            self.lockFD = -1
            throw error
        }
        let last = opened.segments[opened.segments.count - 1]
        segmentFD = try FileIO.openFile(last.path, flags: O_WRONLY)
        marksWrites = try Self.marksWrites(last.path)
        // Records a killed writer left unsynced in the page cache become durable here, so the
        // first frames this writer appends start a sync group of their own (place 0).
        try FileIO.dataSync(fd: segmentFD, path: last.path)
        segmentEnd = opened.tailOffset
        allocatedEnd = try FileIO.size(fd: segmentFD, path: last.path)
        if options.observationCommitDelay > .zero, let stagingDirectory = options.stagingDirectory {
            do {
                guard let stagingPath else { throw StagedFrames.NotStaged("\(stagingDirectory) is not a tmpfs this process may write") }
                staging = try StagedFrames.create(path: stagingPath)
            } catch {
                observationsNotHeld = "\(error)"
            }
        }
        // A long scan is not repeated at the next open.
        if sinceCheckpoint >= options.checkpointEvery { writeCheckpoint() }
        if opened.lastSequence > 0 {
            if let time = try Self.lastRecordTime(opened) {
                lastTime = time
            } else {
                try scanRecords(from: opened.lastSequence, through: opened.lastSequence) {
                    lastTime = $0.timestamp; return false
                }
            }
        }
        Thread { [self] in writerLoop() }.start()
    }

    /// The timestamp of the log's last record, read from its frame where opening left it (the
    /// newest segment, at ``LogRecovery/Opened/lastRecordOffset``), without reading older records;
    /// nil when it is not found there.
    private static func lastRecordTime(_ opened: LogRecovery.Opened) throws -> Int64? {
        guard let newest = opened.segments.last else { return nil }
        let cursor = try SegmentCursor(path: newest.path, chunkSize: 64 * 1024)
        var time: Int64?
        _ = try cursor.scan(from: opened.lastRecordOffset) { view, _, _ in
            if view.sequence == opened.lastSequence { time = view.timestamp }
            return false
        }
        return time
    }

    deinit {
        if segmentFD >= 0 { Glibc.close(segmentFD) }
        if lockFD >= 0 { Glibc.close(lockFD) }
    }

    // MARK: EventStore

    /// The torn tail cut on opening, if any: which segment, at which offset, how many bytes, and the
    /// quarantine file that keeps them.
    public var openingNotes: [String] {
        var notes: [String] = []
        if let torn = recovery.truncatedTail {
            let kept = recovery.quarantine.map { "; the cut bytes are kept in \(directory)/\($0)" } ?? ""
            notes.append("recovered from a torn tail: cut \(torn.bytes) bytes at offset \(torn.offset) of segment \(torn.segment)" + kept)
        }
        if let commandIndexNote { notes.append(commandIndexNote) }
        if let checkpointNote { notes.append(checkpointNote) }
        if let stagingNote { notes.append(stagingNote) }
        return notes
    }

    /// See ``EventStore/chainHash(at:)``: the head hash from memory, an older one read from the
    /// segment files (seeking by the index, so at most ``indexStride`` records are scanned).
    ///
    /// Like every read of this store it runs to the end on the calling thread (the files are
    /// local); it is declared `async` so that a call on a `SegmentStore` in an asynchronous context
    /// is this method and not ``EventStore``'s default, which would read the chain from sequence 1.
    public nonisolated(nonsending) func chainHash(at sequence: UInt64) async throws -> [UInt8]? {
        let (last, head) = shared.withLock { ($0.lastSequence, $0.headHash) }
        if sequence == 0 { return RecordFormat.genesisHash }
        guard sequence <= last else { return nil }
        if sequence == last { return head }
        var hash: [UInt8]? = nil
        try scanViews(from: sequence, through: sequence) { view in
            if view.sequence == sequence { hash = view.hash }
            return false
        }
        return hash
    }

    /// Checks every segment file's frames and the whole stored hash chain (see ``LogVerifier``); the
    /// files are read afresh, so a read-only store beside a running hub checks what is on disk now.
    /// (Runs on the calling thread; a synchronous caller uses ``LogVerifier/verify(directory:progress:)``.)
    public nonisolated(nonsending) func verify(progress: ((_ done: Int, _ total: Int) -> Void)?) async throws -> VerifyReport {
        try LogVerifier.verify(directory: directory, progress: progress)
    }

    /// See ``EventStore/lastSequence``.
    public var lastSequence: UInt64 { shared.withLock { $0.lastSequence } }

    /// See ``EventStore/storageCondition``: full from a write that found no space until an append
    /// is written again or the writer (looking every second while idle) sees enough free space.
    public var storageCondition: StorageCondition { shared.withLock { $0.storage } }

    /// Data syncs done since open (group commit makes this smaller than the number of appends).
    public var syncCount: Int { shared.withLock { $0.syncs } }

    /// See ``EventStore/streamVersion(_:)``.
    public func streamVersion(_ stream: String) -> UInt64? { shared.withLock { $0.streams[stream] } }

    /// See ``EventStore/commandResult(_:)``; a read-only store does not index command ids (nil).
    ///
    /// - Throws: ``EventLogError/io(path:operation:errno:)`` naming `commands.idx` when the index
    ///   cannot be read, or what reading the log to confirm its entry throws: never read as "no
    ///   such command" (the command would be run again).
    public func commandResult(_ commandId: String) throws -> AppendResult? {
        guard !readOnly else { return nil }
        guard var result = try lookUpCommand(commandId, key: CommandKey(commandId)) else { return nil }
        result.duplicate = true
        return result
    }

    /// See ``EventStore/writerFault``: why the writer thread stopped (a failed write or sync), if it did.
    public var writerFault: String? { shared.withLock { $0.stopped } }

    /// See ``QueuedAppends/enqueue(_:)``: for the writer thread.
    public func enqueue(_ items: [PendingAppend]) {
        queue.lock()
        if closing {
            queue.unlock()
            for item in items { item.complete(.failure(EventLogError.closed)) }
            return
        }
        if pending.isEmpty { firstPendingAt = .now }
        pending += items
        enqueued.add(items.count, ordering: .releasing)
        queue.signal()
        queue.unlock()
    }

    /// See ``EventStore/read(from:through:_:)``: the recent tail from memory, older records from
    /// the files, on the calling thread (see ``scanRecords(from:through:_:)``).
    public nonisolated(nonsending) func read(from: UInt64, through: UInt64, _ body: (EventRecord) throws -> Bool) async throws {
        try scanRecords(from: from, through: through, body)
    }

    /// ``read(from:through:_:)`` for a synchronous caller: the recent tail from memory, older
    /// records from the files.
    public func scanRecords(from: UInt64, through: UInt64, _ body: (EventRecord) throws -> Bool) throws {
        if let records = recentRecords(from: from, through: through) {
            for record in records where try !body(record) { return }
            return
        }
        try scanViews(from: from, through: through) { try body($0.record) }
    }

    /// Committed records `from...through` (clamped to the last committed) when all of them are still
    /// held in memory; nil when some must be read from the files.
    func recentRecords(from: UInt64, through: UInt64) -> [EventRecord]? {
        shared.withLock { s -> [EventRecord]? in
            let end = min(through, s.lastSequence)
            guard from <= end else { return [] }
            guard let first = s.recent.first?.sequence, from >= first else { return nil }
            return Array(s.recent[Int(from - first)...Int(end - first)])
        }
    }

    /// Like `read`, but hands out borrowed views (no copies): the fast path for replay. Runs on the
    /// calling thread (see ``scanViews(from:through:_:)``).
    public nonisolated(nonsending) func readViews(from: UInt64, through: UInt64, _ body: (RecordView) throws -> Bool) async throws {
        try scanViews(from: from, through: through, body)
    }

    /// ``readViews(from:through:_:)`` for a synchronous caller (the store's own index rebuilds,
    /// tools that read segment files in place).
    public func scanViews(from: UInt64, through: UInt64, _ body: (RecordView) throws -> Bool) throws {
        let (segments, index, last, written, held) = shared.withLock { s in
            (s.segments, s.index, s.lastSequence, s.writtenThrough, min(through, s.lastSequence) > s.writtenThrough ? s.held : [])
        }
        let start = max(from, 1), end = min(through, last)
        guard start <= end else { return }
        if end > written {
            // Held observations are not in the files yet: the files up to them, then memory.
            var going = true
            try scanFiles(segments, index, from: start, through: written) { view in
                going = try body(view)
                return going
            }
            guard going else { return }
            try held.withUnsafeBytes { raw in
                var i = 0
                while i < raw.count, let (view, _, length) = SegmentCursor.soundRecord(raw, at: i) {
                    if view.sequence > end { return }
                    if view.sequence >= start, try !body(view) { return }
                    i += length
                }
            }
            return
        }
        try scanFiles(segments, index, from: start, through: end, body)
    }

    /// Reads committed records `start...end` from the segment files.
    private func scanFiles(
        _ segments: [Segment], _ index: [IndexEntry], from start: UInt64, through end: UInt64, _ body: (RecordView) throws -> Bool
    ) throws {
        guard start <= end else { return }
        var segmentIndex = 0, offset = RecordFormat.segmentHeaderSize
        if let entry = Self.seekEntry(index, for: start) {
            segmentIndex = entry.segment
            offset = entry.offset
        } else if let s = segments.lastIndex(where: { $0.firstSequence <= start }) {
            segmentIndex = s
        }
        var done = false
        while !done && segmentIndex < segments.count {
            let segment = segments[segmentIndex]
            let cursor = try SegmentCursor(path: segment.path)
            let ended = try cursor.scan(from: offset) { view, _, _ in
                if view.sequence < start { return true }
                if view.sequence > end { done = true; return false }
                if try !body(view) { done = true; return false }
                if view.sequence == end { done = true; return false }
                return true
            }
            switch ended {
            case .end, .stopped: break
            case .incomplete(let at), .damaged(let at, _):
                if !done {
                    throw EventLogError.corrupt(
                        segment: segment.name, offset: UInt64(at), sequence: nil,
                        reason: "unreadable record while reading committed events")
                }
            }
            segmentIndex += 1
            offset = RecordFormat.segmentHeaderSize
        }
    }

    static func seekEntry(_ index: [IndexEntry], for sequence: UInt64) -> IndexEntry? {
        var lo = 0, hi = index.count - 1, found: IndexEntry?
        while lo <= hi {
            let mid = (lo + hi) / 2
            if index[mid].sequence <= sequence { found = index[mid]; lo = mid + 1 } else { hi = mid - 1 }
        }
        return found
    }

    /// See ``EventStore/waitForAppend(after:)``; a read-only store polls the files every 200 ms.
    public func waitForAppend(after sequence: UInt64) async throws {
        if readOnly {
            while true {
                try refresh()
                if lastSequence > sequence { return }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        try await wait(after: sequence, in: \.waiters, for: \.lastSequence)
    }

    /// Suspends until `watched` passes `sequence`, among `waiters` (woken by the writer).
    private func wait(
        after sequence: UInt64, in waiters: WritableKeyPath<Shared, AppendWaiters> & Sendable,
        for watched: KeyPath<Shared, UInt64> & Sendable
    ) async throws {
        let id = shared.withLock { $0[keyPath: waiters].newId() }
        try await AppendWaiters.suspend { waiter in
            shared.withLock { s in
                let (refusal, reached) = (s.refusal, s[keyPath: watched])
                return s[keyPath: waiters].enter(id, after: sequence, lastSequence: reached, refusal: refusal, waiter)
            }
        } cancelled: {
            shared.withLock { $0[keyPath: waiters].remove(id) }
        }
    }

    /// See ``EventStore/durableSequence``: observations may be committed (read, followed) before
    /// they are synced (see ``SegmentStoreOptions/observationCommitDelay``).
    public var durableSequence: UInt64 { shared.withLock { readOnly ? $0.lastSequence : $0.durable } }

    /// See ``EventStore/waitForDurable(after:)``: returns once a sync carried a record after
    /// `sequence` to the disk (a read-only store: once the files hold one).
    public func waitForDurable(after sequence: UInt64) async throws {
        if readOnly { return try await waitForAppend(after: sequence) }
        try await wait(after: sequence, in: \.durableWaiters, for: \.durable)
    }

    /// See ``EventStore/makeDurable()``: asks the writer for a write moment now (the observations
    /// it holds written and synced) and waits for it; a read-only store has nothing to sync.
    public func makeDurable() async throws {
        let target = lastSequence
        guard !readOnly, durableSequence < target else { return }
        askForMoment()
        try await waitForDurable(after: target - 1)
    }

    private func askForMoment() {
        queue.lock()
        momentAsked = true
        queue.broadcast()
        queue.unlock()
    }

    /// Read-only stores: picks up records the writer (another process) committed since the last look.
    public func refresh() throws {
        guard readOnly else { return }
        let update = try follower.withLock { opened -> (UInt64, [String: UInt64], [Segment], [IndexEntry], [UInt8]) in
            while true {
                let segmentIndex = opened.segments.count - 1
                let segment = opened.segments[segmentIndex]
                let cursor = try SegmentCursor(path: segment.path)
                let ended = try cursor.scan(from: opened.tailOffset) { view, offset, length in
                    opened.absorb(view, offset: offset, length: length, segmentIndex: segmentIndex) == nil
                }
                guard case .end = ended else { break }
                let nextName = LogRecovery.segmentName(opened.lastSequence + 1)
                let nextPath = directory + "/" + nextName
                guard nextName != segment.name, FileIO.exists(nextPath),
                    (try? LogRecovery.checkHeader(path: nextPath, expectedFirst: opened.lastSequence + 1)) == .some(nil)
                else { break }
                opened.segments.append(Segment(firstSequence: opened.lastSequence + 1, path: nextPath, name: nextName))
                opened.tailOffset = RecordFormat.segmentHeaderSize
            }
            return (opened.lastSequence, opened.streams, opened.segments, opened.index, opened.lastHash)
        }
        shared.withLock {
            $0.lastSequence = update.0
            $0.writtenThrough = update.0  // what another process committed is in the files
            $0.streams = update.1
            $0.segments = update.2
            $0.index = update.3
            $0.headHash = update.4
        }
    }

    /// Stops accepting appends, lets the writer finish what is queued, and closes the files.
    public func close() {
        queue.lock()
        closing = true
        queue.broadcast()
        while !writerDone { queue.wait() }
        queue.unlock()
        let (appended, durable) = shared.withLock { s in
            s.closed = true
            return (s.waiters.takeAll(), s.durableWaiters.takeAll())
        }
        appended.fail(EventLogError.closed)
        durable.fail(EventLogError.closed)
        // Nothing is held any more (the writer wrote it at close) unless it stopped: then the staged
        // copy stays for the next open.
        if shared.withLock({ $0.held.isEmpty }) { staging?.remove() }
        let head = shared.withLock { ($0.lastSequence, $0.headHash, $0.stopped) }
        commands.close(through: head.0, hash: head.1)
        // After a write failure the files may hold more than was committed: the next open scans.
        if !readOnly && head.2 == nil {
            // The newest segment ends at its last record again (a failure leaves it for the next open).
            if allocatedEnd > segmentEnd, let path = shared.withLock({ $0.segments.last?.path }) { try? cutPreallocation(path: path) }
            if sinceCheckpoint > 0 { writeCheckpoint() }
        }
        // The writer has finished: release the segment and the directory lock.
        if segmentFD >= 0 { Glibc.close(segmentFD); segmentFD = -1 }
        if lockFD >= 0 { Glibc.close(lockFD); lockFD = -1 }
    }

    // MARK: The writer

    private func writerLoop() {
        _ = hub_name_this_thread(Self.writerThreadName)
        var seen = 0
        var look = WriterLook()
        while true {
            if spaceNeeded == nil {
                if let until = look.until {
                    while enqueued.load(ordering: .acquiring) == seen && ContinuousClock.now < until {}
                }
                if enqueued.load(ordering: .acquiring) == seen { extendWhileIdle() }
            }
            queue.lock()
            while pending.isEmpty && !closing {
                if let due = deferredSyncDue {
                    // Written observations wait for their sync no longer than the delay, or than
                    // someone asking for a write moment.
                    let now = ContinuousClock.now
                    if now >= due || momentAsked { break }
                    _ = queue.wait(until: Date(timeIntervalSinceNow: Self.seconds(due - now)))
                    continue
                }
                momentAsked = false  // nothing waits for a sync
                guard let needed = spaceNeeded else { queue.wait(); continue }
                // The disk is full: look now and then whether space came back, so the condition
                // clears by itself (a readiness check must not wait for the next command).
                _ = queue.wait(until: Date(timeIntervalSinceNow: Self.spaceProbeInterval))
                if pending.isEmpty && !closing, let free = FileIO.freeBytes(directory), free >= needed {
                    spaceNeeded = nil
                    roomRefused = false
                    shared.withLock { $0.storage = .ok }
                }
            }
            if pending.isEmpty && !closing {
                // The delay is up (or a moment was asked for): sync the observations written since the last sync.
                momentAsked = false
                queue.unlock()
                syncDeferred()
                continue
            }
            if pending.isEmpty && closing {
                // Nothing written stays unsynced when the store closes.
                syncDeferred()
                writerDone = true
                queue.broadcast()
                queue.unlock()
                return
            }
            // Under the lock, so every append counted so far is in this batch.
            seen = enqueued.load(ordering: .relaxed)
            let batch = pending
            pending.removeAll(keepingCapacity: true)
            look.took(firstQueuedAt: firstPendingAt ?? .now)
            firstPendingAt = nil
            queue.unlock()
            commit(batch)
            look.committed()
        }
    }

    private func commit(_ batch: [Pending]) {
        if let reason = shared.withLock({ $0.stopped }) {
            for item in batch { item.complete(.failure(EventLogError.writerStopped(reason: reason))) }
            return
        }
        let committedLast = shared.withLock { $0.lastSequence }
        var nextSequence = committedLast + 1
        var streamOverlay: [String: UInt64] = [:]
        /// This batch's commands, by id, with each id's key (made once: looked up, then recorded).
        var commandOverlay: [String: (key: CommandKey, result: AppendResult)] = [:]
        var results: [Result<AppendResult, Error>] = []
        results.reserveCapacity(batch.count)
        var newIndex: [IndexEntry] = []
        var committed: [EventRecord] = []
        var out: [UInt8] = []
        out.reserveCapacity(batch.count * 256)
        var hash = lastHash
        var time = lastTime
        var lastOffset = headOffset
        // Where this commit starts: a full disk cuts the log back to here.
        let startSegments = shared.withLock { $0.segments.count }
        let startSize = segmentEnd
        batchBytes = 0
        batchCreated = []
        /// Per request: whether its result holds only once this batch is written.
        var needsWrite: [Bool] = []

        do {
            for item in batch {
                let request = item.request
                var commandKey: CommandKey? = nil
                if let id = request.causation.commandId {
                    let original: AppendResult?
                    do {
                        if let earlier = commandOverlay[id] {
                            original = earlier.result
                        } else {
                            let key = CommandKey(id)
                            commandKey = key
                            original = try lookUpCommand(id, key: key)
                        }
                    } catch {
                        results.append(.failure(error))
                        needsWrite.append(false)
                        continue
                    }
                    if var again = original {
                        again.duplicate = true
                        results.append(.success(again))
                        needsWrite.append(commandOverlay[id] != nil)
                        continue
                    }
                }
                let current = streamOverlay[request.stream] ?? shared.withLock { $0.streams[request.stream] }
                guard request.expected.admits(current) else {
                    results.append(
                        .failure(EventLogError.wrongExpectedVersion(stream: request.stream, expected: request.expected, actual: current)))
                    needsWrite.append(false)
                    continue
                }
                if let problem = RecordFormat.problem(with: request) {
                    results.append(.failure(EventLogError.invalid(problem)))
                    needsWrite.append(false)
                    continue
                }
                let first = nextSequence
                var version = current
                for event in request.events {
                    let streamVersion = version.map { $0 + 1 } ?? 0
                    time = max(time, event.timestamp)  // record time only moves forward
                    let record = EventRecord(
                        sequence: nextSequence, stream: request.stream, streamVersion: streamVersion,
                        type: event.type, schemaVersion: event.schemaVersion, timestamp: time,
                        causation: request.causation, payload: event.payload)
                    if segmentEnd + out.count >= options.segmentSize && segmentEnd + out.count > RecordFormat.segmentHeaderSize {
                        try writeOut(&out, through: nextSequence - 1)
                        try rotate(firstSequence: nextSequence)
                    }
                    if nextSequence % Self.indexStride == 1 {
                        let segmentIndex = shared.withLock { $0.segments.count } - 1
                        newIndex.append(IndexEntry(sequence: nextSequence, segment: segmentIndex, offset: segmentEnd + out.count))
                    }
                    lastOffset = segmentEnd + out.count
                    hash = try RecordFormat.appendFrame(
                        to: &out, record: record, previousHash: hash,
                        writeIndex: marksWrites ? framesSinceSync : 0)
                    framesSinceSync &+= 1
                    committed.append(record)
                    version = streamVersion
                    nextSequence += 1
                }
                if let version { streamOverlay[request.stream] = version }
                let result = AppendResult(firstSequence: first, lastSequence: nextSequence - 1, streamVersion: version, duplicate: false)
                if let id = request.causation.commandId, let commandKey, !request.events.isEmpty {
                    commandOverlay[id] = (commandKey, result)
                }
                results.append(.success(result))
                needsWrite.append(true)
            }
            if !out.isEmpty || nextSequence > committedLast + 1 {
                let immediate =
                    batch.contains(where: { $0.request.needsDurability }) || options.observationCommitDelay == .zero
                    || unsyncedBytes + batchBytes + out.count >= SegmentStoreOptions.maxUnsyncedBytes
                if !immediate, staging != nil {
                    try preallocate(through: segmentEnd + out.count, path: shared.withLock { $0.segments.last!.path })
                }
                if !immediate, staging != nil, segmentEnd + out.count <= allocatedEnd {
                    // Observations only, with room in the zeros ahead: held until the next write moment.
                    try hold(&out, through: nextSequence - 1)
                } else {
                    try writeOut(&out, through: nextSequence - 1)
                }
                if immediate {
                    try sync()
                } else {
                    // Observations only: acknowledged once held or written; synced within the delay.
                    unsyncedSince = unsyncedSince ?? .now
                    unsyncedBytes += batchBytes
                }
            } else if unsyncedSince != nil, batch.contains(where: { $0.request.needsDurability }) {
                // An immediate append that wrote nothing (a duplicate, a refusal) still returns only
                // once everything before it is durable.
                try sync()
            }
        } catch let full as EventLogError {
            guard case let .storageFull(path, _, _) = full else { stop(batch, because: "\(full)"); return }
            // No space: cut the log back to where this commit started (nothing of it stays, so no
            // torn record is left for later appends to follow), refuse what needed the write, and
            // go on. The next commit tries again.
            do {
                try rollBack(segments: startSegments, size: startSize)
            } catch {
                stop(batch, because: "\(full); then cutting the log back failed: \(error)")
                return
            }
            // A quota is not seen by statvfs: then only a write that succeeds says the space is back.
            if case .storageFull(_, _, EDQUOT) = full { spaceNeeded = .max } else { spaceNeeded = batchBytes + 16 * 1024 }
            shared.withLock { s in
                if !s.storage.isFull { s.storage = .full(path: path, since: FileIO.nowMicros(), reason: "\(full)") }
            }
            for (i, item) in batch.enumerated() {
                item.complete(i < results.count && !needsWrite[i] ? results[i] : .failure(full))
            }
            return
        } catch {
            stop(batch, because: "\(error)")
            return
        }

        if spaceNeeded != nil && nextSequence - 1 > committedLast {
            spaceNeeded = nil
            shared.withLock { $0.storage = .ok }
        }
        lastHash = hash
        lastTime = time
        headOffset = lastOffset
        sinceCheckpoint += batchBytes
        let reached = shared.withLock { s in
            s.lastSequence = nextSequence - 1
            s.writtenThrough = fileThrough
            s.headHash = hash
            s.recent += committed
            if s.recent.count > Self.recentCapacity + Self.recentSlack { s.recent.removeFirst(s.recent.count - Self.recentCapacity) }
            s.streams.merge(streamOverlay) { _, b in b }
            s.index += newIndex
            return (s.waiters.takeReached(s.lastSequence), s.advanceDurable(syncedThrough: syncedThrough))  // before any caller hears
        }
        // Remembered once committed, and before anyone hears of the commit: a retry can never miss
        // its original. Written to the index file after the answers (a crash before that is
        // mended by the next open's tail scan), so no caller waits for those writes.
        commands.remember(commandOverlay)
        for (i, item) in batch.enumerated() { item.complete(results[i]) }
        reached.0.resume()
        reached.1.resume()
        commands.persist(through: nextSequence - 1, hash: hash)
        // A recovery checkpoint names only synced records.
        if unsyncedSince == nil && sinceCheckpoint >= options.checkpointEvery { writeCheckpoint() }
    }

    /// When the observations written but not synced must be synced (nil: none wait).
    private var deferredSyncDue: ContinuousClock.Instant? {
        unsyncedSince.map { $0 + options.observationCommitDelay }
    }

    /// Syncs the observations written since the last sync (their delay is up, or the store closes);
    /// a failed sync stops the writer, as in a commit.
    private func syncDeferred() {
        guard unsyncedSince != nil, shared.withLock({ $0.stopped == nil }) else { return }
        do {
            try sync()
        } catch {
            stop([], because: "syncing the observations written since the last sync: \(error)")
            return
        }
        publishDurable()
        if sinceCheckpoint >= options.checkpointEvery { writeCheckpoint() }
    }

    static func seconds(_ duration: Duration) -> TimeInterval {
        let (s, attoseconds) = duration.components
        return TimeInterval(s) + TimeInterval(attoseconds) / 1e18
    }

    /// Writes the recovery checkpoint at the committed head (on the writer thread, or once it is
    /// done), after bringing the command index's mark there: a checkpoint ahead of that mark is not used.
    /// A failure is not the log's: the next open scans from the previous checkpoint (and says so).
    private func writeCheckpoint() {
        let (sequence, hash, streams, segments, index) = shared.withLock {
            ($0.lastSequence, $0.headHash, $0.streams, $0.segments, $0.index)
        }
        guard sequence > 0, let newest = segments.last, newest.firstSequence <= sequence else { return }
        commands.checkpoint(through: sequence, hash: hash)
        do {
            // Older segments are closed: their size is where their records end.
            let ends =
                try segments.dropLast().map {
                    RecoveryCheckpoint.SegmentEnd(firstSequence: $0.firstSequence, end: try FileIO.size(path: $0.path))
                }
                + [RecoveryCheckpoint.SegmentEnd(firstSequence: newest.firstSequence, end: segmentEnd)]
            try RecoveryCheckpoint(
                sequence: sequence, hash: hash, recordOffset: headOffset, segments: ends,
                streams: streams, index: index
            ).write(directory: directory)
            sinceCheckpoint = 0
        } catch {
            shared.withLock { $0.checkpointFault = "\(error)" }
        }
    }

    /// A write or sync failed for another reason than space: the writer stops for good, failing this
    /// batch and every later append (after a failed fsync the state of the written pages is unknown).
    private func stop(_ batch: [Pending], because reason: String) {
        shared.withLock { $0.stopped = reason }
        for item in batch { item.complete(.failure(EventLogError.writerStopped(reason: reason))) }
        failWaiters(reason: reason)
    }

    /// Undoes a commit that ran out of space: removes the segment files it created, cuts the
    /// segment it started in back to `size` (its last whole record) and syncs that, so neither a
    /// crash nor the next append can find a record of the failed commit.
    private func rollBack(segments count: Int, size: Int) throws {
        let keep = shared.withLock { s -> Segment in
            s.segments.removeAll { batchCreated.contains($0.path) }
            return s.segments[count - 1]
        }
        if !batchCreated.isEmpty || segmentFD < 0 {
            if segmentFD >= 0 { Glibc.close(segmentFD) }
            segmentFD = -1
            for path in batchCreated { FileIO.remove(path) }
            batchCreated = []
            try FileIO.syncDirectory(directory)
            segmentFD = try FileIO.openFile(keep.path, flags: O_WRONLY)
            marksWrites = try Self.marksWrites(keep.path)
        }
        try FileIO.truncate(fd: segmentFD, path: keep.path, to: size)
        try FileIO.dataSync(fd: segmentFD, path: keep.path)
        synced()  // observations written before this commit are synced with the cut
        segmentEnd = size
        allocatedEnd = size
    }

    /// Writes the held frames, then `out` (frames of records up to `through`) after them.
    private func writeOut(_ out: inout [UInt8], through: UInt64) throws {
        try writeHeld()
        guard !out.isEmpty else { return }
        batchBytes += out.count
        let path = shared.withLock { $0.segments.last!.path }
        try preallocate(through: segmentEnd + out.count, path: path)
        try out.withUnsafeBytes { try FileIO.writeAll(fd: segmentFD, path: path, $0, at: segmentEnd) }
        segmentEnd += out.count
        allocatedEnd = max(allocatedEnd, segmentEnd)
        fileThrough = through
        out.removeAll(keepingCapacity: true)
    }

    /// Holds `out` (frames of records up to `through`, which fit the zeros written ahead) in memory
    /// and in the staging file instead of writing it: readers find the frames in ``Shared/held``.
    private func hold(_ out: inout [UInt8], through: UInt64) throws {
        guard !out.isEmpty, let staging else { return }
        let first = shared.withLock { s -> UInt64 in
            if s.held.isEmpty { heldStart = segmentEnd }
            return s.segments.last!.firstSequence
        }
        // The record before the first held frame (what the staged copy names, with its hash): the
        // last committed, unless the segment has none yet (it then names the frames' own place).
        let previous = segmentEnd > RecordFormat.segmentHeaderSize ? headOffset : segmentEnd
        do {
            try staging.append(out[...], segmentFirst: first, offset: heldStart, previousOffset: previous, previousHash: lastHash)
        } catch {
            // No staged copy, no holding: what is held is written now, and this with it.
            self.staging = nil
            staging.remove()
            return try writeOut(&out, through: through)
        }
        shared.withLock { $0.held += out }
        batchBytes += out.count
        segmentEnd += out.count
        heldThrough = through
        out.removeAll(keepingCapacity: true)
    }

    /// Writes the held frames to their segment (a write moment) and empties the staging file. A
    /// failure stops the writer (the frames were acknowledged; their room was written ahead, so a
    /// full disk cannot be why).
    private func writeHeld() throws {
        let held = shared.withLock { $0.held }
        guard !held.isEmpty, let path = shared.withLock({ $0.segments.last?.path }) else { return }
        do {
            try held.withUnsafeBytes { try FileIO.writeAll(fd: segmentFD, path: path, $0, at: heldStart) }
        } catch {
            throw EventLogError.io(path: path, operation: "writing the held observations (\(error))", errno: EIO)
        }
        fileThrough = heldThrough
        shared.withLock { s in
            s.held = []
            s.writtenThrough = heldThrough
        }
        try staging?.clear()
    }

    /// Whether the segment at `path` is a `HUBLOG02` one (its frames carry their place in their sync group).
    static func marksWrites(_ path: String) throws -> Bool {
        let fd = try FileIO.openFile(path, flags: O_RDONLY)
        defer { Glibc.close(fd) }
        var magic = [UInt8](repeating: 0, count: RecordFormat.segmentMagic.count)
        let n = try magic.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: 0) }
        return n == magic.count && magic == RecordFormat.segmentMagic
    }

    /// Extends the newest segment with written zeros (``SegmentStoreOptions/preallocation`` bytes at a
    /// time, never past the segment size) so that it reaches `end`. The zeros are made durable by
    /// the commit's own `fdatasync`.
    private func preallocate(through end: Int, path: String) throws {
        guard options.preallocation > 0, end > allocatedEnd else { return }
        let step = options.preallocation
        let target = max(end, min((end + step - 1) / step * step, options.segmentSize))
        do {
            try FileIO.writeZeros(fd: segmentFD, path: path, allocatedEnd..<target)
        } catch  where Self.isStorageFull(error) {
            // No room for a whole step: this write grows the file instead (and finds out itself
            // whether there is room for its records).
            try FileIO.truncate(fd: segmentFD, path: path, to: allocatedEnd)
            roomRefused = true
            return
        }
        roomRefused = false
        allocatedEnd = target
    }

    /// While no append waits: when less than half a step of zeros is left after the records, adds
    /// the next step now and syncs it, so that no commit waits for it (on an SD card a megabyte
    /// takes tens of milliseconds). A full disk leaves it to the commits; a failed write or sync
    /// stops the writer, as in a commit.
    private func extendWhileIdle() {
        let step = options.preallocation
        guard step > 0, !roomRefused, segmentFD >= 0, allocatedEnd - segmentEnd < step / 2, allocatedEnd < options.segmentSize,
            let path = shared.withLock({ $0.stopped == nil ? $0.segments.last?.path : nil })
        else { return }
        let before = allocatedEnd
        do {
            try preallocate(through: allocatedEnd + 1, path: path)
            if allocatedEnd > before {
                try writeHeld()  // a sync is a write moment: it carries what was held
                try FileIO.dataSync(fd: segmentFD, path: path)
                synced()  // the sync carried any observations written before it
                publishDurable()
            }
        } catch {
            stop([], because: "extending \(path) ahead of its records: \(error)")
        }
    }

    /// Cuts the zeros after the newest segment's last record (before it is closed), and syncs.
    private func cutPreallocation(path: String) throws {
        try FileIO.truncate(fd: segmentFD, path: path, to: segmentEnd)
        try FileIO.dataSync(fd: segmentFD, path: path)
        allocatedEnd = segmentEnd
        framesSinceSync = 0
    }

    private func sync() throws {
        try writeHeld()
        syncsStarted += 1
        let path = shared.withLock { $0.segments.last!.path }
        if let failing = options.failSyncNumber, syncsStarted >= failing {
            throw EventLogError.io(path: path, operation: "fdatasync (injected fault)", errno: EIO)
        }
        let started = ContinuousClock.now
        try FileIO.dataSync(fd: segmentFD, path: path)
        options.syncObserver?(ContinuousClock.now - started)
        shared.withLock { $0.syncs += 1 }
        synced()
    }

    /// What is written is durable: nothing waits for a sync any more.
    private func synced() {
        unsyncedSince = nil
        unsyncedBytes = 0
        framesSinceSync = 0
        syncedThrough = fileThrough
    }

    /// Wakes the tasks waiting for the durable sequence to pass what the last sync carried (of the
    /// records committed so far: a sync inside a commit counts once the commit is).
    private func publishDurable() {
        shared.withLock { $0.advanceDurable(syncedThrough: syncedThrough) }.resume()
    }

    /// Syncs and closes the current segment and starts a new one whose first record is `firstSequence`.
    private func rotate(firstSequence: UInt64) throws {
        try sync()
        // A closed segment ends at its last record: only the newest one has zeros after its records.
        if allocatedEnd > segmentEnd { try cutPreallocation(path: shared.withLock { $0.segments.last!.path }) }
        Glibc.close(segmentFD)
        segmentFD = -1
        let name = LogRecovery.segmentName(firstSequence)
        let path = directory + "/" + name
        let fd = try FileIO.openFile(path, flags: O_WRONLY | O_CREAT | O_EXCL)
        segmentFD = fd
        marksWrites = true
        framesSinceSync = 0
        batchCreated.append(path)
        try RecordFormat.segmentHeader(firstSequence: firstSequence).withUnsafeBytes {
            try FileIO.writeAll(fd: fd, path: path, $0)
        }
        try FileIO.dataSync(fd: fd, path: path)
        try FileIO.syncDirectory(directory)
        segmentEnd = RecordFormat.segmentHeaderSize
        allocatedEnd = segmentEnd
        let segment = Segment(firstSequence: firstSequence, path: path, name: name)
        // Appends after the rotation must target the new file: publish it now (readers clamp to lastSequence).
        shared.withLock { $0.segments.append(segment) }
    }

    private func failWaiters(reason: String) {
        let (appended, durable) = shared.withLock { ($0.waiters.takeAll(), $0.durableWaiters.takeAll()) }
        appended.fail(EventLogError.writerStopped(reason: reason))
        durable.fail(EventLogError.writerStopped(reason: reason))
    }
}

/// Gathers the results of a multi-request append and hands them over once all are in (any
/// backend's `appendAll` that completes its requests one by one).
public final class ResultCollector: Sendable {
    private let state: Mutex<(results: [Result<AppendResult, Error>?], remaining: Int)>
    private let done: @Sendable ([Result<AppendResult, Error>]) -> Void

    /// A collector of `count` results; `done` is called once, with them in order, when the last is in.
    public init(count: Int, done: @escaping @Sendable ([Result<AppendResult, Error>]) -> Void) {
        state = Mutex((Array(repeating: nil, count: count), count))
        self.done = done
    }

    /// The result of request `index`; the last one in calls `done` with all of them, in order.
    public func set(_ index: Int, _ result: Result<AppendResult, Error>) {
        let finished: [Result<AppendResult, Error>]? = state.withLock { s in
            s.results[index] = result
            s.remaining -= 1
            return s.remaining == 0 ? s.results.map { $0! } : nil
        }
        if let finished { done(finished) }
    }
}
