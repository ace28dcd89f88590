import BrokerHarness
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The Debian package `scripts/package` builds, installed on this machine with dpkg, its unit's
/// command run as the `hub` user against a real broker, then removed and purged. It needs root
/// and dpkg (it is skipped, saying so, without them). It replaces any `hub` package installed
/// here, and deletes /var/lib/hub and the `hub` user and group when it ends, so that the next run
/// starts from a machine without them.
@Suite(.serialized) struct PackageInstallTests {
    /// The repository root (this file is Tests/HubAppTests/PackageInstallTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let isRoot = getuid() == 0
    static let hasDpkg = ["/usr/bin/dpkg", "/usr/bin/dpkg-deb", "/usr/bin/dpkg-query"].allSatisfy {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// What a finished command printed: standard output, and standard error apart.
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
        var all: String { stdout + stderr }
    }

    /// Runs `command` to completion; `environment` replaces this process's own when given.
    static func run(_ command: [String], environment: [String: String]? = nil, in directory: String? = nil) throws -> Outcome {
        let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("hub-package-\(UUID().uuidString).err")
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errURL) }
        let err = try FileHandle(forWritingTo: errURL)
        var out = Pipe()
        let process = try spawn {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
            if let environment { process.environment = environment }
            if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
            out = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = FileHandle.nullDevice
            return process
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try err.close()
        let errText = (try? String(contentsOf: errURL, encoding: .utf8)) ?? ""
        return Outcome(status: process.terminationStatus, stdout: String(decoding: data, as: UTF8.self), stderr: errText)
    }

    /// The file's status without following a symbolic link (`nil`: nothing there, not even a dangling link).
    static func lstatMode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode : nil
    }

    static func exists(_ path: String) -> Bool { lstatMode(path) != nil }

    /// Whether dpkg knows the `hub` package (installed, or its configuration files left).
    static func hubPackageStatus() throws -> String? {
        let query = try run(["/usr/bin/dpkg-query", "-W", "-f=${db:Status-Status}", "hub"])
        return query.status == 0 && query.stdout != "not-installed" ? query.stdout : nil
    }

    /// Purges the package and deletes what outlives a purge: the data directory and the user.
    static func removeEverything() throws {
        if try hubPackageStatus() != nil { _ = try run(["/usr/bin/dpkg", "-P", "hub"]) }
        try? FileManager.default.removeItem(atPath: "/var/lib/hub")
        if try run(["/usr/bin/getent", "passwd", "hub"]).status == 0 { _ = try run(["/usr/sbin/userdel", "hub"]) }
        if try run(["/usr/bin/getent", "group", "hub"]).status == 0 { _ = try run(["/usr/sbin/groupdel", "hub"]) }
    }

    @Test(
        .enabled(if: isRoot, "installs a Debian package: needs root"),
        .enabled(if: hasDpkg, "needs dpkg, dpkg-deb and dpkg-query"))
    func theDebianPackageInstallsRunsAndIsPurgedKeepingTheLog() async throws {
        let hubPath = try #require(builtExecutable("hub"))
        let version = try String(contentsOf: Self.root.appendingPathComponent("VERSION"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let arch = try Self.run(["/usr/bin/dpkg", "--print-architecture"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!version.isEmpty && !arch.isEmpty)

        // A hub package installed before (or left by an interrupted run) goes first.
        if let status = try Self.hubPackageStatus() { print("PackageInstallTests: purging the hub package already here (\(status))") }
        try Self.removeEverything()
        defer { try? Self.removeEverything() }

        // The package: the debug hub built beside the tests, gzip for speed (xz by default).
        let out = temporaryDirectory()
        var environment = ProcessInfo.processInfo.environment
        environment["HUB_BIN"] = hubPath
        environment["HUB_PACKAGE_OUT"] = out
        environment["HUB_PACKAGE_COMPRESS"] = "gzip"
        let package = try Self.run([Self.root.appendingPathComponent("scripts/package").path], environment: environment, in: out)
        try #require(package.status == 0, "\(package.all)")
        let deb = package.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(deb == "\(out)/hub_\(version)_\(arch).deb", "\(package.all)")
        let name = URL(fileURLWithPath: deb).lastPathComponent
        #expect(name.wholeMatch(of: /hub_[0-9][A-Za-z0-9.+~-]*_[a-z0-9-]+\.deb/) != nil, "\(name)")
        try #require(FileManager.default.fileExists(atPath: deb))

        // Its fields and files.
        let fields = try Self.run(["/usr/bin/dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Depends"])
        #expect(fields.status == 0)
        #expect(fields.stdout.contains("Package: hub\n"), "\(fields.stdout)")
        #expect(fields.stdout.contains("Version: \(version)\n"), "\(fields.stdout)")
        #expect(fields.stdout.contains("Architecture: \(arch)\n"), "\(fields.stdout)")
        let depends = fields.stdout.split(separator: "\n").first { $0.hasPrefix("Depends: ") } ?? ""
        for needed in ["libc6", "libmosquitto1", "tzdata"] {
            #expect(depends.contains(needed), "\(fields.stdout)")
        }
        let listing = try Self.run(["/usr/bin/dpkg-deb", "-c", deb])
        #expect(listing.status == 0)
        /// The listing's line for `path`: mode, owner, size, time, path.
        func entry(_ path: String) -> String? {
            listing.stdout.split(separator: "\n").first { $0.hasSuffix(" " + path) || $0.contains(" " + path + " -> ") }.map(String.init)
        }
        #expect(entry("./usr/bin/hub")?.hasPrefix("-rwxr-xr-x root/root") == true, "\(listing.stdout)")
        #expect(entry("./usr/lib/systemd/system/hub.service")?.hasPrefix("-rw-r--r-- root/root") == true, "\(listing.stdout)")
        #expect(entry("./etc/hub/hub.json")?.hasPrefix("-rw-r----- root/root") == true, "\(listing.stdout)")
        #expect(entry("./usr/share/doc/hub/examples/hub.secured.example.json") != nil, "\(listing.stdout)")
        // The data directory is made by postinst, never shipped: dpkg would then own (and purge) it.
        #expect(!listing.stdout.contains("./var/"), "\(listing.stdout)")
        let conffiles = try Self.run(["/usr/bin/dpkg-deb", "-I", deb, "conffiles"])
        #expect(conffiles.stdout.split(separator: "\n") == ["/etc/hub/hub.json"], "\(conffiles.all)")

        // Installed.
        let install = try Self.run(["/usr/bin/dpkg", "-i", deb])
        try #require(install.status == 0, "\(install.all)")
        #expect(try Self.hubPackageStatus() == "installed")
        let help = try Self.run(["/usr/bin/hub", "--help"])
        #expect(help.status == 0 && help.stdout.contains("USAGE: hub"), "\(help.all)")
        // `hub --version`: the installed binary says the package's version, as the one packaged does.
        let builtVersion = try Self.run([hubPath, "--version"])
        let installedVersion = try Self.run(["/usr/bin/hub", "--version"])
        #expect(installedVersion.status == 0 && installedVersion.stdout == builtVersion.stdout, "\(installedVersion.all)")
        #expect(installedVersion.stdout.hasPrefix("hub \(version) (commit "), "\(installedVersion.all)")
        let user = try Self.run(["/usr/bin/getent", "passwd", "hub"])
        #expect(user.status == 0, "\(install.all)")
        let userFields = user.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":", omittingEmptySubsequences: false)
        #expect(userFields.count == 7 && userFields[5] == "/var/lib/hub" && userFields[6] == "/usr/sbin/nologin", "\(user.stdout)")
        #expect(try Self.run(["/usr/bin/getent", "group", "hub"]).status == 0)
        let data = try FileManager.default.attributesOfItem(atPath: "/var/lib/hub")
        #expect(data[.ownerAccountName] as? String == "hub")
        #expect(data[.groupOwnerAccountName] as? String == "hub")
        #expect((data[.posixPermissions] as? NSNumber)?.intValue == 0o750)
        let config = try FileManager.default.attributesOfItem(atPath: "/etc/hub/hub.json")
        #expect(config[.ownerAccountName] as? String == "root")
        #expect(config[.groupOwnerAccountName] as? String == "hub")
        #expect((config[.posixPermissions] as? NSNumber)?.intValue == 0o640)

        // The unit's command, as its user, with MQTT pointed at a private broker, and the HTTP
        // listener on a free port instead of 9480 (flags override the configuration file).
        let unit = try String(contentsOfFile: "/usr/lib/systemd/system/hub.service", encoding: .utf8)
        let unitLines = unit.split(separator: "\n").map(String.init)
        #expect(unitLines.contains("User=hub") && unitLines.contains("Group=hub"))
        let execStart = try #require(unitLines.first { $0.hasPrefix("ExecStart=") })
        var command = execStart.dropFirst("ExecStart=".count).split(separator: " ").map(String.init)
        #expect(command.starts(with: ["/usr/bin/hub", "run"]), "\(execStart)")
        #expect(execStart.contains(" --data-dir /var/lib/hub ") && execStart.contains(" --config /etc/hub/hub.json"), "\(execStart)")
        if let http = command.firstIndex(of: "--http"), http + 1 < command.count { command[http + 1] = "127.0.0.1:0" }
        let broker = try await TestBroker.startAsync()
        command += ["--mqtt-port", "\(broker.port)"]
        let logURL = URL(fileURLWithPath: out + "/hub-run.log")
        FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        // setpriv execs the hub in its own place: SIGTERM reaches the hub, and its exit status is ours.
        let hub = try spawn {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=hub", "--regid=hub", "--init-groups", "--"] + command
            process.environment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"]
            process.currentDirectoryURL = URL(fileURLWithPath: "/")
            process.standardOutput = log
            process.standardError = log
            process.standardInput = FileHandle.nullDevice
            return process
        }
        let output = { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }
        let deadline = ContinuousClock.now + .seconds(60)
        while !output().contains("Ctrl-C stops.") && hub.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(output().contains("Ctrl-C stops."), "\(output())")
        // Connected to the broker (it may say so just after it says it runs).
        while !output().contains("mqtt: connected to 127.0.0.1:\(broker.port)") && hub.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(output().contains("mqtt: connected to 127.0.0.1:\(broker.port)"), "\(output())")
        hub.terminate()
        let stopDeadline = ContinuousClock.now + .seconds(60)
        while hub.isRunning && ContinuousClock.now < stopDeadline { try await Task.sleep(for: .milliseconds(50)) }
        if hub.isRunning { kill(hub.processIdentifier, SIGKILL) }
        hub.waitUntilExit()
        try log.close()
        #expect(hub.terminationReason == .exit && hub.terminationStatus == 0, "\(output())")
        #expect(output().contains("log closed"), "\(output())")
        await broker.killAsync()
        func segments() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/var/lib/hub/log")) ?? []).filter { $0.hasSuffix(".seg") }
        }
        #expect(!segments().isEmpty, "\(output())")
        let segmentOwner = try? FileManager.default.attributesOfItem(atPath: "/var/lib/hub/log/" + (segments().first ?? ""))
        #expect(segmentOwner?[.ownerAccountName] as? String == "hub")
        let verify = try Self.run(
            [
                "/usr/bin/setpriv", "--reuid=hub", "--regid=hub", "--init-groups", "--", "/usr/bin/hub", "verify", "--data-dir",
                "/var/lib/hub"
            ], in: "/")
        #expect(verify.status == 0 && verify.stdout.contains("log sound"), "\(verify.all)")

        // Removed: the binary and the unit go; the configuration and the data directory stay.
        let remove = try Self.run(["/usr/bin/dpkg", "-r", "hub"])
        #expect(remove.status == 0, "\(remove.all)")
        #expect(remove.all.contains("/var/lib/hub"), "postrm says the data directory is kept: \(remove.all)")
        #expect(try Self.hubPackageStatus() == "config-files")
        #expect(!Self.exists("/usr/bin/hub"))
        #expect(!Self.exists("/usr/lib/systemd/system/hub.service"))
        #expect(Self.exists("/etc/hub/hub.json"))
        #expect(!segments().isEmpty)

        // Purged: /etc/hub goes, and so does what deb-systemd-helper made; /var/lib/hub and its log stay.
        let purge = try Self.run(["/usr/bin/dpkg", "-P", "hub"])
        #expect(purge.status == 0, "\(purge.all)")
        #expect(purge.all.contains("/var/lib/hub"), "postrm says the data directory is kept: \(purge.all)")
        #expect(try Self.hubPackageStatus() == nil)
        #expect(!Self.exists("/etc/hub"))
        #expect(!Self.exists("/usr/bin/hub"))
        #expect(!Self.exists("/etc/systemd/system/multi-user.target.wants/hub.service"))
        #expect(!Self.exists("/etc/systemd/system/hub.service"))
        #expect(!segments().isEmpty)
        #expect(try Self.run(["/usr/bin/getent", "passwd", "hub"]).status == 0, "the hub user outlives a purge: it owns /var/lib/hub")
    }
}
