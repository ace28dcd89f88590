import BrokerHarness
import Foundation
import PostgresHarness
import Testing

/// A hot standby taking over from a killed or paused active: real `hub run` processes, a real
/// PostgreSQL and a real broker (docs/operations.md, "An active and a standby").
@Suite(.serialized) struct FailoverTests {
    /// Every command id answered `ok` appears in the log exactly once.
    static func expectOnceEach(_ ids: [String], url: String, dataDirectory: String) throws {
        let events = try runHub(["events", "--data-dir", dataDirectory, "--log", url])
        #expect(events.status == 0, "\(events.stderr)")
        for id in ids {
            let count = events.stdout.split(separator: "\n").filter { $0.contains(#""command_id":"\#(id)""#) }.count
            #expect(count == 1, "command \(id) answered ok is in the log \(count) times")
        }
        let verify = try runHub(["verify", "--data-dir", dataDirectory, "--log", url])
        #expect(verify.status == 0 && verify.stdout.contains("log sound"), "\(verify.stdout)\(verify.stderr)")
    }

    @Test func theStandbyTakesOverWithinFiveSecondsWhenTheActiveIsKilled() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
        let broker = try await TestBroker.startAsync()
        defer { broker.stop() }
        let pair = try await HubPair.start(hub: hub, root: pg.dataDirectory, url: pg.url!, brokerPort: broker.port)
        defer { pair.end() }
        let client = try await CommandClient(port: broker.port)
        var ok: [String] = []
        for i in 1...10 {
            #expect(try await client.rename("k-\(i)") != nil, "k-\(i) unanswered: \(client.answers("k-\(i)")) \(pair.a.stderr)")
            ok.append("k-\(i)")
        }
        let killed = Date()
        pair.a.signal(SIGKILL)
        var firstAnswer: Date?
        for i in 11...20 {
            let answered = try await client.rename("k-\(i)")
            #expect(answered != nil, "k-\(i) unanswered after the failover: \(client.answers("k-\(i)")) \(pair.b.stderr)")
            if let answered { ok.append("k-\(i)"); firstAnswer = firstAnswer ?? answered }
        }
        let takeover = try #require(firstAnswer).timeIntervalSince(killed)
        print("failover (SIGKILL): standby b answered its first command \(String(format: "%.2f", takeover)) s after the active was killed")
        #expect(takeover < 5, "took \(takeover) s")
        #expect(client.last("hub/status/active")?.contains(#""instance":"b""#) == true, "\(client.last("hub/status/active") ?? "nothing")")
        #expect(client.last("hub/status") == "online")
        try Self.expectOnceEach(ok, url: pg.url!, dataDirectory: pg.dataDirectory + "/b")
        await client.stop()
        pair.b.signal(SIGTERM)
        #expect(await pair.b.waitExit(timeout: 15) == 0, "\(pair.b.stderr)")
    }

    /// The failover figure of docs/benchmarks.md: `HUB_FAILOVER_RUNS=10 swift test --filter failoverTimeOverRuns`
    /// kills the active that many times (a fresh log, broker and pair each run) and prints each time
    /// from the SIGKILL to the first command the standby answered, and their median.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HUB_FAILOVER_RUNS"] != nil))
    func failoverTimeOverRuns() async throws {
        let runs = Int(ProcessInfo.processInfo.environment["HUB_FAILOVER_RUNS"] ?? "") ?? 10
        var times: [Double] = []
        for run in 1...runs {
            guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
            let broker = try await TestBroker.startAsync()
            let pair = try await HubPair.start(hub: hub, root: pg.dataDirectory, url: pg.url!, brokerPort: broker.port)
            let client = try await CommandClient(port: broker.port)
            #expect(try await client.rename("f-\(run)-before") != nil)
            let killed = Date()
            pair.a.signal(SIGKILL)
            let answered = try await client.rename("f-\(run)-after")
            #expect(answered != nil)
            if let answered { times.append(answered.timeIntervalSince(killed)) }
            print("failover run \(run): \(answered.map { String(format: "%.2f s", $0.timeIntervalSince(killed)) } ?? "unanswered")")
            await client.stop()
            pair.end()
            broker.stop()
        }
        let sorted = times.sorted()
        guard !sorted.isEmpty else { return }
        let median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
        print(
            "failover over \(sorted.count) runs: p50 \(String(format: "%.2f", median)) s, min \(String(format: "%.2f", sorted.first!)) s, "
                + "max \(String(format: "%.2f", sorted.last!)) s (lease 3 s, renewed every 1 s)")
    }

    /// The active is paused past its lease and past the broker's keep-alive: the standby takes over,
    /// the broker publishes the paused one's will (`offline`) over the new active's `online`, and the
    /// new active says `online` again. Resumed, the old active appends nothing, announces nothing
    /// (`hub/status/active` keeps naming b), steps down and is a standby again in the same process:
    /// when b is killed, a takes over.
    @Test func aPausedActiveThatLostTheLeaseAppendsNothingAndBecomesAStandbyAgain() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
        let broker = try await TestBroker.startAsync()
        defer { broker.stop() }
        // Keep-alive 6 s: the broker drops the paused active about 9 s after its last packet, well
        // after b (lease 3 s) said `online`.
        let pair = try await HubPair.start(hub: hub, root: pg.dataDirectory, url: pg.url!, brokerPort: broker.port, keepAlive: 6)
        defer { pair.end() }
        let client = try await CommandClient(port: broker.port)
        var ok: [String] = []
        for i in 1...3 {
            #expect(try await client.rename("p-\(i)") != nil)
            ok.append("p-\(i)")
        }
        let paused = Date()
        pair.a.signal(SIGSTOP)
        let answered = try #require(try await client.rename("p-4"), "the standby never took over: \(pair.b.stderr)")
        ok.append("p-4")
        print(
            "failover (SIGSTOP): standby b answered its first command \(String(format: "%.2f", answered.timeIntervalSince(paused))) s after the active was paused"
        )
        #expect(client.last("hub/status/active")?.contains(#""instance":"b""#) == true)
        // Sent while a is paused: b answers it, and a finds it in its socket when it resumes.
        #expect(try await client.rename("p-5") != nil)
        ok.append("p-5")

        // The broker gives up on the paused a and publishes its will over b's `online`; b answers it.
        let will = try #require(
            await client.waitFor("hub/status", "offline", after: answered, timeout: 20),
            "the broker never published the paused active's will")
        let reasserted = await client.waitFor("hub/status", "online", after: will, timeout: 3)
        #expect(reasserted != nil, "hub/status stayed offline after the old active's will: \(pair.b.stderr)")
        print(
            "failover (SIGSTOP): the paused active's will came \(String(format: "%.2f", will.timeIntervalSince(paused))) s after the pause; "
                + "b said online again \(reasserted.map { String(format: "%.3f s", $0.timeIntervalSince(will)) } ?? "never") later")

        // Resumed: a appends nothing, steps down, and follows the log as a standby again.
        pair.a.signal(SIGCONT)
        #expect(
            await pair.a.waitFor("standby: instance a follows the log", timeout: 15), "a did not become a standby again: \(pair.a.stderr)")
        #expect(pair.a.process.isRunning, "the old active exited instead of becoming a standby: \(pair.a.stderr)")
        #expect(pair.a.stderr.contains("stepping down"), "\(pair.a.stderr)")
        // No answer of a's contradicts b's ok.
        let fenced = client.answers("p-5").filter { $0.contains("not_active") }
        #expect(fenced.isEmpty, "the resumed active answered p-5, answered ok by b, with not_active: \(fenced)")
        print("failover (SIGSTOP): the resumed active answered p-5 with not_active \(fenced.count) time(s), then became a standby again")
        try Self.expectOnceEach(ok, url: pg.url!, dataDirectory: pg.dataDirectory + "/b")
        // The hub stays online, and b is still the one announced: a said nothing when it reconnected.
        try await Task.sleep(for: .milliseconds(500))
        #expect(client.last("hub/status") == "online")
        #expect(client.last("hub/status/active")?.contains(#""instance":"b""#) == true, "\(client.last("hub/status/active") ?? "nothing")")
        #expect(try await client.rename("p-6") != nil, "b answers after a stepped down: \(pair.b.stderr)")
        ok.append("p-6")
        let p6Answers = client.answers("p-6").count

        // a is a standby again: it takes over when b dies.
        pair.b.signal(SIGKILL)
        #expect(try await client.rename("p-7") != nil, "a did not take over again: \(pair.a.stderr)")
        ok.append("p-7")
        // a unsubscribed when it stepped down: p-6, answered by b, did not wait in a's session to be run again.
        try await Task.sleep(for: .milliseconds(500))
        #expect(client.answers("p-6").count == p6Answers, "a ran p-6 again from its session: \(client.answers("p-6"))")
        #expect(client.last("hub/status/active")?.contains(#""instance":"a""#) == true, "\(client.last("hub/status/active") ?? "nothing")")
        try Self.expectOnceEach(ok, url: pg.url!, dataDirectory: pg.dataDirectory + "/a")
        await client.stop()
        pair.a.signal(SIGTERM)
        #expect(await pair.a.waitExit(timeout: 15) == 0, "\(pair.a.stderr)")
    }

    /// The active is paused past its lease but not past the broker's keep-alive, so its broker
    /// connection and its database connections still stand when it resumes: its session holds the
    /// commands sent meanwhile, and its log follower finds the events b appended. Resumed, it sends
    /// nothing to the plug (b did) and answers none of those commands (b did), then steps down.
    @Test func aResumedActiveThatLostItsLeaseSendsNothingToADeviceAndAnswersNothing() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
        // The broker logs every PUBLISH it receives, with the sender's client id: what a said.
        let broker = try await TestBroker.startAsync(logPublishes: true)
        defer { broker.stop() }
        let pair = try await HubPair.start(hub: hub, root: pg.dataDirectory, url: pg.url!, brokerPort: broker.port)
        defer { pair.end() }
        let client = try await CommandClient(port: broker.port)
        #expect(try await client.rename("q-1") != nil)
        let paused = Date()
        pair.a.signal(SIGSTOP)
        let answered = try #require(try await client.rename("q-2"), "the standby never took over: \(pair.b.stderr)")
        // Sent while a is paused, each once: b answers and carries them out; a's session keeps them.
        for i in 3...6 {
            try client.client.publish(
                "hub/request/device/rename",
                Array(#"{"id":"lamp","name":"Lamp q-\#(i)","command_id":"q-\#(i)","transaction":"q-\#(i)"}"#.utf8), qos: 1)
        }
        for i in 1...6 { try client.client.publish("hub/device/plug/switch/set", Array((i % 2 == 1 ? "ON" : "OFF").utf8), qos: 1) }
        #expect(
            await client.waitForCount("cmnd/plug/POWER", ["ON", "OFF"], 6, after: answered, timeout: 10),
            "b did not switch the plug: \(pair.b.stderr)")
        for i in 3...6 {
            let deadline = Date().addingTimeInterval(10)
            while client.answers("q-\(i)").isEmpty, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(client.answers("q-\(i)").count == 1, "q-\(i): \(client.answers("q-\(i)"))")
        }
        let sentByB = client.count("cmnd/plug/POWER", ["ON", "OFF"], after: paused)
        let resumed = Date()
        let mark = broker.logSize
        pair.a.signal(SIGCONT)
        #expect(
            await pair.a.waitFor("standby: instance a follows the log", timeout: 15), "a did not become a standby again: \(pair.a.stderr)")
        try await Task.sleep(for: .milliseconds(500))
        // Everything a publishes passes its lease gate: answers, retained state, readings, events,
        // the audit head, discovery, device commands. Resumed past its lease, it said nothing.
        let saidByA = broker.publishes(from: "hub-a", since: mark)
        print(
            "failover (SIGSTOP, resumed within the keep-alive): the broker received \(saidByA.count) publish(es) from the resumed active after SIGCONT"
        )
        #expect(saidByA.isEmpty, "the resumed active published \(saidByA.count) message(s) after SIGCONT: \(saidByA.prefix(20))")
        #expect(pair.a.stderr.contains("stepping down to standby"), "\(pair.a.stderr)")
        #expect(!pair.a.stderr.contains("hub: stopping"), "a said it stops while it becomes a standby: \(pair.a.stderr)")
        let sentByA = client.count("cmnd/plug/POWER", ["ON", "OFF"], after: paused) - sentByB
        let extra = (3...6).flatMap { client.answers("q-\($0)").dropFirst() }
        print(
            "failover (SIGSTOP, resumed within the keep-alive): the resumed active sent the plug \(sentByA) command(s) and "
                + "answered \(extra.count) command(s) b had answered, \(String(format: "%.2f", Date().timeIntervalSince(resumed))) s after SIGCONT"
        )
        #expect(sentByA == 0, "the resumed active sent the plug \(sentByA) command(s) after it lost its lease: \(pair.a.stderr)")
        #expect(extra.isEmpty, "the resumed active answered commands b had answered: \(extra)")
        #expect(pair.a.stderr.contains("stepping down"), "\(pair.a.stderr)")
        await client.stop()
    }

    /// The database restarts under both hubs: the active loses its connection and steps down, the
    /// standby's connection drops too; both reconnect with back-off, one becomes active again, and
    /// a command sent throughout is answered once the database is back, recorded once.
    @Test func bothHubsComeBackWhenTheDatabaseRestarts() async throws {
        guard PostgresServer.binaries() != nil, let hub = builtExecutable() else { return }
        let server = try PostgresServer.start()  // its own: this test stops it
        defer { server.stop() }
        let url = try server.createDatabase()
        let root = testRoot + "/\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let broker = try await TestBroker.startAsync()
        defer { broker.stop() }
        let pair = try await HubPair.start(hub: hub, root: root, url: url, brokerPort: broker.port)
        defer { pair.end() }
        let client = try await CommandClient(port: broker.port)
        var ok: [String] = []
        for i in 1...3 {
            #expect(try await client.rename("r-\(i)") != nil)
            ok.append("r-\(i)")
        }
        let cut = Date()
        server.stopKeepingData()
        #expect(await pair.a.waitFor("stepping down", timeout: 10), "the active did not step down: \(pair.a.stderr)")
        #expect(await pair.b.waitFor("cannot follow the log", timeout: 10), "\(pair.b.stderr)")
        // No instance can be active without the database: hub/status says so instead of a stale `online`.
        let offline = await client.waitFor("hub/status", "offline", after: cut, timeout: 10)
        #expect(offline != nil, "hub/status kept saying online with no instance active: \(pair.a.stderr)")
        // Sent (and re-sent) while the database is down and after it is back.
        let during = Task { try await client.rename("r-4", timeout: 60) }
        try await Task.sleep(for: .seconds(2))
        #expect(pair.a.process.isRunning && pair.b.process.isRunning, "a hub exited: \(pair.a.stderr) \(pair.b.stderr)")
        try server.restart()
        let back = Date()
        let answered = try await during.value
        #expect(answered != nil, "nobody answered after the database came back: \(pair.a.stderr) \(pair.b.stderr)")
        if let answered {
            ok.append("r-4")
            print(
                "database restart: a command was answered \(String(format: "%.2f", answered.timeIntervalSince(back))) s after the server accepted connections again"
            )
        }
        #expect(
            await client.waitFor("hub/status", "online", after: offline ?? cut, timeout: 10) != nil,
            "hub/status did not say online again once an instance was active")
        #expect(try await client.rename("r-5") != nil)
        ok.append("r-5")
        #expect(pair.a.process.isRunning && pair.b.process.isRunning, "a hub exited: \(pair.a.stderr) \(pair.b.stderr)")
        let active = client.last("hub/status/active") ?? ""
        print("database restart: instance \(active.contains(#""instance":"a""#) ? "a" : "b") is active again")
        try Self.expectOnceEach(ok, url: url, dataDirectory: root + "/a")
        await client.stop()
        for hub in [pair.a, pair.b] {
            hub.signal(SIGTERM)
            #expect(await hub.waitExit(timeout: 15) == 0, "\(hub.name): \(hub.stderr)")
        }
    }

    /// A standby answers a load balancer's health checks on its HTTP address: `/healthz` 200,
    /// `/readyz` 503 naming the active instance, the API 503 `not_active`; once it took over, the
    /// same address serves the API and says ready.
    @Test func aStandbyAnswersHealthChecksAndTheAPISaysNotActive() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
        let broker = try await TestBroker.startAsync()
        defer { broker.stop() }
        let pair = try await HubPair.start(hub: hub, root: pg.dataDirectory, url: pg.url!, brokerPort: broker.port, http: true)
        defer { pair.end() }
        let (portA, portB) = (pair.httpPorts["a"]!, pair.httpPorts["b"]!)
        #expect(await httpGet(port: portA, path: "/readyz")?.status == 200, "\(pair.a.stderr)")
        let health = await httpGet(port: portB, path: "/healthz")
        #expect(health?.status == 200, "the standby's /healthz: \(String(describing: health)) \(pair.b.stderr)")
        let ready = await httpGet(port: portB, path: "/readyz")
        #expect(ready?.status == 503, "\(String(describing: ready))")
        #expect(ready?.body.contains(#""standby":"instance a is active""#) == true, "\(String(describing: ready))")
        let api = await httpGet(port: portB, path: "/api/devices")
        #expect(api?.status == 503 && api?.body.contains(#""code":"not_active""#) == true, "\(String(describing: api))")

        pair.a.signal(SIGTERM)  // releases the lease: b takes over at once
        #expect(await pair.a.waitExit(timeout: 15) == 0, "\(pair.a.stderr)")
        let deadline = Date().addingTimeInterval(15)
        var readyAfter = await httpGet(port: portB, path: "/readyz")
        while readyAfter?.status != 200, Date() < deadline {
            try await Task.sleep(for: .milliseconds(100))
            readyAfter = await httpGet(port: portB, path: "/readyz")
        }
        #expect(readyAfter?.status == 200, "b never said ready after taking over: \(String(describing: readyAfter)) \(pair.b.stderr)")
        let devices = await httpGet(port: portB, path: "/api/devices")
        #expect(devices?.status == 200 && devices?.body.contains("lamp") == true, "\(String(describing: devices))")
        pair.b.signal(SIGTERM)
        #expect(await pair.b.waitExit(timeout: 15) == 0, "\(pair.b.stderr)")
    }

    /// Two `hub run` on one PostgreSQL log, neither given `--instance`: the first holds the lease
    /// under a name derived from its machine and data directory; the second refuses to start,
    /// naming it, and writes nothing.
    @Test func aSecondHubWithoutAnInstanceNameRefusesToWriteTheLog() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
        func launch(_ name: String) throws -> HubProcess {
            let dir = pg.dataDirectory + "/" + name
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            return try HubProcess(
                hub: hub, name: name, arguments: ["run", "--data-dir", dir, "--log", pg.url!, "--no-mqtt", "--no-http"],
                errPath: pg.dataDirectory + "/\(name).stderr")
        }
        let first = try launch("first")
        defer { first.end() }
        #expect(await first.waitFor("Ctrl-C stops"), "\(first.stderr)")
        let second = try launch("second")
        defer { second.end() }
        let status = await second.waitExit(timeout: 20)
        #expect(status != nil && status != 0, "a second hub without --instance ran beside the first: \(second.stderr)")
        #expect(second.stderr.contains("another hub writes this log: instance"), "\(second.stderr)")
        #expect(!second.stderr.contains("Ctrl-C stops"), "\(second.stderr)")
        #expect(first.process.isRunning, "\(first.stderr)")
        first.signal(SIGTERM)
        #expect(await first.waitExit(timeout: 15) == 0, "\(first.stderr)")
        // Stopped gracefully, the first released its lease: a hub without --instance starts at once.
        let third = try launch("third")
        defer { third.end() }
        #expect(await third.waitFor("Ctrl-C stops", timeout: 20), "\(third.stderr)")
        third.signal(SIGTERM)
        #expect(await third.waitExit(timeout: 15) == 0, "\(third.stderr)")
    }
}
