import BrokerHarness
import Foundation
import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

private let minute: Int64 = 60_000_000
private let hour: Int64 = 60 * minute

/// Three hours ago, on the hour: readings measured after it lie inside every retention.
private func baseHour() -> Int64 { (currentMicros() / hour - 3) * hour }

private func iso(_ micros: Int64) -> String { ISO8601.format(micros: micros) }

/// `{"subject":...}` with `from`/`to` and extra fields.
private func request(
    _ subject: String = "device/lamp", _ quantity: String = "power", from: String, to: String,
    bucket: String = "1h", id: String, extra: String = ""
) -> String {
    #"{"subject":"\#(subject)","quantity":"\#(quantity)","from":"\#(from)","to":"\#(to)","bucket":"\#(bucket)","id":"\#(id)"\#(extra)}"#
}

/// `hub/request/history` against a real broker and a running hub, and `hub exec` and `hub replay` on a data directory.
@Suite(.serialized) struct HistorySurfaceTests {
    @Test func historyOverMQTTAnswersBucketsAndRefusesWithCodes() async throws {
        let f = try await SurfaceFixture.start()
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        let base = baseHour()
        for (n, (offset, watts)) in [(10 * minute, 100.0), (20 * minute, 300), (hour + 5 * minute, 50)].enumerated() {
            try w.publish(
                "hub/request/command",
                #"{"command":"record_reading","device":"lamp","quantity":"power","value":\#(watts),"#
                    + #""measured_at":"\#(iso(base + offset))","command_id":"r\#(n)"}"#)
        }
        try await w.waitFor("hub/response/command") { $0.contains(#""id":null"#) }
        let answered = { w.messages("hub/response/command").count }
        let deadline = ContinuousClock.now + .seconds(8)
        while answered() < 3, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(w.messages("hub/response/command").allSatisfy { w.text($0).contains(#""status":"ok""#) })

        try w.publish("hub/request/history", request(from: iso(base), to: iso(base + 2 * hour), id: "q1"))
        let ok = try await w.waitFor("hub/response/history") { $0.contains(#""id":"q1""#) }
        // Means weighted by time, the last value held up to the hub's clock (now, hours later):
        // 100 W for 10 minutes and 300 W for 40, then 300 W for 5 minutes and 50 W for 55.
        #expect(
            ok == #"{"status":"ok","data":[{"start":"\#(iso(base))","count":2,"min":100,"max":300,"mean":260,"last":300},"#
                + #"{"start":"\#(iso(base + hour))","count":1,"min":50,"max":50,"mean":\#(4250.0 / 60),"last":50}],"id":"q1"}"#)
        try w.publish("hub/request/history", request(from: iso(base), to: iso(base + 2 * hour), bucket: "1m", id: "q2"))
        let minutes = try await w.waitFor("hub/response/history") { $0.contains(#""id":"q2""#) }
        #expect(minutes.components(separatedBy: #""count":1"#).count == 4)  // three minute buckets with a reading
        #expect(minutes.components(separatedBy: #""start""#).count == 111)  // and the 110 minutes a value held in, from 10 minutes on

        let refusals: [(String, String)] = [
            (request(from: iso(base + hour), to: iso(base), id: "e1"), "bad_range"),
            (request(from: "yesterday", to: iso(base), id: "e2"), "bad_range"),
            (request("device/ghost", from: iso(base), to: iso(base + hour), id: "e3"), "unknown_subject"),
            (request("device/lamp", "watts", from: iso(base), to: iso(base + hour), id: "e4"), "unknown_quantity"),
            (request(from: iso(base), to: iso(base + hour), bucket: "5m", id: "e5"), "bad_bucket"),
            (request(from: iso(base - 7 * 24 * hour), to: iso(base), bucket: "1m", id: "e6"), "too_many_buckets"),
            (request(from: iso(base - 8 * 24 * hour), to: iso(base - 8 * 24 * hour + hour), bucket: "1m", id: "e7"), "not_retained"),
            (request("device/lamp", "energy", from: iso(base), to: iso(base + hour), id: "e8"), "bad_bucket")
        ]
        for (payload, _) in refusals { try w.publish("hub/request/history", payload) }
        for (n, (_, code)) in refusals.enumerated() {
            let answer = try await w.waitFor("hub/response/history") { $0.contains(#""id":"e\#(n + 1)""#) }
            #expect(answer.hasPrefix(#"{"status":"error","error":"#) && answer.contains(#""code":"\#(code)""#), "\(answer)")
        }
        // A malformed request: an unknown key, named, and no code (nothing was asked of the model).
        try w.publish("hub/request/history", request(from: iso(base), to: iso(base + hour), id: "m1", extra: #","colour":"red""#))
        let malformed = try await w.waitFor("hub/response/history") { $0.contains(#""id":"m1""#) }
        #expect(
            malformed.contains(#"\"colour\": is not a known field (known: bucket, from, id, quantity, subject, to, transaction)"#)
                && !malformed.contains(#""code""#), "\(malformed)")
        try w.publish("hub/request/history", #"{"subject":"device/lamp","id":"m2"}"#)
        let missing = try await w.waitFor("hub/response/history") { $0.contains(#""id":"m2""#) }
        #expect(missing.contains(#"\"quantity\": is required"#), "\(missing)")
        try await f.stop()
    }

    @Test func execAndReplayAnswerTheSameQuery() throws {
        let (dir, _) = try dataDirectory(registering: ["kettle"])
        let base = baseHour()
        let readings = [(5 * minute, 2000.0), (6 * minute, 1800), (hour, 10)].map { offset, watts in
            #"{"command":"record_reading","device":"kettle","quantity":"power","value":\#(watts),"measured_at":"\#(iso(base + offset))"}"#
        }
        let recorded = try runHub(["exec", "--data-dir", dir] + readings)
        #expect(recorded.status == 0, "\(recorded.stderr)")
        let query =
            #"{"query":"history","subject":"device/kettle","quantity":"power","from":"\#(iso(base))","to":"\#(iso(base + 2 * hour))","bucket":"1h"}"#
        let refused =
            #"{"query":"history","subject":"device/kettle","quantity":"power","from":"\#(iso(base))","to":"\#(iso(base))","bucket":"1h"}"#
        let exec = try runHub(["exec", "--data-dir", dir, query, refused])
        #expect(exec.status == 1)  // the second is refused
        let lines = exec.stdout.split(separator: "\n").map(String.init)
        // 2000 W for a minute and 1800 W for 54: weighted by time, not (2000 + 1800) / 2.
        #expect(
            lines.first
                == #"{"status":"ok","data":[{"start":"\#(iso(base))","count":2,"min":1800,"max":2000,"mean":\#(99_200.0 / 55),"last":1800},"#
                + #"{"start":"\#(iso(base + hour))","count":1,"min":10,"max":10,"mean":10,"last":10}]}"#)
        #expect(lines.count == 2 && lines[1].hasPrefix(#"{"status":"error","code":"bad_range","error":"#), "\(lines)")

        // As of the second reading's log time: replay folds only what was logged by then (all three here, so bound by sequence).
        let replay = try runHub([
            "replay", "--data-dir", dir, "--until", "2", "--history", "device/kettle:power:1h",
            "--from", iso(base), "--to", iso(base + 2 * hour), "--json"
        ])
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(
            replay.stdout.contains(
                #""data":[{"start":"\#(iso(base))","count":1,"min":2000,"max":2000,"mean":2000,"last":2000},"#
                    + #"{"start":"\#(iso(base + hour))","count":0,"min":2000,"max":2000,"mean":2000,"last":2000}]"#),
            "\(replay.stdout)")
        let table = try runHub([
            "replay", "--data-dir", dir, "--history", "device/kettle:power:1h", "--from", iso(base),
            "--to", iso(base + 2 * hour)
        ])
        #expect(table.stdout.contains("device/kettle power (W) per 1h") && table.stdout.contains("1803.636"), "\(table.stdout)")
        let bad = try runHub(["replay", "--data-dir", dir, "--history", "device/kettle:watts:1h"])
        #expect(bad.status == 1 && bad.stderr.contains("unknown_quantity"), "\(bad.stderr)")
    }
}
