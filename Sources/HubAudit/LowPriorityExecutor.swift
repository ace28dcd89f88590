import CThreadName
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A task executor with one thread of its own at the lowest priority (nice 19): the kernel gives it
/// the CPU that other threads leave, and a small share when they want it all. For work that must
/// follow the hub but not slow what a client waits on, such as the audit tree following the log.
///
/// Run a task's work on it with `withTaskExecutorPreference(executor) { ... }`; the nonisolated
/// async functions it calls (reading the log, hashing) run on its thread. On a machine that never
/// idles the work is late, never starved.
public final class LowPriorityExecutor: TaskExecutor, @unchecked Sendable {  // jobs are only touched under `lock`
    private let lock = NSCondition()
    private var jobs: [UnownedJob] = []
    private let scheduling = Atomic<Int>(0)  // 0 not yet known, 1 lowered, 2 refused

    /// One executor for the process, its thread started on first use.
    public static let shared = LowPriorityExecutor(name: "hub-low-prio")

    /// Starts the executor's thread.
    ///
    /// - Parameter name: The thread's name in `top -H`, `ps -L` and profiles (at most 15 bytes are kept).
    public init(name: String) {
        Thread { [self] in run(name: name) }.start()
    }

    /// Whether the thread runs at the lowest priority: nil until it has started, false where the
    /// system refused it (then it runs at the normal priority).
    public var lowered: Bool? {
        switch scheduling.load(ordering: .acquiring) {
        case 1: true
        case 2: false
        default: nil
        }
    }

    /// Queues a job for the executor's thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        lock.lock()
        jobs.append(job)
        lock.signal()
        lock.unlock()
    }

    private func run(name: String) {
        _ = hub_name_this_thread(name)
        scheduling.store(Self.lowerThisThread() ? 1 : 2, ordering: .releasing)
        let executor = asUnownedTaskExecutor()
        while true {
            lock.lock()
            while jobs.isEmpty { lock.wait() }
            var batch: [UnownedJob] = []
            swap(&batch, &jobs)
            lock.unlock()
            for job in batch { job.runSynchronously(on: executor) }
        }
    }

    /// Gives the calling thread the lowest priority (nice 19, on Linux per thread); returns whether
    /// it took. Not the `SCHED_IDLE` class: a thread of that class can be kept off the CPU for as
    /// long as others want it, and one holding a lock (the log's, while it reads) would hold up
    /// the threads that need it. At nice 19 it still gets a small share.
    private static func lowerThisThread() -> Bool {
        #if os(Linux)
        let thread = id_t(hub_this_thread_id())
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), thread, 19) == 0
        #else
        return false
        #endif
    }
}
