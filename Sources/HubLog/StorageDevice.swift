#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The block device a path is on, as the kernel names it under `/sys/dev/block/<major>:<minor>`:
/// what the hub's defaults for an SD card and the benchmarks' device counters go by.
package struct StorageDevice: Sendable, Equatable {
    /// The kernel's name of the device or partition: `mmcblk0p2`, `sda1`, `vda`, `loop3`.
    package let name: String
    /// `/sys/dev/block/<major>:<minor>`, which holds its `stat` counters.
    package let sysPath: String

    package init(name: String, sysPath: String) {
        self.name = name
        self.sysPath = sysPath
    }

    /// The device holding `path` (or, when it does not exist yet, its nearest existing parent), or
    /// why there is none: not a block device (tmpfs, overlay, a network file system).
    package static func holding(_ path: String) -> Result<StorageDevice, StorageDeviceProblem> {
        var st = stat()
        var place = path.isEmpty ? "." : path
        while stat(place, &st) != 0 {
            guard errno == ENOENT, let parent = Self.parent(of: place) else {
                return .failure(StorageDeviceProblem(description: "cannot stat \(place): \(String(cString: strerror(errno)))"))
            }
            place = parent
        }
        let major = (UInt64(st.st_dev) >> 8) & 0xfff | ((UInt64(st.st_dev) >> 32) & ~0xfff)
        let minor = (UInt64(st.st_dev) & 0xff) | ((UInt64(st.st_dev) >> 12) & ~0xff)
        let sys = "/sys/dev/block/\(major):\(minor)"
        guard access(sys + "/stat", F_OK) == 0 else {
            return .failure(
                StorageDeviceProblem(
                    description:
                        "\(path) is on device \(major):\(minor), which has no \(sys)/stat (not a block device: tmpfs, overlay or network)"))
        }
        var target = [CChar](repeating: 0, count: 4096)
        let length = readlink(sys, &target, target.count - 1)
        let link = length > 0 ? String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        let name = link.split(separator: "/").last.map(String.init) ?? "\(major):\(minor)"
        return .success(StorageDevice(name: name, sysPath: sys))
    }

    /// The directory holding `path` (nil for `/` and `.`).
    static func parent(of path: String) -> String? {
        guard let slash = path.lastIndex(of: "/") else { return path == "." ? nil : "." }
        if slash == path.startIndex { return path == "/" ? nil : "/" }
        return String(path[..<slash])
    }

    /// An SD card or eMMC: a device of the kernel's MMC block driver (`mmcblk*`), flash that wears
    /// with every page written and has no cache of its own to absorb rewrites.
    package var isMemoryCard: Bool { name.hasPrefix("mmcblk") }
}

/// Why a path has no block device to name.
package struct StorageDeviceProblem: Error, CustomStringConvertible {
    /// What was looked at and what was missing.
    package let description: String
}
