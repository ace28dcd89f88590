import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `hub run` (the `hub` built beside the tests) as a real process that keeps running while a test
/// talks to it: its standard output and error go to one log file, and it counts as started once
/// it says `Ctrl-C stops.`
///
///     let hub = try await RunningHub.start(["--data-dir", dir, "--mqtt-port", "\(broker.port)", "--http", "127.0.0.1:\(port)"])
///     defer { hub.stop() }
public final class RunningHub: @unchecked Sendable {
    public let process: Process
    /// What the hub printed, standard output and error together.
    public let logURL: URL

    private init(process: Process, logURL: URL) {
        self.process = process
        self.logURL = logURL
    }

    deinit { stop() }

    /// Starts `hub run` with `arguments` and waits until it runs.
    /// - Throws: `BrokerHarnessError` with the hub's output when it exits or does not say it runs
    ///   within `timeout`.
    public static func start(
        _ arguments: [String], environment: [String: String] = [:],
        timeout: Duration = .seconds(60)
    ) async throws -> RunningHub {
        guard let path = builtExecutable("hub") else { throw BrokerHarnessError("the hub executable was not built") }
        let logURL = FileManager.default.temporaryDirectory.appendingPathComponent("hub-run-\(UUID().uuidString).log")
        FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        let process = try spawn {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = ["run"] + arguments
            if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new } }
            process.standardOutput = log
            process.standardError = log
            process.standardInput = FileHandle.nullDevice
            return process
        }
        try log.close()
        let hub = RunningHub(process: process, logURL: logURL)
        let deadline = ContinuousClock.now + timeout
        while !hub.output.contains("Ctrl-C stops.") {
            guard process.isRunning else {
                throw BrokerHarnessError("hub run exited with status \(process.terminationStatus) before it ran:\n\(hub.output)")
            }
            guard ContinuousClock.now < deadline else {
                hub.stop()
                throw BrokerHarnessError("hub run did not say it runs within \(timeout):\n\(hub.output)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return hub
    }

    /// Everything the hub printed so far.
    public var output: String {
        (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
    }

    /// SIGTERM (a graceful stop), SIGKILL if it still runs after 10 s; removes the log file.
    public func stop() {
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: logURL)
    }
}
