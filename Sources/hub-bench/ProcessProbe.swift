import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT

// Helpers for the benchmarks that run the hub and simulators as separate processes.

func launch(_ exe: String, _ arguments: [String], stderr: OutputTail? = nil) throws -> Process {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: exe)
    p.arguments = arguments
    p.standardOutput = FileHandle.nullDevice
    p.standardError = stderr?.pipe ?? FileHandle.nullDevice
    try p.run()
    return p
}

/// The last lines a child wrote to a pipe (kept in memory, so reading them costs the child no disk writes).
final class OutputTail: @unchecked Sendable {
    let pipe = Pipe()
    private let lock = NSLock()
    private var lines: [String] = []

    init(keeping count: Int = 40) {
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { handle.readabilityHandler = nil; return }
            let new = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
            self.lock.withLock { self.lines = Array((self.lines + new).suffix(count)) }
        }
    }

    var text: String { lock.withLock { lines.joined(separator: "\n") } }
}

func waitForPort(_ port: Int) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
        if canConnect(port) { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw HubError.failed("nothing listens on 127.0.0.1:\(port) after 30 s")
}

func canConnect(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// utime + stime of a process, in seconds.
func cpuSeconds(_ pid: Int32) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // Fields after the command name (which is in parentheses and may hold spaces).
    guard let close = stat.lastIndex(of: ")") else { throw HubError.failed("cannot read /proc/\(pid)/stat") }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else {
        throw HubError.failed("cannot parse /proc/\(pid)/stat")
    }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

func memoryKiB(_ pid: Int32, _ field: String) throws -> Int {
    let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
        if let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") { return kib }
    }
    throw HubError.failed("no \(field) in /proc/\(pid)/status")
}

/// A field of `/proc/<pid>/smaps_rollup` in KiB (`Pss`: resident pages, each shared one divided
/// among the processes mapping it).
func smapsRollupKiB(_ pid: Int32, _ field: String) throws -> Int {
    let rollup = try String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8)
    for line in rollup.split(separator: "\n") where line.hasPrefix(field + ":") {
        if let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") { return kib }
    }
    throw HubError.failed("no \(field) in /proc/\(pid)/smaps_rollup")
}
