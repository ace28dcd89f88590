import Glibc

/// The ingest's durable peer (`hub-bench mqtt`, "the hub's traffic and durability without the
/// hub"): a `WriterThread` that writes everything queued since its last commit as one `pwrite` of
/// 64-byte records into a preallocated file and makes it durable with one `fdatasync` (a group
/// commit, as the log's writer does), then runs each record's completion on its thread.
final class GroupCommitWriter: Sendable {
    typealias Completion = @Sendable (Bool) -> Void

    private let thread: WriterThread<Completion>

    init(fd: Int32) {
        var offset: off_t = 0
        var records: [UInt8] = []
        thread = WriterThread { batch in
            records.removeAll(keepingCapacity: true)
            records.append(contentsOf: repeatElement(0xA5, count: batch.count * FsyncFloor.recordSize))
            let ok = pwrite(fd, records, records.count, offset) == records.count && fdatasync(fd) == 0
            offset += off_t(records.count)
            for completion in batch { completion(ok) }
        }
    }

    /// Queues one record; `completion` runs on the writer's thread once it is durable (true) or
    /// could not be written or synced (false; at once after `stop()`).
    func append(_ completion: @escaping Completion) {
        if !thread.enqueue(completion) { completion(false) }
    }

    /// Returns once what was queued is committed and the thread ended (the file may be closed
    /// then), with the number of commits.
    @discardableResult
    func stop() -> Int { thread.stop() }
}
