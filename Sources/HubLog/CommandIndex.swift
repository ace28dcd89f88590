import Synchronization

/// A segment store's command ids: permanent idempotency in bounded memory.
///
/// - the **window**: the last ``capacity`` (by default ``windowCapacity``) command ids appended by this process, with their
///   results, in memory (a retry comes soon after the first try: answered without a disk read).
///   It keeps each id's key (the first 16 bytes of its SHA-256, as the file does), not the id, in
///   tables reserved at their full size on the first command: its memory is the same after one
///   command and after millions, instead of growing by ~230 bytes a command until it is full;
/// - the **file** (``CommandIndexFile``, `commands.idx`): every command id ever appended, as hashed
///   fixed-size slots on disk, looked up on a miss in the window. Its entries are hints that the
///   store confirms against the log record before answering.
///
/// If a slot cannot be written (a disk error), the command is kept in memory instead and the
/// file's mark stops advancing, so the next open indexes the log's tail again.
final class CommandIndex: Sendable {
    static let windowCapacity = 4096
    /// Commands recorded between two checkpoints of the file's header.
    static let checkpointEvery = 32_768

    private struct State: ~Copyable {
        var file: CommandIndexFile?
        var window: [CommandKey: AppendResult] = [:]
        var order: [CommandKey] = []
        var next = 0
        /// Commands the file could not take (a disk error), until the next open.
        var unindexed: [String: AppendResult] = [:]
        /// The last commit's commands, remembered and not yet written to the file (a commit of
        /// more than the window's capacity must not lose its first ones meanwhile).
        var unwritten: [String: (key: CommandKey, result: AppendResult)] = [:]
        var sinceCheckpoint = 0
        var failure: EventLogError? = nil
    }

    private let state: Mutex<State>

    /// How many ids the window holds.
    let capacity: Int

    /// An index with no file yet (a read-only store's stays so: it answers nothing).
    ///
    /// - Parameter window: How many recent ids to keep in memory.
    init(window: Int = windowCapacity) {
        capacity = max(1, window)
        state = Mutex(State())
    }

    /// Hands over the opened file (once, at start-up).
    func install(_ file: CommandIndexFile) {
        state.withLock { $0.file = file }
    }

    /// Hands over a file that could not take the log's tail at start-up (a full disk): `unindexed`
    /// holds the tail's commands in memory, and `failure` keeps the file's mark where it was.
    func install(_ file: CommandIndexFile, unindexed: [String: AppendResult], failure: EventLogError) {
        state.withLock {
            $0.file = file
            $0.unindexed = unindexed
            $0.failure = failure
        }
    }

    /// Where the index lives, for messages.
    var path: String? { state.withLock { $0.file?.path } }

    /// Entries in the in-memory window (bounded by ``windowCapacity``) plus any kept after a disk error.
    var memoryEntries: Int { state.withLock { $0.window.count + $0.unindexed.count } }

    /// Bytes the window's tables hold (keys, results, the eviction order), without the ids kept
    /// after a disk error: the same after the first command as after millions.
    var windowBytes: Int {
        state.withLock { s in
            s.window.capacity * (MemoryLayout<CommandKey>.stride + MemoryLayout<AppendResult>.stride)
                + s.order.capacity * MemoryLayout<CommandKey>.stride
        }
    }

    /// Entries in the file.
    var fileEntries: UInt64 { state.withLock { $0.file?.count ?? 0 } }

    /// The id's result when it is in memory (window, by the id's 128-bit key; kept after a disk
    /// error; or committed and not yet written to the file): no check against the log needed.
    func remembered(_ commandId: String, key: CommandKey) -> AppendResult? {
        state.withLock { $0.window[key] ?? $0.unindexed[commandId] ?? $0.unwritten[commandId]?.result }
    }

    /// The file's entries for the id's key: hints to confirm against the log.
    func candidates(_ key: CommandKey) throws -> [(first: UInt64, last: UInt64)] {
        try state.withLock { s in try s.file?.candidates(key: key.pair) ?? [] }
    }

    /// Takes a confirmed result into the window (a retry of an old command may well come again).
    func remember(_ key: CommandKey, _ result: AppendResult) {
        state.withLock { Self.intoWindow(&$0, key, result, capacity: capacity) }
    }

    /// Takes the commands of one commit (by id, with the key the commit made for each) into the
    /// window, before anyone hears of the commit: a retry can never miss its original. They are
    /// written to the file by ``persist(through:hash:)``, after the commit's callers are answered.
    func remember(_ commands: [String: (key: CommandKey, result: AppendResult)]) {
        state.withLock { s in
            guard s.file != nil else { return }
            for (_, (key, result)) in commands { Self.intoWindow(&s, key, result, capacity: capacity) }
            s.unwritten = commands
        }
    }

    /// Writes the commands ``remember(_:)`` took to the file; `sequence` and `hash` are the log's
    /// head after their commit.
    func persist(through sequence: UInt64, hash: [UInt8]) {
        state.withLock { s in
            guard let file = s.file, !s.unwritten.isEmpty else { return }
            for (id, (key, result)) in s.unwritten {
                do {
                    try file.upsert(key: key.pair, first: result.firstSequence, last: result.lastSequence)
                } catch {
                    s.unindexed[id] = result
                    s.failure = s.failure ?? (error as? EventLogError)
                }
            }
            s.sinceCheckpoint += s.unwritten.count
            s.unwritten = [:]
            guard s.failure == nil, s.sinceCheckpoint >= Self.checkpointEvery else { return }
            do {
                try file.checkpoint(through: sequence, hash: hash)
                s.sinceCheckpoint = 0
            } catch {
                s.failure = error as? EventLogError
            }
        }
    }

    /// Checkpoints the file's header through `sequence` now (unless a disk error froze the mark).
    func checkpoint(through sequence: UInt64, hash: [UInt8]) {
        state.withLock { s in
            guard let file = s.file, s.failure == nil else { return }
            do {
                try file.checkpoint(through: sequence, hash: hash)
                s.sinceCheckpoint = 0
            } catch {
                s.failure = error as? EventLogError
            }
        }
    }

    /// Checkpoints through the log's head (unless a disk error froze the mark) and closes the file.
    func close(through sequence: UInt64, hash: [UInt8]) {
        state.withLock { s in
            guard let file = s.file else { return }
            if s.failure == nil { try? file.checkpoint(through: sequence, hash: hash) }
            file.close()
            s.file = nil
        }
    }

    private static func intoWindow(_ s: inout State, _ key: CommandKey, _ result: AppendResult, capacity: Int) {
        if s.order.isEmpty {
            s.window.reserveCapacity(capacity)
            s.order.reserveCapacity(capacity)
        }
        if s.window.updateValue(result, forKey: key) != nil { return }
        if s.order.count < capacity {
            s.order.append(key)
            return
        }
        let evicted = s.order[s.next]
        s.window[evicted] = nil
        s.order[s.next] = key
        s.next = (s.next + 1) % capacity
    }
}

/// A command id's key: the first 16 bytes of its SHA-256 (``CommandIndexFile/key(_:)``), the same
/// for the window and the file. Two ids share one only by a SHA-256 collision in 128 bits.
struct CommandKey: Hashable, Sendable {
    let high: UInt64
    let low: UInt64

    init(_ commandId: String) {
        (high, low) = CommandIndexFile.key(commandId)
    }

    var pair: (UInt64, UInt64) { (high, low) }
}
