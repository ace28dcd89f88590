import BrokerHarness
import DiskHarness
import Foundation
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The running hub's history on disk (`HistoryFiles`) answers as the in-memory model does, after a
/// reopen and after a crash, and is rebuilt from the log when it cannot be trusted.
@Suite struct HistoryFilesTests {
    static let minute: Int64 = 60_000_000
    static let start: Int64 = 1_795_000_000_000_000

    /// Readings of three series over 8 days (so the minute rings wrap past their 7 days): a plug
    /// every 45 s with some logged late, and offline now and then for 20 minutes (its held value
    /// ends), an animal every 7 minutes, non-finite values and energy (neither bucketed), as
    /// events with sequences and log times.
    static func events() -> [(HubEvent, EventContext)] {
        var out: [(HubEvent, EventContext)] = []
        func add(_ subject: Subject, _ quantity: Quantity, _ value: Double, measured: Int64, logged: Int64) {
            let event = HubEvent.readingRecorded(ReadingRecorded(subject: subject, quantity: quantity, value: value, measuredAt: measured))
            out.append((event, EventContext(sequence: UInt64(out.count + 1), timestamp: logged, actor: "test")))
        }
        var t = start
        var i = 0
        while t < start + 8 * 1440 * minute {
            let watts = Double((i * 37) % 500) + 0.25
            if i % 97 == 0 {
                add(.device("plug 1/é"), .power, watts, measured: t - 3 * minute, logged: t)  // measured earlier, logged now
            } else {
                add(.device("plug 1/é"), .power, watts, measured: t, logged: t + 200_000)
            }
            if i % 9 == 0 { add(.animal("rex"), .heartRate, Double(60 + i % 40), measured: t, logged: t + 100_000) }
            if i % 500 == 0 { add(.device("plug 1/é"), .power, .nan, measured: t, logged: t) }
            if i % 300 == 0 { add(.device("plug 1/é"), .energy, Double(i), measured: t, logged: t) }
            if i % 1000 == 500 {
                let offline = HubEvent.availabilityChanged(AvailabilityChanged(device: "plug 1/é", available: false, reason: "gone"))
                out.append((offline, EventContext(sequence: UInt64(out.count + 1), timestamp: t + 300_000, actor: "test")))
                t += 20 * minute
            }
            t += 45_000_000
            i += 1
        }
        return out
    }

    /// The queries compared: every resolution over what it keeps, and a few narrower ranges.
    static func compare(_ files: HistoryFiles, _ model: HistoryModel, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(files.now == model.now, sourceLocation: sourceLocation)
        let keys = [
            HistorySeriesKey(subject: .device("plug 1/é"), quantity: .power),
            HistorySeriesKey(subject: .animal("rex"), quantity: .heartRate),
            HistorySeriesKey(subject: .animal("rex"), quantity: .power)
        ]
        for key in keys {
            for resolution in HistoryResolution.allCases {
                let from = resolution.horizon(now: model.now) * resolution.width
                let to = (resolution.bucket(of: model.now) + 1) * resolution.width
                let ranges = [(from, to), (to - 90 * minute, to - 30 * minute), (from, from + resolution.width)]
                for (a, b) in ranges {
                    let expected = model.buckets(key, resolution, from: a, to: b)
                    let got = try files.buckets(key, resolution, from: a, to: b)
                    let same = got == expected
                    let firstDifference = zip(got, expected).first { $0 != $1 }.map { "\($0.0) against \($0.1)" } ?? "none"
                    #expect(
                        same,
                        "\(key) \(resolution.rawValue) \(a)..<\(b): \(got.count) buckets, \(expected.count) expected; first difference: \(firstDifference)",
                        sourceLocation: sourceLocation)
                }
            }
            #expect(files.knows(key.subject) == model.knows(key.subject), sourceLocation: sourceLocation)
        }
    }

    static let hash = [UInt8](repeating: 7, count: 32)

    @Test func theFilesAnswerAsTheModelDoesAndAfterAReopen() async throws {
        let dir = temporaryDirectory() + "/history"
        var model = HistoryModel()
        let files = try HistoryFiles(directory: dir)
        let events = Self.events()
        // The first half as a start-up folds a stretch of log (finished buckets written in batches), the rest one by one.
        let half = events.count / 2
        await files.foldingInBulk {
            for (event, context) in events[..<half] { files.apply(event, context: context) }
        }
        for (event, context) in events[half...] { files.apply(event, context: context) }
        for (event, context) in events { model.apply(event, context: context) }
        #expect(model.seriesCount == 2)
        try Self.compare(files, model)
        // Memory holds what each series is filling, not the 8 days behind it (the model holds them all).
        #expect(files.bucketsInMemory <= 2 * 3)
        #expect(model.storageBytes > 10_000 * HistoryModel.bytesPerBucket)
        try files.sync(sequence: UInt64(events.count), chainHash: Self.hash)
        let reopened = try HistoryFiles(directory: dir)
        #expect(reopened.synced?.sequence == UInt64(events.count))
        #expect(reopened.foldedThrough == UInt64(events.count))
        try Self.compare(reopened, model)
        // One file per series, named so a person can tell which (the id percent-encoded).
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
                == ["animal.rex.heart_rate.hist", "device.plug%201%2F%C3%A9.power.hist", "synced"])
    }

    /// Finished buckets are held in memory (a household's series would otherwise write a page each
    /// a minute) until the sync, and queries answer from them meanwhile.
    @Test func finishedBucketsAreWrittenAtTheSyncAndAnsweredBefore() throws {
        let dir = temporaryDirectory() + "/history"
        let files = try HistoryFiles(directory: dir)
        var model = HistoryModel()
        // About four hours: some 300 finished minute buckets and a few hours, below what is held.
        for (event, context) in Self.events().prefix(360) {
            files.apply(event, context: context)
            model.apply(event, context: context)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".hist") }.isEmpty, "nothing written yet")
        try Self.compare(files, model)
        try files.sync(sequence: 360, chainHash: Self.hash)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".hist") }.count == 2)
        try Self.compare(files, model)
        try Self.compare(try HistoryFiles(directory: dir), model)
    }

    /// A crash after a sync: buckets written since then already hold some of the events the
    /// reopened files fold again. Each slot's newest sequence keeps them from counting twice.
    @Test func aReplayAfterACrashCountsNoReadingTwice() throws {
        let dir = temporaryDirectory() + "/history"
        let events = Self.events()
        let synced = events.count / 2
        do {
            let files = try HistoryFiles(directory: dir)
            for (event, context) in events {
                files.apply(event, context: context)
                if context.sequence == UInt64(synced) { try files.sync(sequence: context.sequence, chainHash: Self.hash) }
            }
            // Dropped without a sync: what was written after it stays in the files, the rest is lost.
        }
        let reopened = try HistoryFiles(directory: dir)
        #expect(reopened.foldedThrough == UInt64(synced))
        var model = HistoryModel()
        for (event, context) in events {
            model.apply(event, context: context)
            if context.sequence > reopened.foldedThrough { reopened.apply(event, context: context) }
        }
        try Self.compare(reopened, model)
    }

    /// Through the hub: the files survive a restart; files synced with another log, or not synced
    /// since they were written, are removed and folded again from the whole log.
    @Test func theHubRebuildsFilesItCannotTrust() async throws {
        let paths = HubPaths(dataDirectory: temporaryDirectory())
        let other = HubPaths(dataDirectory: temporaryDirectory())
        let query = HistoryQuery(
            subject: .device("p"), quantity: .power, from: t0 - 3_600_000_000, to: t0 + 3 * 3_600_000_000, resolution: .minute)
        func record(_ paths: HubPaths, _ values: [Double]) async throws -> HistoryAnswer {
            let hub = try await Hub(paths: paths, snapshotEvery: 4)
            _ = try await hub.execute(
                .registerDevice(id: "p", driver: "virtual", name: "P", config: "{}", hardwareId: nil), actor: "t", now: t0)
            for (i, value) in values.enumerated() {
                _ = try await hub.execute(
                    .recordReading(
                        subject: .device("p"), quantity: .power, value: value,
                        measuredAt: t0 + Int64(i) * 40_000_000), actor: "t", now: t0 + Int64(i) * 40_000_000)
            }
            let answer = try await hub.history(query)
            try await hub.close()
            return answer
        }
        let mine = try await record(paths, [1, 2, 3, 4, 5, 6, 7])
        _ = try await record(other, [100, 200])
        guard case .buckets(let buckets) = mine else { Issue.record("\(mine)"); return }
        #expect(buckets.map(\.count) == [1, 1, 2, 1, 2])  // 40 s apart from t0, 20 s into its minute
        #expect(buckets.map(\.sum) == [1, 2, 7, 5, 13])

        func reopen(_ expectedNote: String?) async throws {
            let hub = try await Hub(paths: paths)
            let notes = hub.openingNotes.filter { $0.hasPrefix("history files rebuilt") }
            if let expectedNote {
                #expect(notes.count == 1 && notes[0].contains(expectedNote), "\(notes)")
            } else {
                #expect(notes.isEmpty, "\(notes)")
            }
            #expect(try await hub.history(query) == mine)
            try await hub.close()
        }
        try await reopen(nil)
        // Another log's files in their place.
        try FileManager.default.removeItem(atPath: paths.history)
        try FileManager.default.copyItem(atPath: other.history, toPath: paths.history)
        try await reopen("another log")
        // Files written after their last sync (a hub killed before it closed).
        try FileManager.default.removeItem(atPath: paths.history + "/synced")
        try await reopen("not synced")
        // Files of the format before the time weighting (64-byte slots, a record with no version):
        // rebuilt, not misread.
        let hub = try await Hub(paths: paths)
        try await hub.close()
        var mark = try #require(HistoryFiles.mark(in: paths.history))
        mark.version = nil
        mark.holds = nil
        try JSONEncoder().encode(mark).write(to: URL(fileURLWithPath: paths.history + "/synced"))
        try await reopen("older format")
    }

    /// The held value (the time weighting's state) is kept with the sync record: files reopened
    /// after a sync weigh the open tail and the next reading as the model does.
    @Test func theHeldValueSurvivesAReopen() throws {
        let dir = temporaryDirectory() + "/history"
        let h0 = HistoryResolution.hour.bucket(of: t0) * HistoryResolution.hour.width
        let key = HistorySeriesKey(subject: .device("p"), quantity: .power)
        var model = HistoryModel()
        var files = try HistoryFiles(directory: dir)
        let reading = { (value: Double, at: Int64, sequence: UInt64) -> (HubEvent, EventContext) in
            (
                .readingRecorded(ReadingRecorded(subject: .device("p"), quantity: .power, value: value, measuredAt: at)),
                EventContext(sequence: sequence, timestamp: at, actor: "test")
            )
        }
        for (event, context) in [reading(1800, h0, 1)] { files.apply(event, context: context); model.apply(event, context: context) }
        try files.sync(sequence: 1, chainHash: Self.hash)
        files = try HistoryFiles(directory: dir)
        #expect(files.series(key)?.hold == HistoryHold(value: 1800, since: h0, newest: h0))
        let (event, context) = reading(0, h0 + 90 * Self.minute, 2)
        files.apply(event, context: context); model.apply(event, context: context)
        let hour = try files.buckets(key, .hour, from: h0, to: h0 + 2 * 60 * Self.minute)
        #expect(hour == model.buckets(key, .hour, from: h0, to: h0 + 2 * 60 * Self.minute))
        #expect(hour.first?.mean == 1800 && hour.first?.covered == 60 * Self.minute)
    }

    /// A damaged slot is refused by name, never answered; the next start folds the files again.
    @Test func aDamagedSlotIsRefusedAndTheNextStartRebuilds() async throws {
        let paths = HubPaths(dataDirectory: temporaryDirectory())
        let query = HistoryQuery(subject: .device("p"), quantity: .power, from: t0, to: t0 + 3_600_000_000, resolution: .hour)
        var hub = try await Hub(paths: paths)
        _ = try await hub.execute(
            .registerDevice(id: "p", driver: "virtual", name: "P", config: "{}", hardwareId: nil), actor: "t", now: t0)
        _ = try await hub.execute(.recordReading(subject: .device("p"), quantity: .power, value: 42, measuredAt: t0), actor: "t", now: t0)
        let answer = try await hub.history(query)
        try await hub.close()

        let file = paths.history + "/device.p.power.hist"
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        let slot = HistoryFiles.regionOffset(.hour) + Int(HistoryResolution.hour.bucket(of: t0) % 8760) * HistorySlot.size
        try handle.seek(toOffset: UInt64(slot + 20))
        try handle.write(contentsOf: Data([0xFF]))
        try handle.close()

        hub = try await Hub(paths: paths)
        do {
            _ = try await hub.history(query)
            Issue.record("a damaged slot was answered")
        } catch {
            #expect(error.code == "history_unavailable")
            #expect(error.message.contains("device.p.power.hist") && error.message.contains("damaged"), "\(error.message)")
        }
        try await hub.close()
        hub = try await Hub(paths: paths)
        #expect(hub.openingNotes.contains { $0.hasPrefix("history files rebuilt") })
        #expect(try await hub.history(query) == answer)
        try await hub.close()
    }

    /// A full disk: the write of the finished buckets (held until the snapshot's sync) fails.
    /// History queries are refused with why; commands go on (into the log's written-ahead room);
    /// the next start rebuilds the files.
    @Test(.enabled(if: SmallDisk.available, Comment(rawValue: SmallDisk.unavailableReason)))
    func aFailedWriteStopsTheHistoryNotTheHub() async throws {
        let disk = try SmallDisk(megabytes: 4)
        defer { disk.unmount() }
        let paths = HubPaths(dataDirectory: disk.path + "/data")
        let query = HistoryQuery(
            subject: .device("p"), quantity: .power, from: t0 - 60_000_000, to: t0 + 3_600_000_000, resolution: .minute)
        var hub = try await Hub(paths: paths)
        _ = try await hub.execute(
            .registerDevice(id: "p", driver: "virtual", name: "P", config: "{}", hardwareId: nil), actor: "t", now: t0)
        _ = try await hub.execute(.recordReading(subject: .device("p"), quantity: .power, value: 1, measuredAt: t0), actor: "t", now: t0)
        try disk.fill()
        // The next minute's reading finishes the first minute's bucket; the snapshot's sync writes
        // it: no space for it.
        let second = try await hub.execute(
            .recordReading(subject: .device("p"), quantity: .power, value: 2, measuredAt: t0 + 60_000_000),
            actor: "t", now: t0 + 60_000_000)
        guard case .accepted = second else { Issue.record("\(second)"); return }
        await #expect(throws: (any Error).self) { try await hub.snapshot() }
        do {
            _ = try await hub.history(query)
            Issue.record("the history answered after a failed write")
        } catch {
            #expect(error.code == "history_unavailable")
            #expect(error.message.contains("rebuilt from the log at the next start"), "\(error.message)")
        }
        // Said where the disk's condition is said (hub/status/storage, and a warning line).
        let report = await StorageReport.current(hub)
        #expect(report.historyProblem?.contains("the history could not be synced") == true, "\(report)")
        #expect(report.json.serialized().contains(#""history_error":"the history could not be synced"#), "\(report.json.serialized())")
        let third = try await hub.execute(.switchDevice(id: "p", target: .on), actor: "t", now: t0 + 61_000_000)
        guard case .accepted = third else { Issue.record("\(third)"); return }
        disk.free()
        try await hub.close()

        hub = try await Hub(paths: paths)
        #expect(hub.openingNotes.contains { $0.hasPrefix("history files rebuilt") }, "\(hub.openingNotes)")
        guard case .buckets(let buckets) = try await hub.history(query) else { Issue.record("no buckets"); return }
        #expect(buckets.map(\.sum) == [1, 2])
        try await hub.close()
    }

    /// A real `hub run` killed with SIGKILL after its files were synced and written past the sync:
    /// the next start folds the log from the sync, and answers as the log folded in memory does.
    @Test func aKilledHubAnswersAsTheLogAfterItsRestart() async throws {
        let dir = temporaryDirectory() + "/data"
        let hub = try HTTPProcessTests.RunningHub(["run", "--data-dir", dir, "--no-mqtt", "--http", "127.0.0.1:0", "--snapshot-every", "25"]
        )
        let port = try await hub.port()
        let added = try await HTTPProbe.request(
            port: port, method: "POST", path: "/api/request/device/add",
            body: #"{"id":"p","driver":"virtual","name":"P"}"#)
        #expect(added.status == 200, "\(added)")
        let base = (Int64(Date().timeIntervalSince1970) / 60 - 120) * 60_000_000  // two hours ago, on a minute
        for i in 0..<110 {
            let at = ISO8601.format(micros: base + Int64(i) * 20_000_000)
            let reply = try await HTTPProbe.request(
                port: port, method: "POST", path: "/api/command",
                body: #"{"command":"record_reading","device":"p","quantity":"power","value":"\#(i)","measured_at":"\#(at)"}"#)
            #expect(reply.status == 200 && reply.body.contains(#""status":"ok""#), "\(reply)")
        }
        kill(hub.process.processIdentifier, SIGKILL)
        hub.process.waitUntilExit()
        // Synced at a snapshot (sequence 100), and buckets written after it by the readings that followed.
        let mark = try #require(HistoryFiles.mark(in: dir + "/history"))
        #expect(mark.sequence == 100)

        let (from, to) = (ISO8601.format(micros: base), ISO8601.format(micros: base + 3_600_000_000))
        let exec = try runHub([
            "exec", "--data-dir", dir,
            #"{"query":"history","subject":"device/p","quantity":"power","from":"\#(from)","to":"\#(to)","bucket":"1m"}"#
        ])
        let replay = try runHub(["replay", "--data-dir", dir, "--history", "device/p:power:1m", "--from", from, "--to", to, "--json"])
        #expect(exec.status == 0 && replay.status == 0, "\(exec) \(replay)")
        func data(_ text: String) throws -> NSArray {
            let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            return try #require(object?["data"] as? NSArray, "no data in \(text)")
        }
        let fromFiles = try data(exec.stdout), fromLog = try data(replay.stdout)
        // 110 readings 20 s apart fill 37 minutes; the last value holds on (the clock is now) to the hour's end.
        #expect(fromFiles.count == 60)
        #expect(fromFiles.isEqual(fromLog), "files: \(exec.stdout)\nlog: \(replay.stdout)")
    }
}
