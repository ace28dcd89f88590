import Foundation
import Glibc
import HubLog
import Synchronization

/// The ingest's durable peer (`hub-bench mqtt`, "the hub's traffic and durability without the
/// hub"): one thread that takes everything queued since its last commit, writes it as one `pwrite`
/// of 64-byte records into a preallocated file and makes it durable with one `fdatasync` (a group
/// commit, as the log's writer does), then runs each record's completion on its own thread. Between
/// commits it looks for the next record as the log's writer does (`WriterLook`) before it sleeps.
final class GroupCommitWriter: @unchecked Sendable { // state guarded by `condition`
    typealias Completion = @Sendable (Bool) -> Void

    private let fd: Int32
    private let condition = NSCondition()
    private var queue: [Completion] = []
    /// When the first of `queue` came.
    private var firstQueuedAt: ContinuousClock.Instant?
    private var stopping = false
    private var finished = false
    private let queued = Atomic<Int>(0)
    private var offset: off_t = 0
    /// Commits made (the writer's thread only, until `finished`).
    private var commits = 0

    init(fd: Int32) {
        self.fd = fd
        Thread { [self] in loop() }.start()
    }

    /// Queues one record; `completion` runs on the writer's thread once it is durable (true) or
    /// could not be written or synced (false; also after `stop()`).
    func append(_ completion: @escaping Completion) {
        condition.lock()
        if stopping {
            condition.unlock()
            completion(false)
            return
        }
        if queue.isEmpty { firstQueuedAt = .now }
        queue.append(completion)
        queued.add(1, ordering: .releasing)
        condition.signal()
        condition.unlock()
    }

    /// Returns once the thread has committed what was queued and ended (the file may be closed
    /// then), with the number of commits it made.
    @discardableResult
    func stop() -> Int {
        condition.lock()
        defer { condition.unlock() }
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        return commits
    }

    private func loop() {
        var seen = 0
        var look = WriterLook()
        var records: [UInt8] = []
        while true {
            if let until = look.until {
                while queued.load(ordering: .acquiring) == seen && ContinuousClock.now < until {}
            }
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            if queue.isEmpty {
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            seen = queued.load(ordering: .relaxed)
            let batch = queue
            queue.removeAll(keepingCapacity: true)
            look.took(firstQueuedAt: firstQueuedAt ?? .now)
            firstQueuedAt = nil
            condition.unlock()
            records.removeAll(keepingCapacity: true)
            records.append(contentsOf: repeatElement(0xA5, count: batch.count * FsyncFloor.recordSize))
            let ok = pwrite(fd, records, records.count, offset) == records.count && fdatasync(fd) == 0
            offset += off_t(records.count)
            commits += 1
            for completion in batch { completion(ok) }
            look.committed()
        }
    }
}
