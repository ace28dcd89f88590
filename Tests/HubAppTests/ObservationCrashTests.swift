import BrokerHarness
import Foundation
import HubAudit
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// `hub run` (the real process) killed with SIGKILL while readings wait for their sync (a delay of
/// 300 s, so every reading after the last command is pending): nothing it answered is lost, and
/// nothing is logged twice, neither then nor when the same commands are sent again after the restart.
@Suite(.serialized) struct ObservationCrashTests {
    @Test func aKilledHubLosesNoAnsweredCommandAndLogsNothingTwice() async throws {
        let broker = try await TestBroker.startAsync()
        let dir = temporaryDirectory()
        let config = dir + "/hub.json"
        try #"""
        {"devices": [{"id": "lamp", "driver": "virtual", "name": "Lamp"},
                     {"id": "plug9", "driver": "tasmota", "name": "Plug 9", "config": {"topic": "plug9"}}],
         "observation_commit_delay_seconds": 300}
        """#.write(toFile: config, atomically: true, encoding: .utf8)
        let arguments = ["--data-dir", dir + "/data", "--config", config, "--mqtt-port", "\(broker.port)", "--no-http"]
        var hub = try await RunningHub.start(arguments)
        let w = try await Watcher(port: broker.port, filters: ["hub/#"])
        defer { Task { await w.stop() } }
        try w.publish("tele/plug9/LWT", "Online", retain: true)
        try await w.waitFor("hub/device/plug9/availability") { $0 == "online" }

        // Commands and readings interleaved; every command waits for its answer.
        var answered: [String: UInt64] = [:]
        var watts = 100.0
        for n in 0..<20 {
            watts = watts == 100 ? 300 : 100
            try w.publish("tele/plug9/SENSOR", #"{"ENERGY":{"Power":\#(watts)}}"#)
            let id = "c-\(n)"
            try w.publish("hub/device/lamp/switch/set", #"{"state":"\#(n % 2 == 0 ? "ON" : "OFF")","id":"\#(id)"}"#)
            let answer = try await w.waitFor("hub/response/device/lamp/switch/set") { $0.contains(#""id":"\#(id)""#) }
            if answer.contains(#""status":"ok""#), let seq = Self.seq(answer) { answered[id] = seq }
        }
        #expect(answered.count == 20, "every switch command is answered ok")
        // Readings after the last command: logged (on the feed), not yet synced.
        let lastCommand = answered.values.max() ?? 0
        for watts in [500.0, 900.0, 1500.0] { try w.publish("tele/plug9/SENSOR", #"{"ENERGY":{"Power":\#(watts)}}"#) }
        let feed = "hub/events/device/plug9/ReadingRecorded"
        try await w.waitFor(feed, timeout: .seconds(10)) { $0.contains("1500") }
        let pendingReadings = w.messages(feed).compactMap { Self.seq(w.text($0)) }.filter { $0 > lastCommand }
        #expect(pendingReadings.count >= 3, "readings logged after the last command: \(pendingReadings)")

        kill(hub.process.processIdentifier, SIGKILL)
        hub.process.waitUntilExit()
        #expect(hub.process.terminationReason == .uncaughtSignal)

        // What the killed hub left: every answered command once, the readings it had logged too
        // (a killed process keeps the page cache; only a power cut could lose them).
        var byCommand = try Self.commandRanges(dir + "/data/log")
        for (id, seq) in answered {
            #expect(byCommand[id]?.count == 1, "\(id) appended \(byCommand[id]?.count ?? 0) times")
            #expect(byCommand[id]?.first?.contains(seq) == true, "\(id) answered with seq \(seq), logged at \(byCommand[id] ?? [])")
        }
        let store = try SegmentStore(directory: dir + "/data/log")
        #expect(store.lastSequence >= pendingReadings.max() ?? 0)
        store.close()

        // The same commands again after the restart: answered as duplicates, nothing appended.
        hub = try await RunningHub.start(arguments)
        defer { hub.stop() }
        let skip = w.messages("hub/response/device/lamp/switch/set").count
        for n in 0..<20 {
            let id = "c-\(n)"
            try w.publish("hub/device/lamp/switch/set", #"{"state":"\#(n % 2 == 0 ? "ON" : "OFF")","id":"\#(id)"}"#)
            let answer = try await w.waitFor("hub/response/device/lamp/switch/set", skip: skip) { $0.contains(#""id":"\#(id)""#) }
            #expect(answer.contains(#""duplicate":true"#), "\(id) again: \(answer)")
        }
        hub.stop()
        byCommand = try Self.commandRanges(dir + "/data/log")
        for id in answered.keys { #expect(byCommand[id]?.count == 1, "\(id) appended \(byCommand[id]?.count ?? 0) times") }
        #expect(try await SegmentStore(directory: dir + "/data/log", readOnly: true).verify(progress: nil).incompleteTail == nil)
    }

    /// `hub run` stopped (SIGTERM) with readings held for the next write moment (a delay of 300 s):
    /// the head it signs as it stops covers the whole log, readings included, and `hub verify` finds
    /// nothing left out of the tree. Before, the last head stopped at what was synced before the
    /// stop, and `hub verify` said the readings were "not in it yet" of a hub that had stopped.
    @Test func theHeadSignedAtTheStopCoversTheReadingsHeldForTheNextWriteMoment() async throws {
        let broker = try await TestBroker.startAsync()
        let dir = temporaryDirectory()
        let config = dir + "/hub.json"
        try #"""
        {"devices": [{"id": "plug9", "driver": "tasmota", "name": "Plug 9", "config": {"topic": "plug9"}}],
         "observation_commit_delay_seconds": 300}
        """#.write(toFile: config, atomically: true, encoding: .utf8)
        let hub = try await RunningHub.start(["--data-dir", dir + "/data", "--config", config, "--mqtt-port", "\(broker.port)", "--no-http"]
        )
        let w = try await Watcher(port: broker.port, filters: ["hub/#"])
        defer { Task { await w.stop() } }
        try w.publish("tele/plug9/LWT", "Online", retain: true)
        try await w.waitFor("hub/device/plug9/availability") { $0 == "online" }
        try await w.waitFor("hub/audit/head") { !$0.isEmpty }  // the head at start
        for watts in [500.0, 900.0, 1500.0] { try w.publish("tele/plug9/SENSOR", #"{"ENERGY":{"Power":\#(watts)}}"#) }
        let feed = "hub/events/device/plug9/ReadingRecorded"
        try await w.waitFor(feed, timeout: .seconds(10)) { $0.contains("1500") }
        let lastReading = try #require(w.messages(feed).compactMap { Self.seq(w.text($0)) }.max())
        hub.stop()

        let store = try SegmentStore(directory: dir + "/data/log", readOnly: true)
        #expect(store.lastSequence >= lastReading)
        let heads = try String(contentsOfFile: dir + "/data/audit/heads", encoding: .utf8).split(separator: "\n")
        let lastHead = try #require(heads.last.flatMap { try? SignedHead(line: String($0)) })
        #expect(lastHead.size == store.lastSequence, "the last head covers the whole log: \(lastHead.size) of \(store.lastSequence)")
        let verify = try runHub(["verify", "--data-dir", dir + "/data"])
        #expect(verify.status == 0 && !verify.stdout.contains("not in it yet"), "\(verify.stdout)\(verify.stderr)")
        store.close()
    }

    /// The `seq` of an answer or a feed event.
    static func seq(_ json: String) -> UInt64? {
        guard let range = json.range(of: #""seq":"#) else { return nil }
        return UInt64(json[range.upperBound...].prefix { $0.isNumber })
    }

    /// Each command id's appends (runs of consecutive records with that id), read from the log.
    static func commandRanges(_ directory: String) throws -> [String: [ClosedRange<UInt64>]] {
        let store = try SegmentStore(directory: directory, readOnly: true)
        var ranges: [String: [ClosedRange<UInt64>]] = [:]
        var previous: (id: String, sequence: UInt64)?
        try store.scanRecords(from: 1, through: store.lastSequence) { record in
            if let id = record.causation.commandId {
                if let p = previous, p.id == id, p.sequence + 1 == record.sequence, let last = ranges[id]?.popLast() {
                    ranges[id]!.append(last.lowerBound...record.sequence)
                } else {
                    ranges[id, default: []].append(record.sequence...record.sequence)
                }
                previous = (id, record.sequence)
            } else {
                previous = nil
            }
            return true
        }
        return ranges
    }
}
