// A private PostgreSQL server for tests, started the way an operator would: Debian's `postgresql`
// binaries, `initdb` in a temporary directory, `postgres` on a free loopback port with its socket in
// that directory, as the `postgres` system user when the tests run as root (PostgreSQL refuses root).
//
//     guard let server = try PostgresServer.shared() else { return }   // nil: binaries missing (said once)
//     let url = try server.createDatabase()   // postgres://hub@127.0.0.1:<port>/<fresh database>
//
// One server per test process (initdb takes a second or two); every test takes a fresh database. The
// server is stopped when the process exits (atexit), and `stop()` ends it earlier.

import BrokerHarness
import Foundation

#if canImport(Glibc)
import Glibc
#endif

public struct PostgresHarnessError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

public final class PostgresServer: @unchecked Sendable {
    public let host = "127.0.0.1"
    public let port: Int
    /// The superuser initdb created (trust authentication on loopback only).
    public let user = "hub"
    /// The temporary directory: `data/` (the cluster), the socket, `postgres.log`.
    public let directory: URL
    let bin: String
    let runAs: [String]
    /// The server's certificates when it was started with TLS (`ssl = on`), nil otherwise.
    public let certificates: TestCertificates?
    private let lock = NSLock()
    private var process: Process?
    private var databases = 0

    /// The directory holding PostgreSQL's programs (`/usr/lib/postgresql/<newest>/bin`), or nil.
    public static func binaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let sorted = versions.compactMap(Int.init).sorted(by: >)
        for version in sorted where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/postgres") {
            return "\(root)/\(version)/bin"
        }
        return nil
    }

    nonisolated(unsafe) private static var sharedServer: PostgresServer?
    nonisolated(unsafe) private static var sharedFailure: String?
    nonisolated(unsafe) private static var saidMissing = false
    private static let sharedLock = NSLock()

    /// The test process's server, started on first use; nil (with one message on standard error) when
    /// PostgreSQL is not installed. Throws when it is installed but will not start.
    public static func shared() throws -> PostgresServer? {
        try sharedLock.withLock {
            if let sharedServer { return sharedServer }
            if let sharedFailure { throw PostgresHarnessError(sharedFailure) }
            guard binaries() != nil else {
                if !saidMissing {
                    saidMissing = true
                    FileHandle.standardError.write(
                        Data(
                            "PostgresHarness: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres); skipping the PostgreSQL tests. Install Debian's `postgresql` (scripts/setup-system does).\n"
                                .utf8))
                }
                return nil
            }
            do {
                let server = try start()
                sharedServer = server
                atexit { PostgresServer.sharedServer?.stop() }
                return server
            } catch {
                sharedFailure = "\(error)"
                throw error
            }
        }
    }

    /// Starts a new server (initdb, postgres, wait until it accepts connections); with `tlsNames`, it
    /// also accepts TLS connections, with a certificate for those names (host names and IP addresses)
    /// from an authority of its own (``certificates``).
    public static func start(tlsNames: [String]? = nil) throws -> PostgresServer {
        guard let bin = binaries() else {
            throw PostgresHarnessError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hub-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var runAs: [String] = []
        if getuid() == 0 {
            guard let account = getpwnam("postgres") else {
                throw PostgresHarnessError(
                    "running as root, and there is no `postgres` user to run PostgreSQL as (Debian's postgresql package creates it)")
            }
            chown(directory.path, account.pointee.pw_uid, account.pointee.pw_gid)
            runAs = ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
        }
        chmod(directory.path, 0o700)
        var certificates: TestCertificates? = nil
        if let tlsNames {
            let made = try TestCertificates.make(in: directory.appendingPathComponent("tls"), names: tlsNames)
            // PostgreSQL reads its key only when the user it runs as owns it, readable by no one else.
            if getuid() == 0, let account = getpwnam("postgres") {
                for file in [directory.appendingPathComponent("tls").path, made.certificate, made.key] {
                    chown(file, account.pointee.pw_uid, account.pointee.pw_gid)
                }
            }
            chmod(made.key, 0o600)
            certificates = made
        }
        let server = PostgresServer(
            port: try TestBroker.freePort(), directory: directory, bin: bin, runAs: runAs, certificates: certificates)
        try server.initdb()
        try server.launch()
        try server.waitUntilReady()
        return server
    }

    private init(port: Int, directory: URL, bin: String, runAs: [String], certificates: TestCertificates?) {
        self.port = port
        self.directory = directory
        self.bin = bin
        self.runAs = runAs
        self.certificates = certificates
    }

    deinit { stop() }

    var dataDirectory: String { directory.appendingPathComponent("data").path }
    var logPath: String { directory.appendingPathComponent("postgres.log").path }

    private func initdb() throws {
        let (status, output) = try run(
            runAs + [
                "\(bin)/initdb", "-D", dataDirectory, "-U", user, "--auth=trust",
                "-E", "UTF8", "--locale=C", "--no-sync"
            ])
        guard status == 0 else { throw PostgresHarnessError("initdb failed (\(status)): \(output)") }
    }

    private func launch() throws {
        let process = Process()
        let command =
            runAs + [
                "\(bin)/postgres", "-D", dataDirectory, "-p", "\(port)", "-k", directory.path,
                "-c", "listen_addresses=\(host)", "-c", "fsync=on", "-c", "synchronous_commit=on",
                "-c", "max_connections=200"
            ]
            + (certificates.map { ["-c", "ssl=on", "-c", "ssl_cert_file=\($0.certificate)", "-c", "ssl_key_file=\($0.key)"] } ?? [])
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        FileManager.default.createFile(atPath: logPath, contents: nil)
        if getuid() == 0, let account = getpwnam("postgres") { chown(logPath, account.pointee.pw_uid, account.pointee.pw_gid) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        let started = try spawn(configured: process)
        lock.withLock { self.process = started }
    }

    private func waitUntilReady() throws {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if lock.withLock({ process?.isRunning }) != true {
                throw PostgresHarnessError("postgres exited at start: \(logTail())")
            }
            let (status, _) = try run(["\(bin)/pg_isready", "-h", host, "-p", "\(port)", "-U", user, "-t", "1"])
            if status == 0 { return }
            usleep(100_000)
        }
        stop()
        throw PostgresHarnessError("postgres did not accept connections within 30 s: \(logTail())")
    }

    /// Creates a fresh database and returns its URL (`postgres://hub@127.0.0.1:<port>/<name>`).
    public func createDatabase() throws -> String {
        let name = lock.withLock { () -> String in
            databases += 1
            return "hub_test_\(databases)"
        }
        let (status, output) = try run(["\(bin)/createdb", "-h", host, "-p", "\(port)", "-U", user, name])
        guard status == 0 else { throw PostgresHarnessError("createdb \(name) failed (\(status)): \(output)") }
        return url(database: name)
    }

    /// The URL of `database` on this server.
    public func url(database: String) -> String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// Runs one SQL statement with psql (for tests that tamper with the tables).
    public func psql(_ sql: String, database: String) throws -> String {
        let (status, output) = try run([
            "\(bin)/psql", "-h", host, "-p", "\(port)", "-U", user, "-d", database,
            "-v", "ON_ERROR_STOP=1", "-At", "-c", sql
        ])
        guard status == 0 else { throw PostgresHarnessError("psql failed (\(status)): \(output)") }
        return output
    }

    /// Stops the server at once (SIGQUIT: immediate shutdown) and removes its directory.
    public func stop() {
        let running: Process? = lock.withLock {
            let p = process
            process = nil
            return p
        }
        if let running, running.isRunning {
            kill(running.processIdentifier, SIGQUIT)
            running.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server the way an operator's fast shutdown does (SIGINT, as `pg_ctl stop -m fast`:
    /// every connection is cut), keeping its data: ``restart()`` brings the same cluster back on the
    /// same port. For tests of a lost database connection; use a server of the test's own
    /// (``start()``), not the shared one.
    public func stopKeepingData() {
        let running: Process? = lock.withLock {
            let p = process
            process = nil
            return p
        }
        guard let running, running.isRunning else { return }
        kill(running.processIdentifier, SIGINT)
        running.waitUntilExit()
    }

    /// Starts the server again after ``stopKeepingData()``, on the same port with the same data,
    /// and waits until it accepts connections.
    public func restart() throws {
        guard lock.withLock({ process == nil }) else { return }
        try launch()
        try waitUntilReady()
    }

    /// The server's processes: the postmaster and its children (the backends serving connections),
    /// for tests of a server that stops answering (SIGSTOP) without closing its connections.
    public func pids() throws -> [Int32] {
        guard let main = lock.withLock({ process?.processIdentifier }) else { return [] }
        let (_, children) = try run(["/usr/bin/pgrep", "-P", "\(main)"])
        return [main] + children.split(whereSeparator: \.isNewline).compactMap { Int32($0.trimmingCharacters(in: .whitespaces)) }
    }

    public func logTail() -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(15).joined(separator: "\n")
    }

    private func run(_ command: [String]) throws -> (Int32, String) {
        try runCapturing(command)
    }
}
