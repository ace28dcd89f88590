#if canImport(Glibc)
import Glibc
#endif

/// The pages of the program's own files (its binary and shared libraries) that the process has
/// mapped, and giving back the ones it has not written.
///
/// A process's RSS counts every page of its program the kernel has mapped for it: pages of code
/// run once at start-up (configuration, replay, the first connections) stay mapped, and each fault
/// maps its neighbours too (fault-around: 64 KiB on Linux, or the whole cached folio). Those pages
/// are clean copies of the files, which the kernel drops and reads again on its own under memory
/// pressure. `MADV_DONTNEED` on them does the same now: the page cache keeps them, the process's
/// page tables no longer map them, and the code it goes on running is mapped again at its next
/// fault (a minor fault while the page is cached).
///
/// Only private, non-writable mappings of a file that the process also maps executable (the
/// program and its libraries), and only those holding no anonymous page (`Anonymous: 0 kB` in
/// `/proc/self/smaps`): a page the dynamic linker relocated (RELRO) is the process's own copy and
/// would be lost, so a mapping holding any such page is left whole.
public enum ProgramPages {
    /// A mapping from `/proc/self/smaps`: its range, permissions, file and anonymous bytes.
    struct Mapping: Equatable {
        var start: UInt, end: UInt
        var permissions: String
        var path: String
        /// Nil until its `Anonymous:` line is read: a mapping without one is never released.
        var anonymousKB: Int?
        var rssKB: Int
    }

    /// What ``release()`` gave back.
    public struct Released: Sendable, Equatable {
        /// Mappings advised.
        public var mappings: Int
        /// Their resident kibibytes just before.
        public var residentKB: Int
    }

    /// Unmaps the clean pages of the program's files from this process (see the type's summary).
    ///
    /// - Returns: What was given back, or nil where `/proc/self/smaps` cannot be read (not Linux).
    @discardableResult
    public static func release() -> Released? {
        #if os(Linux)
        guard let text = readSmaps() else { return nil }
        var released = Released(mappings: 0, residentKB: 0)
        for mapping in releasable(parse(text)) {
            let length = Int(mapping.end - mapping.start)
            guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
            if madvise(address, length, MADV_DONTNEED) == 0 {
                released.mappings += 1
                released.residentKB += mapping.rssKB
            }
        }
        return released
        #else
        return nil
        #endif
    }

    /// The mappings ``release()`` advises: private, not writable, of a file with an executable
    /// mapping in the same process, with no anonymous page.
    static func releasable(_ mappings: [Mapping]) -> [Mapping] {
        // Permissions as `/proc` writes them: read, write, execute, then `p`rivate or `s`hared.
        func flags(_ m: Mapping) -> [Character] { m.permissions.count == 4 ? Array(m.permissions) : ["-", "-", "-", "-"] }
        let programFiles = Set(mappings.filter { flags($0)[2] == "x" }.map(\.path))
        return mappings.filter { m in
            let f = flags(m)
            return m.path.hasPrefix("/") && programFiles.contains(m.path) && f[1] == "-" && f[3] == "p" && m.anonymousKB == 0 && m.rssKB > 0
        }
    }

    /// Parses `/proc/<pid>/smaps`: each mapping's header line, then its `Rss:` and `Anonymous:`.
    static func parse(_ text: String) -> [Mapping] {
        var result: [Mapping] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let first = fields.first else { continue }
            if first.hasSuffix(":") {
                guard !result.isEmpty, fields.count >= 2, let kb = Int(fields[1]) else { continue }
                if first == "Rss:" { result[result.count - 1].rssKB = kb }
                if first == "Anonymous:" { result[result.count - 1].anonymousKB = kb }
                continue
            }
            let bounds = first.split(separator: "-")
            guard fields.count >= 5, bounds.count == 2, let start = UInt(bounds[0], radix: 16),
                let end = UInt(bounds[1], radix: 16), end > start
            else { continue }
            let path = fields.count >= 6 ? fields[5...].joined(separator: " ") : ""
            result.append(Mapping(start: start, end: end, permissions: String(fields[1]), path: path, anonymousKB: nil, rssKB: 0))
        }
        return result
    }

    private static func readSmaps() -> String? {
        #if os(Linux)
        let fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: bytes, as: UTF8.self)
        #else
        return nil
        #endif
    }
}
