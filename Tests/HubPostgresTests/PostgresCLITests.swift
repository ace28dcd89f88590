import BrokerHarness
import Foundation
import PostgresHarness
import Testing

/// `--log postgres://...` on the subcommands that open a log, as a user runs them.
@Suite(.serialized) struct PostgresCLITests {
    @Test func execEventsReplayVerifyAndExportWorkOnPostgres() throws {
        guard let pg = try LogPlace.fresh(.postgres), let seg = try LogPlace.fresh(.segments) else { return }
        let commands = [
            #"{"command":"register_device","id":"a","driver":"virtual","name":"A"}"#,
            #"{"command":"rename_device","id":"a","name":"Alpha"}"#
        ]
        let onPostgres = ["--data-dir", pg.dataDirectory, "--log", pg.url!]
        let exec = try runHub(["exec"] + onPostgres + commands)
        #expect(exec.status == 0, "\(exec.stderr)")
        #expect(!FileManager.default.fileExists(atPath: pg.dataDirectory + "/log"), "the segment log is not used")
        let events = try runHub(["events"] + onPostgres)
        #expect(events.status == 0)
        #expect(events.stdout.split(separator: "\n").count == 2)
        let replay = try runHub(["replay"] + onPostgres + ["--json"])
        #expect(replay.stdout.contains("Alpha"))
        let verify = try runHub(["verify"] + onPostgres)
        #expect(verify.status == 0, "\(verify.stderr)")
        #expect(verify.stdout.contains("log sound: 2 events"))
        let export = try runHub(["export"] + onPostgres + ["-"])
        #expect(export.status == 0)
        // `hub import` of that export into a segment log, and back out: the same bytes.
        try export.stdout.write(toFile: seg.dataDirectory + "/x.jsonl", atomically: true, encoding: .utf8)
        #expect(try runHub(["import", "--data-dir", seg.dataDirectory + "/d", seg.dataDirectory + "/x.jsonl"]).status == 0)
        #expect(try runHub(["export", "--data-dir", seg.dataDirectory + "/d", "-"]).stdout == export.stdout)
    }

    /// `hub exec` and `hub import` on a log a running hub writes are refused, naming the hub's
    /// instance, and write nothing; once the hub stopped (releasing its lease) `hub exec` writes,
    /// holding the lease meanwhile.
    @Test func execAndImportRefuseALogARunningHubWrites() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
        let running = try HubProcess(
            hub: hub, name: "writer",
            arguments: [
                "run", "--data-dir", pg.dataDirectory + "/hub", "--log", pg.url!, "--no-mqtt", "--no-http"
            ], errPath: pg.dataDirectory + "/writer.stderr")
        defer { running.end() }
        guard await running.waitFor("Ctrl-C stops") else {
            Issue.record("the hub did not start: \(running.stderr)")
            return
        }
        let instance =
            running.stderr.components(separatedBy: "active: instance ").dropFirst().first?.split(separator: " ").first.map(String.init)
            ?? "?"
        let onPostgres = ["--data-dir", pg.dataDirectory + "/tool", "--log", pg.url!]
        let register = #"{"command":"register_device","id":"a","driver":"virtual","name":"A"}"#
        let exec = try runHub(["exec"] + onPostgres + [register])
        #expect(exec.status != 0, "\(exec.stdout)")
        #expect(
            exec.stderr.contains("a hub writes this log: instance \(instance) holds its lease")
                && exec.stderr.contains("nothing was written"),
            "\(exec.stderr)")
        let file = pg.dataDirectory + "/one.jsonl"
        #expect(try runHub(["exec", "--data-dir", pg.dataDirectory + "/seg", register]).status == 0)
        #expect(try runHub(["export", "--data-dir", pg.dataDirectory + "/seg", file]).status == 0)
        let imported = try runHub(["import"] + onPostgres + [file])
        #expect(imported.status != 0 && imported.stderr.contains("instance \(instance) holds its lease"), "\(imported.stderr)")
        #expect(try runHub(["events"] + onPostgres).stdout.isEmpty, "a refused tool wrote to the log")
        running.signal(SIGTERM)
        #expect(await running.waitExit(timeout: 15) == 0, "\(running.stderr)")
        let after = try runHub(["exec"] + onPostgres + [register])
        #expect(after.status == 0, "\(after.stderr)")
        #expect(try runHub(["events"] + onPostgres).stdout.contains("DeviceRegistered"))
    }

    @Test func theConnectionSettingsComeFromPGVariablesAndAPasswordIsNeverPrinted() throws {
        guard let pg = try LogPlace.fresh(.postgres), let server = try PostgresServer.shared() else { return }
        let database = String(pg.url!.split(separator: "/").last!)
        let exec = try runHub(
            [
                "exec", "--data-dir", pg.dataDirectory, "--log", "postgres://",
                #"{"command":"register_device","id":"a","driver":"virtual","name":"A"}"#
            ],
            environment: ["PGHOST": server.host, "PGPORT": "\(server.port)", "PGUSER": server.user, "PGDATABASE": database])
        #expect(exec.status == 0, "\(exec.stderr)")
        #expect(try runHub(["events", "--data-dir", pg.dataDirectory, "--log", pg.url!]).stdout.contains("DeviceRegistered"))
        // Nothing listens on this port: the error names the log, masked.
        let refused = try runHub(["verify", "--data-dir", pg.dataDirectory, "--log", "postgres://hub:s3cret-pw@127.0.0.1:1/x"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("postgres://hub:***@127.0.0.1:1/x"), "\(refused.stderr)")
        #expect(!(refused.stderr + refused.stdout).contains("s3cret-pw"))
        // The password from PGPASSWORD is not printed either; a bad URL is named, masked.
        let env = try runHub(
            ["events", "--data-dir", pg.dataDirectory, "--log", "postgres://hub@127.0.0.1:1/x"],
            environment: ["PGPASSWORD": "s3cret-pw"])
        #expect(env.status != 0 && !(env.stderr + env.stdout).contains("s3cret-pw"))
        let bad = try runHub(["events", "--data-dir", pg.dataDirectory, "--log", "mysql://hub:s3cret-pw@host/x"])
        #expect(bad.status != 0 && bad.stderr.contains("not a postgres:// URL") && !bad.stderr.contains("s3cret-pw"), "\(bad.stderr)")
        // A database without a hub log: read-only subcommands say so and create nothing.
        let bare = try server.createDatabase()
        let empty = try runHub(["events", "--data-dir", pg.dataDirectory, "--log", bare])
        #expect(empty.status != 0 && empty.stderr.contains("no hub event log in this database"), "\(empty.stderr)")
    }

    @Test func anInstanceNeedsThePostgresLog() throws {
        guard let seg = try LogPlace.fresh(.segments) else { return }
        let run = try runHub(["run", "--data-dir", seg.dataDirectory, "--no-mqtt", "--instance", "a"])
        #expect(run.status != 0 && run.stderr.contains("a hot standby shares the active hub's log in PostgreSQL"), "\(run.stderr)")
        let bad = try runHub(["run", "--data-dir", seg.dataDirectory, "--no-mqtt", "--instance", "a/b"])
        #expect(bad.status != 0 && bad.stderr.contains("--instance: instance name \"a/b\""), "\(bad.stderr)")
    }

    @Test func hubRunKeepsItsLogInThePostgresTheConfigurationNames() throws {
        guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
        let config = pg.dataDirectory + "/hub.json"
        try #"{"devices":[{"id":"lamp","driver":"virtual","name":"Lamp"}],"log":"\#(pg.url!)"}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let configured = Process()
        configured.executableURL = URL(fileURLWithPath: hub)
        configured.arguments = ["run", "--data-dir", pg.dataDirectory, "--config", config, "--no-mqtt", "--no-http"]
        let errPath = pg.dataDirectory + "/stderr.txt"
        FileManager.default.createFile(atPath: errPath, contents: nil)
        configured.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        configured.standardOutput = FileHandle.nullDevice
        let process = try spawn(configured: configured)
        let deadline = Date().addingTimeInterval(30)
        var said = ""
        while Date() < deadline, process.isRunning {
            said = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
            if said.contains("Ctrl-C stops") { break }
            usleep(100_000)
        }
        #expect(said.contains("event log \(pg.url!)"), "\(said)")
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: pg.dataDirectory + "/log"))
        let events = try runHub(["events", "--data-dir", pg.dataDirectory, "--log", pg.url!])
        #expect(events.stdout.contains(#""type":"DeviceRegistered""#), "\(events.stderr)")
    }
}
