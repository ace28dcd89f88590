import BrokerHarness
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small file system of its own (tmpfs), for tests that need a really full disk: `fill()` takes
/// every free byte with a ballast file, `free()` gives them back. Mounting needs root
/// (CAP_SYS_ADMIN); where it is not permitted, tests skip themselves with ``unavailableReason``.
public final class SmallDisk: @unchecked Sendable {
    /// The mount point.
    public let path: String
    private var ballastCount = 0
    private var mounted = true

    /// Mounts a tmpfs of `megabytes` MiB on a fresh directory.
    ///
    /// - Throws: When the directory cannot be made or `mount` fails (not root, no tmpfs).
    public init(megabytes: Int) throws {
        path = FileManager.default.temporaryDirectory.path + "/small-disk-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let (status, output) = Self.run(["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0755", "tmpfs", path])
        guard status == 0 else {
            rmdir(path)
            throw SmallDiskError(message: "mount -t tmpfs on \(path) failed (status \(status)): \(output)")
        }
    }

    deinit { unmount() }

    /// Whether a tmpfs can be mounted here (asked once, by mounting and unmounting one).
    public static let available: Bool = (try? SmallDisk(megabytes: 1)) != nil

    /// Why tests that need a full disk are skipped.
    public static let unavailableReason =
        "skipped: this test makes a real full disk by mounting a small tmpfs, which needs root (CAP_SYS_ADMIN) and is not permitted here"

    /// Free bytes on the file system, as a writer sees them.
    public var freeBytes: Int {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return -1 }
        return Int(st.f_bavail) * Int(st.f_frsize)
    }

    /// Takes every free byte: writes a new ballast file until the file system says ENOSPC (in
    /// 64 KiB, then smaller pieces down to a byte).
    public func fill() throws {
        ballastCount += 1
        let file = path + "/ballast-\(ballastCount)"
        let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else {
            if errno == ENOSPC { return }  // not even an inode left: full already
            throw SmallDiskError(message: "cannot create \(file): errno \(errno)")
        }
        defer { close(fd) }
        var piece = 64 * 1024
        let bytes = [UInt8](repeating: 0xA5, count: piece)
        while piece >= 1 {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, piece) }
            if n < 0 {
                guard errno == ENOSPC else { throw SmallDiskError(message: "write \(file): errno \(errno)") }
                piece /= 2
            }
        }
    }

    /// Gives back `bytes` of the space the newest ballast file holds (it is cut shorter).
    public func release(bytes: Int) {
        let file = path + "/ballast-\(ballastCount)"
        var st = stat()
        guard ballastCount > 0, stat(file, &st) == 0 else { return }
        _ = truncate(file, max(0, st.st_size - off_t(bytes)))
    }

    /// Removes every ballast file: the space is free again.
    public func free() {
        for n in stride(from: ballastCount, through: 1, by: -1) { unlink(path + "/ballast-\(n)") }
        ballastCount = 0
    }

    /// Unmounts (lazily, so a file still open does not keep it busy) and removes the mount point.
    public func unmount() {
        guard mounted else { return }
        mounted = false
        _ = Self.run(["umount", "-l", path])
        rmdir(path)
    }

    static func run(_ arguments: [String]) -> (Int32, String) {
        let configured = Process()
        configured.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        configured.arguments = arguments
        let pipe = Pipe()
        configured.standardOutput = pipe
        configured.standardError = pipe
        let process: Process
        do { process = try spawn(configured: configured) } catch { return (-1, "\(error)") }
        process.waitUntilExit()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, output.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// Why a small disk could not be made.
public struct SmallDiskError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
