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
        print("failover over \(sorted.count) runs: p50 \(String(format: "%.2f", median)) s, min \(String(format: "%.2f", sorted.first!)) s, "
              + "max \(String(format: "%.2f", sorted.last!)) s (lease 3 s, renewed every 1 s)")
    }

    @Test func aPausedActiveThatLostTheLeaseAppendsNothingAndStepsDown() async throws {
        guard let pg = try LogPlace.fresh(.postgres), let hub = builtExecutable() else { return }
        let broker = try await TestBroker.startAsync()
        defer { broker.stop() }
        let pair = try await HubPair.start(hub: hub, root: pg.dataDirectory, url: pg.url!, brokerPort: broker.port)
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
        print("failover (SIGSTOP): standby b answered its first command \(String(format: "%.2f", answered.timeIntervalSince(paused))) s after the active was paused")
        #expect(client.last("hub/status/active")?.contains(#""instance":"b""#) == true)
        // Sent while a is paused: b answers it, and a finds it in its socket when it resumes.
        #expect(try await client.rename("p-5") != nil)
        ok.append("p-5")
        pair.a.signal(SIGCONT)
        let status = await pair.a.waitExit(timeout: 10)
        #expect(status != nil && status != 0, "the old active did not step down: \(pair.a.stderr)")
        #expect(pair.a.stderr.contains("stepping down"), "\(pair.a.stderr)")
        let fenced = client.answers("p-5").filter { $0.contains("not_active") }
        print("failover (SIGSTOP): the resumed active answered p-5 with not_active \(fenced.count) time(s); it stepped down with status \(status.map(String.init) ?? "-")")
        try Self.expectOnceEach(ok, url: pg.url!, dataDirectory: pg.dataDirectory + "/b")
        // The hub stays online: the old active left without `offline`, b still holds the lease.
        try await Task.sleep(for: .milliseconds(300))
        #expect(client.last("hub/status") == "online")
        #expect(try await client.rename("p-6") != nil, "b answers after a left: \(pair.b.stderr)")
        await client.stop()
    }
}
