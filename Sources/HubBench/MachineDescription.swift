import CSQLite
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One line describing the machine for benchmark reports: CPU model, cores, memory, kernel, and the
/// filesystem (with its device) holding `dataDirectory` when given. Missing parts are left out.
public func machineDescription(dataDirectory: String? = nil) -> String {
    var parts: [String] = []
    if let cpu = cpuModel() { parts.append(cpu) }
    parts.append("\(ProcessInfo.processInfo.activeProcessorCount) cores")
    let memory = ProcessInfo.processInfo.physicalMemory
    if memory > 0 { parts.append(String(format: "%.1f GiB RAM", Double(memory) / 1_073_741_824)) }
    if let kernel = kernelDescription() { parts.append(kernel) }
    if let dataDirectory, let fs = filesystem(of: dataDirectory) { parts.append("data on \(fs)") }
    parts.append("SQLite \(String(cString: sqlite3_libversion()))")
    return parts.joined(separator: ", ")
}

private func cpuModel() -> String? {
    #if os(Linux)
    guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return nil }
    for key in ["model name", "Hardware", "Processor", "cpu model"] {
        for line in text.split(separator: "\n") where line.hasPrefix(key) {
            if let colon = line.firstIndex(of: ":") {
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                if !value.isEmpty { return value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }
            }
        }
    }
    return nil
    #else
    var size = 0
    guard sysctlbyname("machdep.cpu.brand_string", nil, &size, nil, 0) == 0, size > 0 else { return nil }
    var buffer = [CChar](repeating: 0, count: size)
    guard sysctlbyname("machdep.cpu.brand_string", &buffer, &size, nil, 0) == 0 else { return nil }
    return String(cString: buffer)
    #endif
}

private func kernelDescription() -> String? {
    var info = utsname()
    guard uname(&info) == 0 else { return nil }
    func field<T>(_ value: T) -> String {
        withUnsafeBytes(of: value) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
    return "\(field(info.sysname)) \(field(info.release)) \(field(info.machine))"
}

/// The filesystem type and device of the mount holding `path` (Linux: longest matching mount point
/// in /proc/self/mounts).
private func filesystem(of path: String) -> String? {
    #if os(Linux)
    guard let resolved = realpath(path, nil) else { return nil }
    let target = String(cString: resolved)
    free(resolved)
    guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return nil }
    var best: (mountPoint: String, type: String, device: String)?
    for line in mounts.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count >= 3 else { continue }
        let mountPoint = String(fields[1]).replacingOccurrences(of: "\\040", with: " ")
        let matches = mountPoint == "/" || target == mountPoint || target.hasPrefix(mountPoint + "/")
        if matches, mountPoint.count >= (best?.mountPoint.count ?? -1) {
            best = (mountPoint, String(fields[2]), String(fields[0]))
        }
    }
    return best.map { "\($0.type) (\($0.device) on \($0.mountPoint))" }
    #else
    return nil
    #endif
}
