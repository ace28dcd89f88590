import Foundation
import Glibc
import HubRuntime

/// The disk's floor for one durable append, measured beside the logs in the same run: a 64-byte
/// write and an `fdatasync`, one after the other, in two shapes. **Growing**: each write extends the
/// file, as a segment that grows on every append does, so every `fdatasync` also commits the new
/// size (on ext4, a journal commit). **Preallocated**: each write lands in blocks written and synced
/// beforehand, so `fdatasync` has only data to flush: the floor a log with preallocated segments
/// could reach.
struct FsyncFloor {
    var growing: Double
    var preallocated: Double

    static func measure(directory: String, writes: Int) throws -> FsyncFloor {
        FsyncFloor(growing: try rate(path: directory + "/floor-growing", writes: writes, preallocate: false),
                   preallocated: try rate(path: directory + "/floor-preallocated", writes: writes, preallocate: true))
    }

    /// Durable 64-byte writes per second.
    static func rate(path: String, writes: Int, preallocate: Bool) throws -> Double {
        let fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw HubError.failed("cannot create \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd); unlink(path) }
        let record = [UInt8](repeating: 0xA5, count: 64)
        if preallocate {
            let zeros = [UInt8](repeating: 0, count: 1 << 20)
            var written = 0
            while written < writes * record.count {
                guard pwrite(fd, zeros, zeros.count, off_t(written)) == zeros.count else { throw HubError.failed("cannot write \(path)") }
                written += zeros.count
            }
            guard fsync(fd) == 0 else { throw HubError.failed("cannot sync \(path)") }
        }
        let started = ContinuousClock.now
        for i in 0..<writes {
            guard pwrite(fd, record, record.count, off_t(i * record.count)) == record.count, fdatasync(fd) == 0 else {
                throw HubError.failed("cannot write and sync \(path): \(String(cString: strerror(errno)))")
            }
        }
        return Double(writes) / (ContinuousClock.now - started).inSeconds
    }

    /// Lines for the table's foot: the two floors and the hub log's one writer against each.
    func lines(hubOneWriter: Double?, writes: Int) -> String {
        func share(_ floor: Double) -> String {
            guard let hubOneWriter, floor > 0 else { return "" }
            return String(format: "; hub log a) = %.0f %% of it", hubOneWriter / floor * 100)
        }
        return """
            Floor, same run, same disk (\(writes) writes of 64 bytes, each followed by fdatasync):
            - growing file (each write extends it): \(Int(growing.rounded())) writes/s\(share(growing))
            - preallocated file (blocks written and synced before): \(Int(preallocated.rounded())) writes/s\(share(preallocated))
            """
    }
}
