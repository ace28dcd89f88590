// A private mosquitto broker for tests: its own temp directory, config, free port and log file.
//
//     let broker = try TestBroker.start()
//     ... connect to broker.host:broker.port ...
//     try broker.restart()   // same port, same config (and persisted state when persistence: true)
//     broker.stop()          // also done by deinit

import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

public struct BrokerHarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public final class TestBroker: @unchecked Sendable {
    public let host = "127.0.0.1"
    public private(set) var port: Int
    /// Temp directory holding mosquitto.conf, mosquitto.log, passwords, acl and persistence data.
    public let directory: URL
    public let configURL: URL
    public let logURL: URL

    private let executable: String
    private let lock = NSLock()
    private var process: Process?
    /// The broker's process id while it runs (for CPU accounting in benchmarks).
    public var pid: Int32? { lock.withLock { process?.processIdentifier } }

    private init(port: Int, directory: URL, executable: String) {
        self.port = port
        self.directory = directory
        self.configURL = directory.appendingPathComponent("mosquitto.conf")
        self.logURL = directory.appendingPathComponent("mosquitto.log")
        self.executable = executable
    }

    deinit {
        // SIGKILL: nothing needs saving any more, and mosquitto 2.0 takes ~2 s to honour SIGTERM.
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts a broker on a free port of 127.0.0.1.
    /// - secured: `allow_anonymous false` and a password file made from `users` (name, password).
    /// - acl: text of an `acl_file` (`user <name>` / `topic read|write|readwrite <filter>` / `pattern ...`).
    /// - persistence: keep sessions and retained messages across stop()/restart() (saved on SIGTERM).
    /// - logPublishes: the broker logs every packet (`log_type debug`), each PUBLISH it receives as
    ///   `Received PUBLISH from <client id> (…, '<topic>', …)`: what a client sent, seen by the broker
    ///   (``publishes(from:since:)``).
    public static func start(
        secured: Bool = false, users: [(String, String)] = [], acl: String? = nil,
        persistence: Bool = false, logPublishes: Bool = false
    ) throws -> TestBroker {
        let executable = try findMosquitto()
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("hub-test-broker-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        var lastError: Error?
        // The free port is found by binding port 0 and closing it; someone else may grab it before
        // mosquitto binds it, so retry with a fresh port a few times.
        for _ in 0..<4 {
            let port = try freePort()
            let broker = TestBroker(port: port, directory: directory, executable: executable)
            do {
                try broker.writeConfig(secured: secured, users: users, acl: acl, persistence: persistence, logPublishes: logPublishes)
                try broker.launch()
                return broker
            } catch {
                lastError = error
                broker.stop()
                if !broker.logTail().contains("Address already in use") { break }
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError ?? BrokerHarnessError("could not start mosquitto")
    }

    // MARK: - Async variants
    //
    // start/stop/restart block their thread (mosquitto 2.0 needs ~2 s to exit on SIGTERM). Swift
    // Testing runs tests in parallel on a small cooperative pool (2 threads on a 2-core machine),
    // so async tests should use these: the blocking work runs on a thread of its own.

    public static func startAsync(
        secured: Bool = false, users: [(String, String)] = [], acl: String? = nil,
        persistence: Bool = false, logPublishes: Bool = false
    ) async throws -> TestBroker {
        try await offThread {
            try TestBroker.start(secured: secured, users: users, acl: acl, persistence: persistence, logPublishes: logPublishes)
        }
    }

    public func stopAsync() async {
        _ = try? await offThread { self.stop() }
    }

    public func restartAsync() async throws {
        try await offThread { try self.restart() }
    }

    public func killAsync() async {
        _ = try? await offThread { self.kill() }
    }

    // MARK: - Lifecycle

    /// SIGTERM and wait for the process to exit (SIGKILL after 5 s). Idempotent.
    public func stop() {
        lock.lock()
        let process = self.process
        self.process = nil
        lock.unlock()
        guard let process, process.isRunning else { return }
        process.terminate()
        if !Self.wait(for: process, seconds: 5) {
            sendSignal(process.processIdentifier, SIGKILL)
            _ = Self.wait(for: process, seconds: 5)
        }
    }

    /// SIGKILL: the broker vanishes without saving anything.
    public func kill() {
        lock.lock()
        let process = self.process
        self.process = nil
        lock.unlock()
        guard let process, process.isRunning else { return }
        sendSignal(process.processIdentifier, SIGKILL)
        _ = Self.wait(for: process, seconds: 5)
    }

    /// stop() then start again on the SAME port with the same config. Waits until it accepts
    /// connections (the port is retried for a few seconds in case it is briefly unavailable).
    public func restart() throws {
        stop()
        var lastError: Error?
        let deadline = Date().addingTimeInterval(10)
        repeat {
            do {
                try launch()
                return
            } catch {
                lastError = error
                if !logTail().contains("Address already in use") { break }
                usleep(200_000)
            }
        } while Date() < deadline
        throw lastError ?? BrokerHarnessError("could not restart mosquitto on port \(port)")
    }

    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        return process?.isRunning ?? false
    }

    /// The last `lines` lines of the broker's log (stdout and stderr).
    public func logTail(lines: Int = 30) -> String {
        guard let data = FileManager.default.contents(atPath: logURL.path) else { return "" }
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// The size of the broker's log now: a mark for ``publishes(from:since:)``.
    public var logSize: Int { (try? FileManager.default.attributesOfItem(atPath: logURL.path)[.size] as? Int) ?? 0 }

    /// The topics of the PUBLISH packets the broker received from the client `clientId` and logged
    /// after the log was `since` bytes long (a broker started with `logPublishes`).
    public func publishes(from clientId: String, since: Int = 0) -> [String] {
        guard let data = FileManager.default.contents(atPath: logURL.path), data.count > since else { return [] }
        let text = String(decoding: data[since...], as: UTF8.self)
        let marker = "Received PUBLISH from \(clientId) ("
        return text.split(separator: "\n").compactMap { line -> String? in
            guard let start = line.range(of: marker) else { return nil }
            let rest = line[start.upperBound...]
            guard let open = rest.firstIndex(of: "'") else { return "?" }
            let after = rest[rest.index(after: open)...]
            return after.firstIndex(of: "'").map { String(after[..<$0]) } ?? String(after)
        }
    }

    // MARK: - Internals

    private static func findMosquitto() throws -> String {
        var candidates = ["/usr/sbin/mosquitto"]
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        candidates += path.split(separator: ":").map { "\($0)/mosquitto" }
        candidates += ["/usr/local/sbin/mosquitto", "/usr/bin/mosquitto"]
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw BrokerHarnessError(
            "the mosquitto broker is not installed (looked in /usr/sbin and PATH); run scripts/setup-system to install mosquitto and mosquitto-clients"
        )
    }

    private static func findTool(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        return dirs.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Binds 127.0.0.1:0, reads the port the kernel chose, closes the socket (a server started
    /// next on it, a broker or a PostgreSQL, takes it).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BrokerHarnessError("socket(): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw BrokerHarnessError("bind(127.0.0.1:0): \(String(cString: strerror(errno)))") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw BrokerHarnessError("getsockname: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// True when a TCP connection to host:port succeeds.
    private static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func wait(for process: Process, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return !process.isRunning
    }

    private func writeConfig(secured: Bool, users: [(String, String)], acl: String?, persistence: Bool, logPublishes: Bool = false) throws {
        var lines = [
            "# written by BrokerHarness.TestBroker",
            "listener \(port) 127.0.0.1",
            // Send small packets at once rather than waiting for the peer's delayed ACK (Nagle).
            "set_tcp_nodelay true",
            // Never drop queued QoS 1/2 messages for a client that is behind (the default keeps 1000).
            // Not 0: mosquitto 2.0.11 then drops the connection of a client whose publish the ACL
            // refuses (its bug #3244, fixed in 2.0.22), as deploy/mosquitto-*.conf explain.
            "max_queued_messages 1000000",
            "log_dest stderr",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "connection_messages true",
            "log_timestamp_format %H:%M:%S"
        ]
        if logPublishes { lines.append("log_type debug") }
        if getuid() == 0 {
            // mosquitto started as root would switch to the "mosquitto" user and then fail to read
            // our files in the temp directory.
            lines.append("user root")
        }
        if secured {
            lines.append("allow_anonymous false")
            let passwords = directory.appendingPathComponent("passwords")
            _ = FileManager.default.createFile(atPath: passwords.path, contents: Data())
            guard let tool = Self.findTool("mosquitto_passwd") else {
                throw BrokerHarnessError("mosquitto_passwd is not installed; run scripts/setup-system")
            }
            for (index, user) in users.enumerated() {
                var arguments = index == 0 ? ["-c", "-b"] : ["-b"]
                arguments += [passwords.path, user.0, user.1]
                try Self.run(tool, arguments, log: logURL)
            }
            lines.append("password_file \(passwords.path)")
        } else {
            lines.append("allow_anonymous true")
        }
        if let acl {
            let aclURL = directory.appendingPathComponent("acl")
            try acl.write(to: aclURL, atomically: true, encoding: .utf8)
            lines.append("acl_file \(aclURL.path)")
        }
        if persistence {
            let data = directory.appendingPathComponent("data", isDirectory: true)
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            lines.append("persistence true")
            lines.append("persistence_location \(data.path)/")
            lines.append("autosave_interval 1")
        }
        try (lines.joined(separator: "\n") + "\n").write(to: configURL, atomically: true, encoding: .utf8)
    }

    private static func run(_ executable: String, _ arguments: [String], log: URL) throws {
        let (status, output) = try runCapturing([executable] + arguments)
        guard status == 0 else {
            throw BrokerHarnessError("\(executable) \(arguments.dropLast().joined(separator: " ")) failed (\(status)): \(output)")
        }
    }

    /// Starts `mosquitto -c <conf>` and waits (10 s max) until the port accepts connections.
    private func launch() throws {
        if !FileManager.default.fileExists(atPath: logURL.path) {
            _ = FileManager.default.createFile(atPath: logURL.path, contents: Data())
        }
        guard let logHandle = FileHandle(forWritingAtPath: logURL.path) else {
            throw BrokerHarnessError("cannot write the broker log \(logURL.path)")
        }
        defer { try? logHandle.close() }
        logHandle.seekToEndOfFile()
        logHandle.write(Data("--- starting \(executable) -c \(configURL.path) on port \(port)\n".utf8))

        let process: Process
        do {
            process = try spawn {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = ["-c", configURL.path]
                process.standardInput = FileHandle.nullDevice
                process.standardOutput = logHandle
                process.standardError = logHandle
                return process
            }
        } catch {
            throw BrokerHarnessError("cannot run \(executable): \(error)")
        }
        lock.lock()
        self.process = process
        lock.unlock()

        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if !process.isRunning {
                throw BrokerHarnessError(
                    "mosquitto exited with status \(process.terminationStatus) before accepting connections on 127.0.0.1:\(port). Broker log:\n\(logTail())"
                )
            }
            if Self.canConnect(port: port) { return }
            usleep(20_000)
        }
        stop()
        throw BrokerHarnessError("mosquitto did not accept connections on 127.0.0.1:\(port) within 10 s. Broker log:\n\(logTail())")
    }
}

private func sendSignal(_ pid: Int32, _ signal: Int32) {
    #if canImport(Glibc)
    _ = Glibc.kill(pid, signal)
    #elseif canImport(Darwin)
    _ = Darwin.kill(pid, signal)
    #endif
}

/// Runs blocking work on a dedicated thread and resumes the caller when it is done.
private func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.start()
    }
}
