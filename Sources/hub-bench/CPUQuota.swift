import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT

/// A cgroup whose processes together get at most `cores` of one CPU (a Raspberry Pi-class budget):
/// cgroup v2's `cpu.max` where `/sys/fs/cgroup` is the unified hierarchy, else cgroup v1's
/// `cpu.cfs_quota_us` / `cpu.cfs_period_us` under `/sys/fs/cgroup/cpu`. Setting it up needs root;
/// ``make(cores:name:)`` says why when it cannot. Removed by ``remove()`` (its processes must have
/// exited).
struct CPUQuota: Sendable {
    let directory: String
    let version: Int
    let cores: Double

    /// What the quota is, in words for the output.
    var description: String {
        let period = 100_000, quota = Int(Double(period) * cores)
        return version == 2
            ? "cgroup v2 \(directory): cpu.max \"\(quota) \(period)\""
            : "cgroup v1 \(directory): cpu.cfs_quota_us \(quota), cpu.cfs_period_us \(period)"
    }

    /// Creates the cgroup and sets its quota.
    static func make(cores: Double, name: String) -> Result<CPUQuota, HubError> {
        let fm = FileManager.default
        let period = 100_000, quota = Int(Double(period) * cores)
        let unified = fm.fileExists(atPath: "/sys/fs/cgroup/cgroup.controllers")
        let base = unified ? "/sys/fs/cgroup" : "/sys/fs/cgroup/cpu"
        guard fm.fileExists(atPath: base) else { return .failure(.failed("no cgroup cpu controller at \(base)")) }
        let dir = base + "/" + name
        do {
            if !fm.fileExists(atPath: dir) { try fm.createDirectory(atPath: dir, withIntermediateDirectories: false) }
            if unified {
                try? "+cpu".write(toFile: base + "/cgroup.subtree_control", atomically: false, encoding: .utf8)
                try "\(quota) \(period)".write(toFile: dir + "/cpu.max", atomically: false, encoding: .utf8)
            } else {
                try "\(period)".write(toFile: dir + "/cpu.cfs_period_us", atomically: false, encoding: .utf8)
                try "\(quota)".write(toFile: dir + "/cpu.cfs_quota_us", atomically: false, encoding: .utf8)
            }
        } catch {
            return .failure(.failed("cannot set up the cgroup \(dir) (needs root and a writable cgroup file system): \(error)"))
        }
        return .success(CPUQuota(directory: dir, version: unified ? 2 : 1, cores: cores))
    }

    /// Moves a process (all its threads) into the cgroup.
    func add(_ pid: Int32) throws {
        do { try "\(pid)".write(toFile: directory + "/cgroup.procs", atomically: false, encoding: .utf8) } catch {
            throw HubError.failed("cannot move process \(pid) into \(directory): \(error)")
        }
    }

    /// Times the cgroup's processes were throttled, and for how long in all (seconds), if the
    /// kernel says (`cpu.stat`: v1 `nr_throttled`, `throttled_time` ns; v2 `nr_throttled`, `throttled_usec`).
    func throttled() -> (times: Int, seconds: Double)? {
        guard let text = try? String(contentsOfFile: directory + "/cpu.stat", encoding: .utf8) else { return nil }
        var times = 0, seconds = 0.0
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = Double(parts[1]) else { continue }
            switch parts[0] {
            case "nr_throttled": times = Int(value)
            case "throttled_time": seconds = value / 1e9
            case "throttled_usec": seconds = value / 1e6
            default: break
            }
        }
        return (times, seconds)
    }

    func remove() { rmdir(directory) }
}
