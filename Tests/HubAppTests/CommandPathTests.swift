import BrokerHarness
import Foundation
import HubDomain
import HubLog
import Logging
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// Every entry point runs commands through the one `CommandService`: the same checks, the same
/// fan-out, the same answer.
@Suite(.serialized) struct CommandPathTests {
    /// The events a command caused (its own id and the per-member ids), without time and sequence.
    func commandEvents(_ dataDirectory: String, actor: String, commandId: String) throws -> [String] {
        let store = try SegmentStore(directory: HubPaths(dataDirectory: dataDirectory).log, options: SegmentStoreOptions())
        defer { store.close() }
        var lines: [String] = []
        try store.scanRecords(from: 1, through: store.lastSequence) { record in
            guard record.causation.actor == actor, let id = record.causation.commandId,
                id == commandId || id.hasPrefix(commandId + "/")
            else { return true }
            lines.append("\(record.stream) \(record.type) \(id) " + String(decoding: record.payload, as: UTF8.self))
            return true
        }
        return lines
    }

    static let setUp = [
        #"{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp","command_id":"r-lamp"}"#,
        #"{"command":"register_device","id":"tv","driver":"virtual","name":"TV","command_id":"r-tv"}"#,
        #"{"command":"define_group","id":"living","name":"Living room","members":["lamp","tv"],"command_id":"d-1"}"#
    ]

    @Test func switchGroupThroughExecAndMQTTLogsTheSameEvents() async throws {
        // hub exec: no drivers run, so the members stay pending, but each is sent its switch.
        let viaExec = temporaryDirectory()
        let exec = try runHub(
            ["exec", "--data-dir", viaExec] + Self.setUp
                + [#"{"command":"switch_group","id":"living","state":"ON","command_id":"g-1"}"#])
        #expect(exec.status == 0, "\(exec.stderr)")
        let answer = exec.stdout.split(separator: "\n").last.map(String.init) ?? ""
        #expect(answer.contains(#""status":"ok""#) && answer.contains(#""origin":"group/living""#), "\(answer)")
        #expect(answer.contains(#"{"device":"lamp","state":"ON","outcome":"pending"}"#), "\(answer)")
        let execEvents = try commandEvents(viaExec, actor: "cli", commandId: "g-1")

        // MQTT: the same commands through a real broker and a running hub.
        let f = try await SurfaceFixture.start(devices: [])
        for line in Self.setUp {
            let (command, id) = try CommandJSON.parse(try JSONValue.parse(line), now: currentMicros())
            #expect(await f.service.commands.execute(command, commandId: id, actor: "mqtt").isOK)
        }
        try await f.watcher.waitFor("hub/status") { $0 == "online" }
        try f.watcher.publish("hub/group/living/switch/set", #"{"state":"ON","id":"g-1"}"#)
        let mqttAnswer = try await f.watcher.waitFor("hub/response/group/living/switch/set", timeout: .seconds(10))
        #expect(mqttAnswer.contains(#""confirmed":2,"total":2"#), "\(mqttAnswer)")
        try await f.stop()
        let mqttEvents = try commandEvents(f.dataDirectory, actor: "mqtt", commandId: "g-1")

        #expect(execEvents.count == 3, "\(execEvents)")  // MultiSwitchRequested, then each member's SwitchRequested
        #expect(execEvents.first?.contains("MultiSwitchRequested") == true)
        #expect(execEvents == mqttEvents)
    }

    @Test func checksThatNeedTheDriversHoldForEveryEntryPoint() async throws {
        let dir = temporaryDirectory()
        let exec = try runHub(["exec", "--data-dir", dir, #"{"command":"register_device","id":"x","driver":"zigbee","name":"X"}"#])
        #expect(exec.status == 1)
        #expect(exec.stdout.contains(#""code":"unknown_driver""#), "\(exec.stdout)")

        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        let service = CommandService(hub: hub, catalog: DriverCatalog([VirtualDriverFactory()]), confirmTimeout: .zero, logger: .discarding)
        let refused = await service.execute(
            .registerDevice(id: "x", driver: "zigbee", name: "X", config: "{}", hardwareId: nil), actor: "test")
        #expect(refused.rejection?.code == "unknown_driver")
        #expect(hub.store.lastSequence == 0)  // refused before the log: nothing appended
        try await hub.close()
    }

    @Test func aCommandTheLogCannotTakeIsLoggedAndCounted() async throws {
        let lines = LockedLines()
        let logger = Logger(label: "test") { _ in LineLogHandler(sink: { lines.append($0) }) }
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        let service = CommandService(hub: hub, catalog: DriverCatalog([VirtualDriverFactory()]), confirmTimeout: .zero, logger: logger)
        await hub.store.close()  // the writer is gone: every append fails
        let answer = await service.execute(
            .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil),
            actor: "driver:virtual")
        guard case .failed(let rejection) = answer else { Issue.record("expected a failure, got \(answer)"); return }
        #expect(rejection.code == "internal")
        #expect(service.unrecorded == 1)
        let said = lines.all
        #expect(said.count == 1 && said[0].hasPrefix("error: a command could not be recorded"), "\(said)")
        #expect(said.first?.contains("actor=driver:virtual") == true && said.first?.contains("command=register_device") == true)
    }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
}
