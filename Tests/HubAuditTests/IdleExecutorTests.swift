import Foundation
import Testing

@testable import HubAudit

#if canImport(Glibc)
import Glibc
#endif

@Suite struct IdleExecutorTests {
    /// The work a task hands the executor runs on its own thread, in the kernel's idle class: the
    /// audit tree's work never takes the CPU from a thread that wants it.
    @Test func workRunsOnItsOwnThreadInTheIdleClass() async throws {
        let executor = IdleExecutor(name: "test-idle")
        let (policy, name) = await withTaskExecutorPreference(executor) { await Self.whereAmI() }
        #expect(name == "test-idle")
        #if os(Linux)
        #expect(policy == 5, "SCHED_IDLE is 5; the thread's policy is \(policy)")
        #expect(executor.idleClass == true)
        #endif
        let (_, outside) = await Self.whereAmI()
        #expect(outside != "test-idle")
    }

    /// Many tasks' work runs, each to its end, and the callers get their results.
    @Test func everyJobRuns() async throws {
        let executor = IdleExecutor(name: "test-idle-2")
        let sum = await withTaskExecutorPreference(executor) {
            await withTaskGroup(of: Int.self) { group in
                for i in 1...1000 { group.addTask { i } }
                return await group.reduce(0, +)
            }
        }
        #expect(sum == 500_500)
    }

    /// The calling thread's scheduling policy and name, read from the system.
    nonisolated static func whereAmI() async -> (policy: Int32, name: String) {
        #if os(Linux)
        let policy = sched_getscheduler(0)
        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return (policy, comm.trimmingCharacters(in: .whitespacesAndNewlines))
        #else
        return (0, Thread.current.name ?? "")
        #endif
    }
}
