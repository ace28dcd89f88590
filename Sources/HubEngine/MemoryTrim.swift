import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Gives memory the allocator holds but no longer uses back to the system, now and then.
///
/// glibc's malloc keeps freed memory for reuse, in one arena per thread that ever allocated under
/// contention (up to 8 per core): after start-up (a thousand connections opened, the log replayed)
/// or a burst of commands, megabytes stay resident that nothing uses. `malloc_trim(0)` returns the
/// free pages of every arena; it takes about a millisecond for a heap of tens of MiB. Each trim also
/// unmaps the clean pages of the program's files (``ProgramPages``), so that code run once (at
/// start-up) or not since the last trim no longer counts in the hub's resident memory.
public struct MemoryTrim: Service {
    /// Time between trims.
    public let every: Duration

    /// Trims every `every`.
    public init(every: Duration) {
        self.every = every
    }

    /// Trims the allocator's free memory every `every` until graceful shutdown or cancellation.
    public func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while true {
                try await Task.sleep(for: every)
                Self.giveBack()
            }
        }
    }

    /// Returns the allocator's free pages to the system (glibc only; elsewhere nothing) and unmaps
    /// the program's clean pages (``ProgramPages/release()``).
    public static func giveBack() {
        _ = glibc.trim?(0)
        ProgramPages.release()
    }

    /// Caps glibc's malloc at `count` arenas (call before threads start): fewer arenas hold fewer
    /// free pages apart, at the price of more contention when many threads allocate at once.
    public static func limitArenas(_ count: Int32) {
        _ = glibc.mallopt?(glibc.arenaMax, count)
    }

    /// `malloc.h` is not part of Swift's Glibc module: its two functions are looked up by name.
    private struct GlibcMalloc: @unchecked Sendable {  // two C function pointers, read only
        typealias Trim = @convention(c) (Int) -> Int32
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        let trim: Trim?
        let mallopt: Mallopt?
        /// `M_ARENA_MAX` in malloc.h.
        let arenaMax: Int32 = -8

        init() {
            #if canImport(Glibc)
            let process = dlopen(nil, RTLD_NOW)
            trim = dlsym(process, "malloc_trim").map { unsafeBitCast($0, to: Trim.self) }
            mallopt = dlsym(process, "mallopt").map { unsafeBitCast($0, to: Mallopt.self) }
            #else
            trim = nil
            mallopt = nil
            #endif
        }
    }
    private static let glibc = GlibcMalloc()
}
