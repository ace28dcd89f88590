import BrokerHarness
import Foundation
import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// What a new user copies from the README and docs, and the scripts they run, checked against the
/// hub as it is.
@Suite(.serialized) struct DocsAndScriptsTests {
    /// The repository root (this file is Tests/HubAppTests/DocsAndScriptsTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every `demo-<name>` a document names (ids the demo could register).
    static func demoNames(in text: String) -> Set<String> {
        let regex = try! NSRegularExpression(pattern: "(?<![A-Za-z0-9_-])demo-[a-z0-9]+(?:-[a-z0-9]+)*")
        let range = NSRange(text.startIndex..., in: text)
        return Set(regex.matches(in: text, range: range).map { String(text[Range($0.range, in: text)!]) })
    }

    /// `hub run --demo`, whose simulated plugs listen on fixed ports: while another demo hub holds
    /// them, it waits for them up to 2 minutes.
    static func startDemoHub(_ arguments: [String]) async throws -> RunningHub {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            do {
                return try await RunningHub.start(arguments)
            } catch let error as BrokerHarnessError where error.description.contains("another demo hub") && ContinuousClock.now < deadline {
                try await Task.sleep(for: .seconds(5))
            }
        }
    }

    /// The ids in a list answer (`request/devices`, `request/animals`).
    static func ids(_ answer: String) throws -> Set<String> {
        let json = try JSONValue.parse(Array(answer.utf8))
        guard case .array(let items)? = json["data"] else { return [] }
        return Set(items.compactMap { $0["id"]?.stringValue })
    }

    /// The README lists exactly the devices and animals `hub run --demo` registers, and no document
    /// names a demo device or animal the demo does not register (docs once used `demo-lamp` and
    /// `demo-fan`, which answer `unknown_device`).
    @Test func theDocsNameWhatTheDemoRegisters() async throws {
        let broker = try await TestBroker.startAsync()
        let dir = temporaryDirectory()
        let hub = try await Self.startDemoHub(["--demo", "--data-dir", dir + "/data", "--mqtt-port", "\(broker.port)", "--no-http"])
        let w = try await Watcher(port: broker.port)
        func ask(_ request: String) async throws -> Set<String> {
            let before = w.messages("hub/response/\(request)").count
            try w.publish("hub/request/\(request)", "")
            return try Self.ids(try await w.waitFor("hub/response/\(request)", skip: before))
        }
        var devices: Set<String> = [], animals: Set<String> = []
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            (devices, animals) = (try await ask("devices"), try await ask("animals"))
            if devices.count >= 5 && animals.count >= 2 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        let registered = devices.union(animals)
        #expect(devices == ["demo-pump", "demo-heater", "demo-kettle", "demo-tasmota", "demo-shelly"], "\(hub.output)")
        #expect(animals == ["demo-rex", "demo-tom"])

        #expect(Self.demoNames(in: try Self.read("README.md")) == registered)
        let docs = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("docs").path).filter {
            $0.hasSuffix(".md")
        }
        for doc in docs.sorted() {
            let unknown = Self.demoNames(in: try Self.read("docs/" + doc)).subtracting(registered)
            #expect(unknown.isEmpty, "docs/\(doc) names \(unknown.sorted()), which the demo does not register")
        }
        await w.stop()
        hub.stop()
        await broker.killAsync()
    }

    /// `hub verify` beside a running hub: the history files it has written and not synced yet are
    /// the running hub's to sync, not files "rebuilt ... the hub stopped before it first synced them".
    @Test func verifyBesideARunningHubTellsTheTruthAboutItsHistoryFiles() async throws {
        let broker = try await TestBroker.startAsync()
        let dir = temporaryDirectory()
        let config = dir + "/hub.json"
        try #"{"devices":[{"id":"lamp","driver":"virtual","name":"Lamp","config":{}}]}"#.write(
            toFile: config, atomically: true, encoding: .utf8)
        let hub = try await RunningHub.start(["--data-dir", dir + "/data", "--config", config, "--mqtt-port", "\(broker.port)", "--no-http"]
        )
        let w = try await Watcher(port: broker.port)
        try await w.waitFor("hub/status") { $0 == "online" }
        // Two readings minutes apart: the first's minute is finished (its bucket held by the hub
        // until it syncs the files at a snapshot or when it stops).
        let now = Int(Date().timeIntervalSince1970)
        try w.publish(
            "hub/request/command",
            #"{"command":"record_reading","device":"lamp","quantity":"power","value":7.25,"measured_at":\#(now - 180)}"#)
        try await w.waitFor("hub/response/command") { $0.contains(#""status":"ok""#) }
        try w.publish(
            "hub/request/command", #"{"command":"record_reading","device":"lamp","quantity":"power","value":9,"measured_at":\#(now)}"#)
        try await w.waitFor("hub/response/command", skip: 1) { $0.contains(#""status":"ok""#) }
        let verify = try runHub(["verify", "--data-dir", dir + "/data"])
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(!verify.stdout.contains("rebuilt") && !verify.stdout.contains("stopped before"), "\(verify.stdout)")
        // Stopped, the hub synced them.
        hub.stop()
        let after = try runHub(["verify", "--data-dir", dir + "/data"])
        #expect(after.stdout.contains("history files: 1 series, synced at sequence"), "\(after.stdout)")
        await w.stop()
        await broker.killAsync()
    }

    /// docs/mqtt.md's table of requests names every request the hub answers, and no other.
    @Test func theRequestTableListsTheRequests() throws {
        let mqtt = try Self.read("docs/mqtt.md")
        let section = mqtt.components(separatedBy: "### Requests")[1].components(separatedBy: "### History")[0]
        let names = section.split(separator: "\n").filter { $0.hasPrefix("| `") }.map { line in
            String(line.dropFirst(3).prefix { $0 != "`" })
        }
        #expect(names.sorted() == RequestParser.requestNames.sorted(), "\(names)")
    }

    /// `scripts/run` with `HUB_BIN` runs that prebuilt hub without Swift (a `swift` that fails is
    /// first on the PATH: it is never called), with its data in `HUB_DATA_DIR`.
    @Test func scriptsRunTakesAPrebuiltHubAndADataDirectory() async throws {
        let hubPath = try #require(builtExecutable("hub"))
        let broker = try await TestBroker.startAsync()
        let dir = temporaryDirectory()
        let fakeBin = dir + "/bin"
        try FileManager.default.createDirectory(atPath: fakeBin, withIntermediateDirectories: true)
        try "#!/bin/sh\necho 'swift was called' >&2\nexit 97\n".write(toFile: fakeBin + "/swift", atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fakeBin + "/swift")
        let config = dir + "/hub.json"
        try #"{"devices":[{"id":"lamp","driver":"virtual","name":"Lamp","config":{}}]}"#.write(
            toFile: config, atomically: true, encoding: .utf8)
        let data = dir + "/elsewhere"
        let logURL = URL(fileURLWithPath: dir + "/run.log")
        FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        let process = try spawn {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.root.appendingPathComponent("scripts/run").path)
            process.arguments = ["--config", config, "--no-http"]
            var environment = ProcessInfo.processInfo.environment
            environment["PATH"] = fakeBin + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
            environment["HUB_BIN"] = hubPath
            environment["HUB_DATA_DIR"] = data
            environment["HUB_MQTT_PORT"] = "\(broker.port)"
            environment["HUB_SKIP_BUILD"] = nil
            process.environment = environment
            process.standardOutput = log
            process.standardError = log
            process.standardInput = FileHandle.nullDevice
            return process
        }
        let output = { (try? String(contentsOf: logURL, encoding: .utf8)) ?? "" }
        let deadline = ContinuousClock.now + .seconds(60)
        while !output().contains("Ctrl-C stops.") && process.isRunning && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let said = output()
        #expect(said.contains("Ctrl-C stops."), "\(said)")
        #expect(said.contains("data directory \(data)"), "\(said)")
        #expect(!said.contains("swift was called"), "\(said)")
        #expect(FileManager.default.fileExists(atPath: data + "/log"))
        // Stop the hub the script runs (its only child); the script then exits with the hub's status.
        let pkill = try spawn {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/pkill")
            p.arguments = ["-TERM", "-P", "\(process.processIdentifier)"]
            return p
        }
        pkill.waitUntilExit()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(output())")
        try log.close()
        await broker.killAsync()
    }
}
