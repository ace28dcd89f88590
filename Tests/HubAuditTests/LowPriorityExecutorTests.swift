import Foundation
import Testing

@testable import HubAudit

#if canImport(Glibc)
import Glibc
#endif

@Suite struct LowPriorityExecutorTests {
    /// The work a task hands the executor runs on its own thread, at nice 19: the audit tree's work
    /// takes little CPU from a thread that wants it.
    @Test func workRunsOnItsOwnThreadAtTheLowestPriority() async throws {
        let executor = LowPriorityExecutor(name: "test-low")
        let (nice, name) = await withTaskExecutorPreference(executor) { await Self.whereAmI() }
        #expect(name == "test-low")
        #if os(Linux)
        #expect(nice == 19)
        #expect(executor.lowered == true)
        #endif
        let (_, outside) = await Self.whereAmI()
        #expect(outside != "test-low")
    }

    /// Many tasks' work runs, each to its end, and the callers get their results.
    @Test func everyJobRuns() async throws {
        let executor = LowPriorityExecutor(name: "test-low-2")
        let sum = await withTaskExecutorPreference(executor) {
            await withTaskGroup(of: Int.self) { group in
                for i in 1...1000 { group.addTask { i } }
                return await group.reduce(0, +)
            }
        }
        #expect(sum == 500_500)
    }

    /// The calling thread's nice value and name, read from the system (`/proc/thread-self/stat`:
    /// the nice value is the 19th field, the 17th after the name in parentheses).
    nonisolated static func whereAmI() async -> (nice: Int32, name: String) {
        #if os(Linux)
        let stat = (try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)) ?? ""
        let fields = stat.split(separator: ")").last.map { $0.split(separator: " ") } ?? []
        let nice = fields.count > 16 ? Int32(fields[16]) ?? -100 : -100
        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return (nice, comm.trimmingCharacters(in: .whitespacesAndNewlines))
        #else
        return (0, Thread.current.name ?? "")
        #endif
    }
}
