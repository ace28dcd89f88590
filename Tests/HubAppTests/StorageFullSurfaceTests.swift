import BrokerHarness
import DiskHarness
import DriverAPI
import Foundation
import HubDomain
import HubLog
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The hub on a disk that fills up (a small tmpfs taken by ballast), through a real mosquitto: it
/// stays up, answers every command `storage_full` (fan-out, admissions and device adds included),
/// says so on `hub/status/storage`, serves state and queries, and takes commands again by itself
/// once space is freed, with nothing refused in the log and a log that verifies.
@Suite(.serialized, .enabled(if: SmallDisk.available, Comment(rawValue: SmallDisk.unavailableReason)))
struct StorageFullSurfaceTests {
    static let devices = [
        HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp"),
        HubConfig.Device(id: "fan", driver: "virtual", name: "Fan")
    ]

    /// Publishes and waits for the next answer on `answerTopic`.
    func ask(_ w: Watcher, _ topic: String, _ payload: String, answerTopic: String) async throws -> String {
        let before = w.messages(answerTopic).count
        try w.publish(topic, payload)
        return try await w.waitFor(answerTopic, timeout: .seconds(10), skip: before)
    }

    @Test func everyCommandIsAnsweredStorageFullAndTheHubResumesWhenSpaceIsFreed() async throws {
        let disk = try SmallDisk(megabytes: 4)
        let f = try await SurfaceFixture.start(
            dataDirectory: disk.path + "/data", devices: Self.devices,
            logOptions: SegmentStoreOptions(preallocation: 16 * 1024))
        let w = f.watcher
        let hub = f.service.hub
        try await w.waitFor("hub/status") { $0 == "online" }
        try await w.waitFor("hub/status/storage") { $0.contains(#""state":"ok""#) }
        let defined = try await ask(
            w, "hub/request/group/define", #"{"id":"all","name":"All","members":["lamp","fan"]}"#,
            answerTopic: "hub/response/group/define")
        #expect(defined.contains(#""status":"ok""#))

        // The disk fills up. Records still fit in the room the segment has written ahead of them
        // (here up to 16 KiB); commands go on until one finds no space.
        try disk.fill()
        var refusedFirst: String? = nil
        for i in 0..<1000 where refusedFirst == nil {
            let answer = try await ask(
                w, "hub/device/lamp/switch/set", #"{"state":"TOGGLE","id":"fill-\#(i)"}"#,
                answerTopic: "hub/response/device/lamp/switch/set")
            if answer.contains("storage_full") { refusedFirst = answer }
        }
        let refused = try #require(refusedFirst, "no command was refused storage_full on a full disk")
        #expect(refused.contains(#""status":"error""#) && refused.contains("the disk is full") && refused.contains("/data/log/"))
        let status = try await w.waitFor("hub/status/storage") { $0.contains(#""state":"full""#) }
        #expect(status.contains(#""path":""#) && status.contains(".seg") && status.contains(#""since":""#))
        let logged = hub.store.lastSequence

        // Every kind of command, at once: every one is answered storage_full, none is logged.
        let sent: [(topic: String, payload: String, answer: String)] =
            (0..<10).map { i in
                let device = i % 2 == 0 ? "lamp" : "fan"
                return ("hub/device/\(device)/switch/set", #"{"state":"ON","id":"full-\#(i)"}"#, "hub/response/device/\(device)/switch/set")
            } + [
                ("hub/group/all/switch/set", #"{"state":"ON","id":"full-group"}"#, "hub/response/group/all/switch/set"),
                ("hub/request/all-off", #"{"id":"full-all-off"}"#, "hub/response/all-off"),
                (
                    "hub/animal/admit",
                    #"{"id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"beacon":"1de4b189115e45f6b44e509352269977","owner_name":"Ana"}"#,
                    "hub/response/animal/admit"
                ),
                ("hub/request/device/add", #"{"id":"kettle","driver":"virtual","name":"Kettle"}"#, "hub/response/device/add")
            ]
        let answerTopics = Set(sent.map(\.answer))
        let before = Dictionary(uniqueKeysWithValues: answerTopics.map { ($0, w.messages($0).count) })
        for message in sent { try w.publish(message.topic, message.payload) }
        var answers: [String] = []
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            answers = answerTopics.flatMap { topic in w.messages(topic).dropFirst(before[topic]!).map(w.text) }
            if answers.count >= sent.count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(answers.count == sent.count, "\(answers)")
        for answer in answers { #expect(answer.contains(#""code":"storage_full""#), "\(answer)") }
        #expect(hub.store.lastSequence == logged, "nothing refused is in the log")
        for i in 0..<10 { #expect(try await hub.store.commandResult("full-\(i)") == nil) }
        #expect(!FileManager.default.fileExists(atPath: disk.path + "/data/keys/animal-rex.key"), "no empty owner key left behind")

        // State and queries are still served.
        let lamp = try await ask(w, "hub/request/device/get", #"{"id":"lamp"}"#, answerTopic: "hub/response/device/get")
        #expect(lamp.contains(#""status":"ok""#) && lamp.contains(#""id":"lamp""#))
        #expect(hub.isStorageFull)

        // Space is back: the hub says so by itself, and the refused command goes through.
        let storageMessages = w.messages("hub/status/storage").count
        disk.free()
        try await w.waitFor("hub/status/storage", timeout: .seconds(5), skip: storageMessages) { $0.contains(#""state":"ok""#) }
        #expect(!hub.isStorageFull)
        let again = try await ask(
            w, "hub/device/lamp/switch/set", #"{"state":"ON","id":"full-0"}"#,
            answerTopic: "hub/response/device/lamp/switch/set")
        #expect(again.contains(#""status":"ok""#) && again.contains(#""duplicate":false"#), "\(again)")
        let admitted = try await ask(
            w, "hub/animal/admit",
            #"{"id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"beacon":"1de4b189115e45f6b44e509352269977","owner_name":"Ana"}"#,
            answerTopic: "hub/response/animal/admit")
        #expect(admitted.contains(#""status":"ok""#))
        #expect(try await hub.store.verify(progress: nil).records == hub.store.lastSequence)
        try await f.stop()
    }

    /// A snapshot that cannot be written (full disk) leaves no temp file, keeps the previous one in
    /// use, and does not stop the hub: the commands that triggered it are answered and logged.
    @Test func aSnapshotOnAFullDiskLeavesNoTempFileAndTheHubGoesOn() async throws {
        let disk = try SmallDisk(megabytes: 4)
        let paths = HubPaths(dataDirectory: disk.path + "/data")
        let hub = try await Hub(paths: paths, snapshotEvery: 40)
        let t0: Int64 = 1_700_000_000_000_000
        for n in 0..<40 {
            _ = try await hub.execute(
                .registerDevice(id: "d\(n)", driver: "virtual", name: "Device \(n)", config: "{}", hardwareId: nil),
                commandId: "reg-\(n)", actor: "test", now: t0)
        }
        let first = try FileManager.default.contentsOfDirectory(atPath: paths.snapshots).filter { $0.hasSuffix(".snap") }
        #expect(first == ["snapshot-00000000000000000040.snap"])
        // Room for 40 small records in the log (12 KiB), none for a snapshot of 40 devices.
        try disk.fill()
        disk.release(bytes: 12 * 1024)
        var failures: [String] = []
        for i in 0..<40 {
            do {
                _ = try await hub.execute(.switchDevice(id: "d\(i)", target: .on), commandId: "s-\(i)", actor: "test", now: t0)
            } catch {
                failures.append("\(error)")
            }
        }
        #expect(failures.isEmpty, "a failed snapshot must not fail the command that triggered it: \(failures)")
        #expect(hub.store.lastSequence == 80)
        #expect(await hub.snapshotProblem?.contains("the disk is full") == true)
        let names = try FileManager.default.contentsOfDirectory(atPath: paths.snapshots)
        #expect(!names.contains { $0.hasSuffix(".tmp") }, "no empty or partial temp file stays: \(names)")
        #expect(names.filter { $0.hasSuffix(".snap") } == first, "the previous snapshot stays in use")
        disk.free()
        try await hub.close()
        let reopened = try await Hub(paths: paths)
        #expect(await reopened.state.lastSequence == 80)
        try await reopened.close()
    }

    /// `hub exec` on a full disk: every command gets its `storage_full` line, the exit status says
    /// some failed, no temp file stays, and the next `hub exec` after space is freed works.
    @Test func hubExecAnswersStorageFullLineByLine() throws {
        let disk = try SmallDisk(megabytes: 4)
        let dir = disk.path + "/data"
        let registered = try runHub([
            "exec", "--data-dir", dir, #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}"#
        ])
        #expect(registered.status == 0)
        try disk.fill()
        // Small records fit in the last page the segment has: go on until one finds no space.
        let switches = (0..<60).map { #"{"command":"switch","id":"lamp","state":"TOGGLE","command_id":"t-\#($0)"}"# }
        let filling = try runHub(["exec", "--data-dir", dir] + switches)
        #expect(filling.stdout.contains(#""code":"storage_full""#), "\(filling.stdout)")
        let full = try runHub([
            "exec", "--data-dir", dir,
            #"{"command":"switch","id":"lamp","state":"ON","command_id":"x-1"}"#,
            #"{"command":"rename_device","id":"lamp","name":"Desk lamp"}"#,
            #"{"command":"apply_scene","id":"all-off"}"#
        ])
        #expect(full.status == 1)
        let lines = full.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        for line in lines { #expect(line.contains(#""code":"storage_full""#) && line.contains("the disk is full"), "\(line)") }
        let snapshots = try FileManager.default.contentsOfDirectory(atPath: dir + "/snapshots")
        #expect(!snapshots.contains { $0.hasSuffix(".tmp") }, "\(snapshots)")
        disk.free()
        let again = try runHub(["exec", "--data-dir", dir, #"{"command":"switch","id":"lamp","state":"ON","command_id":"x-1"}"#])
        #expect(again.status == 0 && again.stdout.contains(#""duplicate":false"#), "\(again.stdout) \(again.stderr)")
        let verify = try runHub(["verify", "--data-dir", dir])
        #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
    }
}
