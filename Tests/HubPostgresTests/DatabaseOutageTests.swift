import BrokerHarness
import Foundation
import PostgresHarness
import Synchronization
import Testing

/// The log's database restarting under a running hub (docs/operations.md, "Losing the database"):
/// a real `hub run`, a real PostgreSQL stopped the way `pg_ctl stop -m fast` stops it and started
/// again on the same port, a real broker, and a client sending QoS 1 commands at a steady rate.
@Suite(.serialized) struct DatabaseOutageTests {
    /// The hub is the log's only writer (no `--instance`). Every command sent while the database is
    /// down is answered exactly once, `ok` or `log_unavailable` (retryable, nothing recorded); none
    /// is dropped silently; once the database is back new commands are answered `ok`, every
    /// command answered `ok` is in the log once, and the log verifies.
    @Test func everyCommandSentWhileTheDatabaseRestartsIsAnsweredOnce() async throws {
        guard PostgresServer.binaries() != nil, let hub = builtExecutable() else { return }
        let server = try PostgresServer.start()  // its own: this test stops it
        defer { server.stop() }
        let url = try server.createDatabase()
        let root = testRoot + "/outage-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root + "/data", withIntermediateDirectories: true)
        try #"{"devices":[{"id":"lamp","driver":"virtual","name":"Lamp"}],"beacons":false}"#
            .write(toFile: root + "/hub.json", atomically: true, encoding: .utf8)
        let broker = try await TestBroker.startAsync()
        defer { broker.stop() }
        let solo = try HubProcess(
            hub: hub, name: "solo",
            arguments: [
                "run", "--data-dir", root + "/data", "--log", url, "--config", root + "/hub.json",
                "--mqtt-host", "127.0.0.1", "--mqtt-port", "\(broker.port)", "--no-http"
            ], errPath: root + "/solo.stderr")
        defer { solo.end() }
        guard await solo.waitFor("Ctrl-C stops") else {
            Issue.record("the hub did not start: \(solo.stderr)")
            return
        }
        let client = try await CommandClient(port: broker.port)
        let sender = SteadySender(client: client)
        let sending = Task { try await sender.run(every: .milliseconds(20)) }
        #expect(await sender.waitUntil(timeout: 30) { $0.ok >= 20 }, "no commands answered ok before the outage: \(solo.stderr)")

        let cut = Date()
        server.stopKeepingData()
        // The outage lasts until the hub's lease has lapsed (its answers say so), so that it must
        // take the lease again once the database is back.
        let lapsed = await sender.waitUntil(timeout: 30) { $0.leaseLapsed && $0.unavailable >= 25 }
        #expect(lapsed, "commands sent while the database is down were not answered log_unavailable: \(sender.tally) \(solo.stderr)")
        try server.restart()
        let back = Date()
        let okAgain = await sender.waitUntil(timeout: 30) { $0.okSent(after: back) >= 20 }
        #expect(okAgain, "no command answered ok after the database came back: \(sender.tally) \(solo.stderr)")
        sending.cancel()
        _ = try? await sending.value
        let answered = await sender.waitUntil(timeout: 30) { $0.unanswered.isEmpty }
        let tally = sender.tally
        #expect(answered, "commands never answered (dropped silently): \(tally.unanswered.prefix(20)) \(solo.stderr)")
        #expect(tally.twice.isEmpty, "commands answered more than once: \(tally.twice.prefix(20))")
        #expect(tally.other.isEmpty, "answers other than ok and log_unavailable: \(tally.other.prefix(5))")
        let firstOK = tally.okAt.map(\.sent).filter { $0 > cut }.min()
        print(
            "database restart under \(tally.sent) commands at 50/s: \(tally.sentDuring(cut, back)) sent during the "
                + "\(String(format: "%.1f", back.timeIntervalSince(cut))) s outage; \(tally.ok) answered ok, \(tally.unavailable) log_unavailable, "
                + "\(tally.unanswered.count) unanswered, \(tally.twice.count) answered twice; the first command answered ok again was sent "
                + "\(firstOK.map { String(format: "%.2f", $0.timeIntervalSince(back)) } ?? "-") s after the server accepted connections")

        try FailoverTests.expectOnceEach(tally.okIds, url: url, dataDirectory: root + "/data")
        await client.stop()
        solo.signal(SIGTERM)
        #expect(await solo.waitExit(timeout: 15) == 0, "\(solo.stderr)")
    }
}

/// Sends a rename with a new command id every few milliseconds (QoS 1, never re-sent) and tallies
/// the answers each id got.
final class SteadySender: Sendable {
    let client: CommandClient
    private let sent = Mutex<[(id: String, at: Date)]>([])

    init(client: CommandClient) { self.client = client }

    func run(every interval: Duration) async throws {
        var n = 0
        while !Task.isCancelled {
            n += 1
            let id = "o-\(n)"
            let message = Array(#"{"id":"lamp","name":"Lamp \#(n)","command_id":"\#(id)","transaction":"\#(id)"}"#.utf8)
            sent.withLock { $0.append((id, Date())) }
            try client.client.publish("hub/request/device/rename", message, qos: 1)
            try await Task.sleep(for: interval)
        }
    }

    /// What each command sent so far was answered.
    struct Tally: CustomStringConvertible {
        var sent = 0
        var ok = 0
        var unavailable = 0
        var okIds: [String] = []
        var unanswered: [String] = []
        var twice: [String] = []
        var other: [String] = []
        var sentAt: [String: Date] = [:]
        var okAt: [(id: String, sent: Date)] = []
        /// Some answer said the hub's lease on the log is not confirmed (it lapsed during the outage).
        var leaseLapsed = false

        func okSent(after date: Date) -> Int { okAt.filter { $0.sent > date }.count }
        func sentDuring(_ from: Date, _ to: Date) -> Int { sentAt.values.filter { $0 >= from && $0 <= to }.count }
        var description: String { "sent \(sent), ok \(ok), log_unavailable \(unavailable), unanswered \(unanswered.count)" }
    }

    var tally: Tally {
        let sent = sent.withLock { $0 }
        var byId: [String: [String]] = [:]
        for message in client.received.messages.withLock({ $0 }) where message.topic == "hub/response/device/rename" {
            guard let range = message.text.range(of: #""transaction":""#) else { continue }
            let id = String(message.text[range.upperBound...].prefix { $0 != "\"" })
            byId[id, default: []].append(message.text)
        }
        var tally = Tally()
        tally.sent = sent.count
        for (id, at) in sent {
            tally.sentAt[id] = at
            let answers = byId[id] ?? []
            if answers.isEmpty { tally.unanswered.append(id); continue }
            if answers.count > 1 { tally.twice.append(id) }
            let answer = answers[0]
            if answer.contains(#""status":"ok""#) {
                tally.ok += 1
                tally.okIds.append(id)
                tally.okAt.append((id, at))
            } else if answer.contains(#""code":"log_unavailable""#) {
                tally.unavailable += 1
                if answer.contains("lease on it is not confirmed") { tally.leaseLapsed = true }
            } else {
                tally.other.append(answer)
            }
        }
        return tally
    }

    /// Waits until the tally meets `condition` (false: not within `timeout` seconds).
    func waitUntil(timeout: Double, _ condition: (Tally) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition(tally) { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition(tally)
    }
}
