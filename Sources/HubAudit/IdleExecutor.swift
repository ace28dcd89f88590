import CThreadName
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A task executor with one thread of its own that the kernel runs only when no other thread wants
/// the CPU (Linux `SCHED_IDLE`; elsewhere the lowest priority it grants): for work that must follow
/// the hub but never slow what a client waits on, such as the audit tree following the log.
///
/// Run a task's work on it with `withTaskExecutorPreference(executor) { ... }`; the nonisolated
/// async functions it calls (reading the log, hashing) run on its thread. On a machine that never
/// idles the work waits (the kernel still gives an idle thread a sliver now and then, so it is
/// late, never starved for good).
public final class IdleExecutor: TaskExecutor, @unchecked Sendable {  // jobs are only touched under `lock`
    private let lock = NSCondition()
    private var jobs: [UnownedJob] = []
    private let scheduling = Atomic<Int>(0)  // 0 not yet known, 1 idle class, 2 refused

    /// One executor for the process, its thread started on first use.
    public static let shared = IdleExecutor(name: "hub-idle")

    /// Starts the executor's thread.
    ///
    /// - Parameter name: The thread's name in `top -H`, `ps -L` and profiles (at most 15 bytes are kept).
    public init(name: String) {
        Thread { [self] in run(name: name) }.start()
    }

    /// Whether the thread runs in the idle scheduling class: nil until it has started, false where
    /// the system refused it (then it runs at the normal priority).
    public var idleClass: Bool? {
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

    /// Puts the calling thread in the idle scheduling class (Linux); returns whether it took.
    private static func lowerThisThread() -> Bool {
        #if os(Linux)
        var param = sched_param()
        param.sched_priority = 0
        // SCHED_IDLE is 5 on Linux; Glibc does not always export the constant to Swift.
        return sched_setscheduler(0, 5, &param) == 0
        #else
        return false
        #endif
    }
}
