import Foundation
import HubLog
import Synchronization

/// The benchmark peers' writer thread (`HandOffWriter`, `GroupCommitWriter`): one thread that takes
/// everything queued since its last batch and hands it to `commit`, on that thread. Between batches
/// it looks for the next item as the log's writer does (`WriterLook`) before it sleeps on a
/// condition.
final class WriterThread<Item>: @unchecked Sendable {  // state guarded by `condition`; `commit` runs on the thread only
    private let condition = NSCondition()
    private var queue: [Item] = []
    /// When the first of `queue` came.
    private var firstQueuedAt: ContinuousClock.Instant?
    private var stopping = false
    private var finished = false
    private var batches = 0
    private let queued = Atomic<Int>(0)
    private let commit: ([Item]) -> Void

    init(commit: @escaping ([Item]) -> Void) {
        self.commit = commit
        Thread { [self] in loop() }.start()
    }

    /// Queues `item` for the next batch; false (nothing queued) once `stop()` was called.
    func enqueue(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if stopping { return false }
        if queue.isEmpty { firstQueuedAt = .now }
        queue.append(item)
        queued.add(1, ordering: .releasing)
        condition.signal()
        return true
    }

    /// Returns once the thread has committed what was queued and ended, with the number of batches
    /// it committed.
    @discardableResult
    func stop() -> Int {
        condition.lock()
        defer { condition.unlock() }
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        return batches
    }

    private func loop() {
        var seen = 0
        var look = WriterLook()
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
            batches += 1
            condition.unlock()
            commit(batch)
            look.committed()
        }
    }
}
