import Foundation
import HubEngine

#if canImport(Glibc)
import Glibc
#endif

/// One condition `/readyz` checks. `problem` returns nil while the condition holds, or a short
/// phrase saying what is wrong (`"mqtt: not connected to 127.0.0.1:1883"`).
public struct ReadinessCheck: Sendable {
    /// What is checked (`log`, `mqtt`, `disk`, ...): the key in `/readyz`'s body.
    public var name: String
    /// Nil when the condition holds, else a short phrase saying what is wrong.
    public var problem: @Sendable () async -> String?

    /// Creates a check.
    public init(name: String, problem: @escaping @Sendable () async -> String?) {
        self.name = name
        self.problem = problem
    }
}

/// The conditions under which the hub is ready for traffic, checked in order on every `/readyz`.
/// The hub's own are ``HubService/readinessChecks(hub:surface:options:stopping:)``;
/// more can be passed in ``HubServiceOptions/extraReadinessChecks``.
public struct Readiness: Sendable {
    /// The checks, in the order they run.
    public var checks: [ReadinessCheck]

    /// Creates the conditions.
    public init(_ checks: [ReadinessCheck]) { self.checks = checks }

    /// Every check's problem, in order; empty when ready.
    public func problems() async -> [(name: String, problem: String)] {
        var found: [(String, String)] = []
        for check in checks {
            if let problem = await check.problem() { found.append((check.name, problem)) }
        }
        return found
    }

    /// The log's writer can take appends (it has not stopped after a failed write or sync).
    public static func log(_ hub: Hub) -> ReadinessCheck {
        ReadinessCheck(name: "log") { hub.store.writerFault.map { "the log's writer stopped: \($0)" } }
    }

    /// The log's disk is not full (``Hub/storageCondition``): while it is, every command is refused
    /// with `storage_full`.
    public static func storage(_ hub: Hub) -> ReadinessCheck {
        ReadinessCheck(name: "storage") {
            guard case .full(let path, _, let reason) = hub.storageCondition else { return nil }
            return "the disk holding the log is full (\(path): \(reason)); commands are refused with storage_full"
        }
    }

    /// Connected to the broker (checked only when the hub runs with MQTT).
    public static func mqtt(_ link: any MessagingLink, host: String, port: Int) -> ReadinessCheck {
        ReadinessCheck(name: "mqtt") { link.isConnected ? nil : "not connected to the broker at \(host):\(port)" }
    }

    /// At least `minimumFreeBytes` free for the hub on the data directory's file system.
    public static func disk(_ directory: String, minimumFreeBytes: UInt64) -> ReadinessCheck {
        ReadinessCheck(name: "disk") {
            guard let free = freeBytes(directory) else { return "cannot read the free space of \(directory)" }
            guard free >= minimumFreeBytes else {
                return "\(free / 1_048_576) MiB free on \(directory), less than \(minimumFreeBytes / 1_048_576) MiB"
            }
            return nil
        }
    }

    /// Bytes an unprivileged process may still write on the file system holding `path`.
    static func freeBytes(_ path: String) -> UInt64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }
}
