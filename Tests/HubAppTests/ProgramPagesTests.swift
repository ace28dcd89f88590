import Foundation
import Testing

@testable import HubEngine

/// `ProgramPages`: which mappings it gives back, and that the process runs on after it did.
@Suite struct ProgramPagesTests {
    static let sample = """
        5581a000-5581c000 r--p 00000000 fe:00 100 /opt/hub/bin/hub
        Rss:                   8 kB
        Anonymous:             0 kB
        5581c000-55a00000 r-xp 00002000 fe:00 100 /opt/hub/bin/hub
        Rss:                1200 kB
        Anonymous:             0 kB
        VmFlags: rd ex mr mw me
        55a00000-55a10000 r--p 001e4000 fe:00 100 /opt/hub/bin/hub
        Rss:                  64 kB
        Anonymous:            60 kB
        55a10000-55a11000 rw-p 001f4000 fe:00 100 /opt/hub/bin/hub
        Rss:                   4 kB
        Anonymous:             4 kB
        55a11000-55b00000 rw-p 00000000 00:00 0   [heap]
        Rss:                 900 kB
        Anonymous:           900 kB
        7f0000000000-7f0000100000 r--p 00000000 fe:00 200 /var/lib/hub/history/power.hist
        Rss:                 128 kB
        Anonymous:             0 kB
        7f0000100000-7f0000200000 r--s 00000000 fe:00 300 /opt/lib/libshared name.so
        Rss:                  16 kB
        Anonymous:             0 kB
        7f0000200000-7f0000300000 r-xp 00000000 fe:00 300 /opt/lib/libshared name.so
        Rss:                  32 kB
        Anonymous:             0 kB
        7f0000300000-7f0000400000 r-xp 00000000 fe:00 400 /opt/lib/libpatched.so
        Rss:                  32 kB
        Anonymous:             4 kB
        7f0000400000-7f0000500000 r-xp 00000000 fe:00 500 /opt/lib/libnoanon.so
        Rss:                  32 kB
        7f0000500000-7f0000600000 r-xp 00000000 fe:00 600 /opt/lib/libcold.so
        Rss:                   0 kB
        Anonymous:             0 kB
        """

    @Test func onlyCleanReadOnlyPrivatePagesOfTheProgramsFilesAreGivenBack() {
        let mappings = ProgramPages.parse(Self.sample)
        #expect(mappings.count == 11)
        #expect(mappings[6].path == "/opt/lib/libshared name.so")
        let released = ProgramPages.releasable(mappings).map { "\($0.permissions) \($0.path)" }
        // The binary's header and text; its relocated read-only page (anonymous), its data and the
        // heap stay; a data file mapped read-only is not the program; a shared mapping stays; a
        // text with a patched page (a debugger's breakpoint) stays; a mapping whose anonymous
        // bytes are not stated stays; one with nothing resident is skipped.
        #expect(released == ["r--p /opt/hub/bin/hub", "r-xp /opt/hub/bin/hub", "r-xp /opt/lib/libshared name.so"])
    }

    @Test func theProcessRunsOnWithItsDataAfterItsProgramPagesAreGivenBack() throws {
        let before = try Self.status("RssFile")
        let released = try #require(ProgramPages.release())
        let after = try Self.status("RssFile")
        #expect(released.mappings > 0)
        #expect(released.residentKB > 0)
        #expect(after < before, "file-backed RSS \(before) kB before, \(after) kB after")
        // Code and constants of the program and its libraries, run again: mapped again from the files.
        let text = String(decoding: try JSONEncoder().encode(["watts": 1800.5]), as: UTF8.self)
        #expect(text == #"{"watts":1800.5}"#)
        #expect(Self.relocated.map(\.description) == ["hub", "1800", "ok"])
        let sum: Int = (1...1000).reduce(0) { $0 + 3 * $1 }
        #expect(sum == 1_501_500)
    }

    /// A constant the dynamic linker relocates (its strings and their metadata).
    static let relocated: [any CustomStringConvertible & Sendable] = ["hub", 1800, "ok"]

    static func status(_ key: String) throws -> Int {
        let text = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix(key + ":") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }
}
