import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT

#if canImport(Glibc)
import Glibc
#endif

// What `hub-bench household` reads of a process, a block device and the system.

/// `write_bytes` of `/proc/<pid>/io`: bytes the process caused to be sent to storage (its page-cache
/// writes, counted when they are dirtied, whether or not writeback later merges them).
func writeBytes(_ pid: Int32) throws -> Int {
    let io = try String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)
    for line in io.split(separator: "\n") where line.hasPrefix("write_bytes:") {
        if let value = Int(line.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces)) { return value }
    }
    throw HubError.failed("no write_bytes in /proc/\(pid)/io")
}

/// The block device holding a directory, read through `/sys/dev/block/<major>:<minor>/stat`
/// (a partition's own counters when the directory is on a partition).
struct BlockDevice: Sendable {
    let storage: StorageDevice
    var name: String { storage.name }
    var statPath: String { storage.sysPath + "/stat" }

    /// The device under `path`, or why there is none (tmpfs, overlay, a network file system).
    static func holding(_ path: String) -> Result<BlockDevice, HubError> {
        StorageDevice.holding(path).map(BlockDevice.init(storage:)).mapError { .failed($0.description) }
    }

    /// Bytes written to the device since it appeared (field 7, sectors of 512 bytes).
    func bytesWritten() throws -> Int {
        let fields = try String(contentsOfFile: statPath, encoding: .utf8).split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count > 6, let sectors = Int(fields[6]) else { throw HubError.failed("cannot parse \(statPath)") }
        return sectors * 512
    }
}

/// A small ext4 file system of its own on a loop device (as root), so that the device counters
/// count only what is written under it, not every other process on the machine's disk: the
/// household's "SD card". Unmounted and detached by ``remove()``.
final class LoopDisk: @unchecked Sendable {
    let mountPoint: String
    let device: String
    private let image: String

    /// Makes a `megabytes` MiB image file at `image`, an ext4 file system on it (default options),
    /// attaches it to a free loop device and mounts it on `mountPoint` (with `options`, `mount -o`,
    /// when given).
    init(image: String, mountPoint: String, megabytes: Int, options: String? = nil) throws {
        self.image = image
        self.mountPoint = mountPoint
        try? FileManager.default.removeItem(atPath: image)
        guard FileManager.default.createFile(atPath: image, contents: nil), truncate(image, off_t(megabytes) << 20) == 0 else {
            throw HubError.failed("cannot make the image file \(image)")
        }
        try Self.run(["mkfs.ext4", "-q", "-F", image])
        device = try Self.run(["losetup", "--find", "--show", image]).trimmingCharacters(in: .whitespacesAndNewlines)
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        do { try Self.run(["mount"] + (options.map { ["-o", $0] } ?? []) + [device, mountPoint]) } catch {
            _ = try? Self.run(["losetup", "-d", device]); throw error
        }
    }

    func remove() {
        _ = try? Self.run(["umount", mountPoint])
        _ = try? Self.run(["losetup", "-d", device])
        try? FileManager.default.removeItem(atPath: image)
    }

    /// Runs a system tool to completion; its standard output, or an error with its message.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = arguments
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            throw HubError.failed(
                "\(arguments.joined(separator: " ")) failed (status \(p.terminationStatus)): "
                    + String(decoding: errors, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// A free TCP port on 127.0.0.1 (bound to port 0 and closed: another process may take it before us).
func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HubError.failed("socket: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw HubError.failed("bind: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// A counter (or a histogram's `_count`) from the hub's Prometheus text at `/metrics`.
func scrapeMetric(port: Int, _ name: String) -> Int? {
    guard let reply = try? BenchHTTP.get(port: port, path: "/metrics"), reply.status == 200 else { return nil }
    for line in reply.body.split(separator: "\n") where line.hasPrefix(name + " ") {
        return Double(line.split(separator: " ").last ?? "").map { Int($0) }
    }
    return nil
}
