import Synchronization

/// A segment store's command ids: permanent idempotency in bounded memory.
///
/// - the **window**: the last ``capacity`` (by default ``windowCapacity``) command ids appended by this process, with their
///   results, in memory (a retry comes soon after the first try: answered without a disk read);
/// - the **file** (``CommandIndexFile``, `commands.idx`): every command id ever appended, as hashed
///   fixed-size slots on disk, looked up on a miss in the window. Its entries are hints that the
///   store confirms against the log record before answering.
///
/// If a slot cannot be written (a disk error), the command is kept in memory instead and the
/// file's mark stops advancing, so the next open indexes the log's tail again.
final class CommandIndex: Sendable {
    static let windowCapacity = 4096
    /// Commands recorded between two checkpoints of the file's header.
    static let checkpointEvery = 4096

    private struct State: ~Copyable {
        var file: CommandIndexFile?
        var window: [String: AppendResult] = [:]
        var order: [String] = []
        var next = 0
        /// Commands the file could not take (a disk error), until the next open.
        var unindexed: [String: AppendResult] = [:]
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

    /// Entries in the file.
    var fileEntries: UInt64 { state.withLock { $0.file?.count ?? 0 } }

    /// The id's result when it is in memory (window or kept after a disk error): certain, no check needed.
    func remembered(_ commandId: String) -> AppendResult? {
        state.withLock { $0.window[commandId] ?? $0.unindexed[commandId] }
    }

    /// The file's entries for the id: hints to confirm against the log.
    func candidates(_ commandId: String) throws -> [(first: UInt64, last: UInt64)] {
        try state.withLock { s in try s.file?.candidates(commandId) ?? [] }
    }

    /// Takes a confirmed result into the window (a retry of an old command may well come again).
    func remember(_ commandId: String, _ result: AppendResult) {
        state.withLock { Self.intoWindow(&$0, commandId, result, capacity: capacity) }
    }

    /// Records the commands of one commit; `sequence` and `hash` are the log's head after it.
    func record(_ commands: [String: AppendResult], through sequence: UInt64, hash: [UInt8]) {
        state.withLock { s in
            guard let file = s.file else { return }
            for (id, result) in commands {
                Self.intoWindow(&s, id, result, capacity: capacity)
                do {
                    try file.upsert(id, first: result.firstSequence, last: result.lastSequence)
                } catch {
                    s.unindexed[id] = result
                    s.failure = s.failure ?? (error as? EventLogError)
                }
            }
            s.sinceCheckpoint += commands.count
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

    private static func intoWindow(_ s: inout State, _ id: String, _ result: AppendResult, capacity: Int) {
        if s.window.updateValue(result, forKey: id) != nil { return }
        if s.order.count < capacity {
            s.order.append(id)
            return
        }
        let evicted = s.order[s.next]
        s.window[evicted] = nil
        s.order[s.next] = id
        s.next = (s.next + 1) % capacity
    }
}
