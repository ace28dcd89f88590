import BrokerHarness
import Foundation
import HubLog
import MQTT
import Testing

@testable import HubApp
@testable import HubDomain
@testable import HubEngine
@testable import HubMQTT

/// Who and why: commands under `<base>/from/<client>/` are logged as `mqtt:<client>`, a declared
/// cause rides with them, and old records read as they always did.
@Suite struct AttributionTopicsTests {
    let t = MQTTTopics()

    @Test func theAttributedTopicsMirrorTheCommandTopics() {
        #expect(t.route(topic: "hub/from/alice/device/lamp/switch/set") == .attributed(client: "alice", .switchSet("lamp")))
        #expect(t.route(topic: "hub/from/alice/group/up/switch/set") == .attributed(client: "alice", .groupSwitchSet("up")))
        #expect(t.route(topic: "hub/from/alice/request/scene/apply") == .attributed(client: "alice", .request("scene/apply")))
        #expect(t.route(topic: "hub/from/alice/animal/rex/vitals") == .attributed(client: "alice", .animalVitals("rex")))
        #expect(t.route(topic: "hub/from/bob smith/device/lamp/switch/set") == .attributed(client: "bob smith", .switchSet("lamp")))
        #expect(t.route(topic: "hub/from/alice/device/lamp/switch") == .ignored)
        #expect(t.route(topic: "hub/from/alice") == .ignored)
        #expect(t.route(topic: "hub/from") == .ignored)
        // The plain topics are routed as before.
        #expect(t.route(topic: "hub/device/lamp/switch/set") == .command(.switchSet("lamp")))
        #expect(MQTTRoute.attributed(client: "alice", .switchSet("lamp")).client == "alice")
        #expect(MQTTRoute.command(.switchSet("lamp")).client == nil)
    }

    @Test func theyAreAnsweredUnderTheClientsResponseLevel() {
        #expect(t.response(for: .attributed(client: "alice", .switchSet("lamp"))) == "hub/response/from/alice/device/lamp/switch/set")
        #expect(t.response(for: .attributed(client: "alice", .request("devices"))) == "hub/response/from/alice/devices")
        #expect(t.response(forTopic: "hub/from/alice/request/devices") == "hub/response/from/alice/devices")
        #expect(t.response(forTopic: "hub/from/alice/device/lamp/switch/set") == "hub/response/from/alice/device/lamp/switch/set")
        // Unchanged for the plain topics.
        #expect(t.response(for: .command(.switchSet("lamp"))) == "hub/response/device/lamp/switch/set")
        #expect(t.response(forTopic: "hub/request/devices") == "hub/response/devices")
    }

    @Test func theHubSubscribesToBothAndRefusesToAnswerOnEither() {
        let subscriptions = t.subscriptions
        #expect(
            Array(subscriptions.prefix(8)) == [
                "hub/device/+/switch/set", "hub/device/+/activations/set", "hub/group/+/switch/set", "hub/animal/admit",
                "hub/animal/+/discharge", "hub/animal/+/vitals", "hub/request/#", "homeassistant/status"
            ])
        #expect(subscriptions.contains("hub/from/+/device/+/switch/set") && subscriptions.contains("hub/from/+/request/#"))
        #expect(t.responseTopicProblem("hub/from/alice/device/lamp/switch/set") != nil)
    }

    @Test func discoveryCanNameTheAttributedCommandTopics() {
        let lamp = DeviceRecord(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil, registeredAt: 0)
        let plain = HomeAssistantDiscovery().deviceConfigs(lamp, readings: [])[0].payload
        #expect(plain["command_topic"] == "hub/device/lamp/switch/set")
        let ha = HomeAssistantDiscovery(attributionClient: "homeassistant")
        let sw = ha.deviceConfigs(lamp, readings: [])[0].payload
        #expect(sw["command_topic"] == "hub/from/homeassistant/device/lamp/switch/set")
        #expect(sw["state_topic"] == plain["state_topic"])
        #expect(t.route(topic: sw["command_topic"]!.stringValue!) == .attributed(client: "homeassistant", .switchSet("lamp")))
        let group = ha.groupConfig(GroupRecord(id: "up", name: "Upstairs", members: ["lamp"])).payload
        #expect(group["command_topic"] == "hub/from/homeassistant/group/up/switch/set")
        let scene = ha.sceneConfig(SceneRecord(id: "evening", name: "Evening", targets: [])).payload
        #expect(scene["command_topic"] == "hub/from/homeassistant/request/scene/apply")
    }

    @Test func theConfigurationNamesTheAttributionClient() throws {
        let config = try HubConfig.parse(JSONValue.parse(#"{"mqtt":{"attribution_client":"homeassistant"}}"#))
        #expect(config.mqtt.attributionClient == "homeassistant")
        #expect(throws: (any Error).self) { try HubConfig.parse(JSONValue.parse(#"{"mqtt":{"attribution_client":"home assistant"}}"#)) }
    }
}

@Suite struct DeclaredCauseParsingTests {
    func parse(_ route: RequestRoute, _ payload: String) throws(RequestError) -> RequestParser.ParsedCommand {
        try RequestParser.parse(route: route, message: Array(payload.utf8), now: 0)
    }

    @Test func everyCommandFormTakesACause() throws {
        let c = "automation.porch_lights"
        #expect(try parse(.switchSet("lamp"), #"{"state":"ON","cause":"\#(c)"}"#).cause == c)
        #expect(try parse(.groupSwitchSet("up"), #"{"state":"ON","cause":"\#(c)"}"#).cause == c)
        #expect(
            try parse(.activationsSet("lamp"), #"{"op":"add","name":"a","start":100,"length":5,"cause":"\#(c)"}"#).cause == c)
        #expect(try parse(.animalVitals("rex"), #"{"heart_rate":80,"cause":"\#(c)"}"#).cause == c)
        #expect(try parse(.request("switch"), #"{"device":"lamp","state":"ON","cause":"\#(c)"}"#).cause == c)
        #expect(try parse(.request("scene/apply"), #"{"id":"evening","cause":"\#(c)"}"#).cause == c)
        #expect(try parse(.request("all-off"), #"{"cause":"\#(c)"}"#).cause == c)
        #expect(try parse(.request("command"), #"{"command":"switch","id":"lamp","state":"ON","cause":"\#(c)"}"#).cause == c)
        #expect(try parse(.switchSet("lamp"), "ON").cause == nil)
        #expect(try parse(.switchSet("lamp"), #"{"state":"ON","cause":null}"#).cause == nil)
    }

    @Test func aBadCauseIsRefusedWithItsCode() {
        for payload in [#"{"state":"ON","cause":"porch lights"}"#, #"{"state":"ON","cause":42}"#, #"{"state":"ON","cause":""}"#] {
            do {
                _ = try parse(.switchSet("lamp"), payload)
                Issue.record("\(payload) was taken")
            } catch {
                #expect(error.code == "invalid_cause" && error.message.contains("\"cause\""), "\(error.message)")
            }
        }
        // A query declares no cause: the key is unknown there.
        #expect(throws: RequestError.self) { try parse(.request("devices"), #"{"cause":"x"}"#) }
    }

    @Test func theUserPropertyDeclaresItTooAndMustAgree() throws {
        func message(_ payload: String, cause: String?) -> MQTTMessage {
            MQTTMessage(
                topic: "hub/device/lamp/switch/set", payload: Array(payload.utf8),
                userProperties: cause.map { [MQTTUserProperty("cause", $0)] } ?? [])
        }
        let plain = try parse(.switchSet("lamp"), "ON")
        #expect(try MQTTSurface.declaringCause(plain, of: message("ON", cause: "script.night")).cause == "script.night")
        let json = try parse(.switchSet("lamp"), #"{"state":"ON","cause":"a.b"}"#)
        #expect(try MQTTSurface.declaringCause(json, of: message("", cause: "a.b")).cause == "a.b")
        #expect(try MQTTSurface.declaringCause(json, of: message("", cause: nil)).cause == "a.b")
        for (parsed, cause) in [(json, "c.d"), (plain, "bad cause")] {
            do {
                _ = try MQTTSurface.declaringCause(parsed, of: message("", cause: cause))
                Issue.record("\(cause) was taken")
            } catch {
                #expect(error.code == "invalid_cause", "\(error.message)")
            }
        }
    }
}

@Suite struct CauseInEventLinesTests {
    func record(actor: String) -> EventRecord {
        let event = HubEvent.switchRequested(SwitchRequested(device: "lamp", state: .on))
        return EventRecord(
            sequence: 7, stream: "device/lamp", streamVersion: 2, type: event.typeName, schemaVersion: 1, timestamp: 1_700_000_000_000_000,
            causation: Causation(commandId: "c-1", actor: actor), payload: event.encodePayload(schemaVersion: 1))
    }

    @Test func aLineWithoutACauseIsTheLineItAlwaysWas() {
        #expect(
            EventLines.render(record(actor: "mqtt")) == """
                {"seq":7,"stream":"device/lamp","version":2,"type":"SwitchRequested","schema":1,"time":"2023-11-14T22:13:20.000000Z",\
                "actor":"mqtt","command_id":"c-1","data":{"device":"lamp","state":"on"}}
                """)
    }

    @Test func aDeclaredCauseIsItsOwnKeyAndReadsBack() throws {
        let line = EventLines.render(record(actor: "mqtt:alice#automation.porch_lights"))
        #expect(line.contains(#""actor":"mqtt:alice","cause":"automation.porch_lights","command_id":"c-1""#), "\(line)")
        let parsed = try EventLines.parse(line, line: 1)
        #expect(parsed.record.causation.actor == "mqtt:alice#automation.porch_lights")
        #expect(EventLines.render(parsed.record) == line)
        // An imported line cannot smuggle a cause into its actor.
        let smuggled = line.replacingOccurrences(of: #""actor":"mqtt:alice","cause":"automation.porch_lights""#, with: #""actor":"a#b""#)
        #expect(throws: EventLines.LineError.self) { try EventLines.parse(smuggled, line: 1) }
    }
}

/// `hub export`'s lines byte for byte (each is a record's leaf in the audit tree): the text written
/// straight into bytes and the value serialised are the same line.
@Suite struct ExportLineGoldenTests {
    static let golden = #"""
        {"seq":7,"stream":"device/lamp","version":2,"type":"SwitchRequested","schema":1,"time":"2023-11-14T22:13:20.000000Z","actor":"mqtt","command_id":null,"data":{"device":"lamp","state":"on"},"hash":"00254a6f94b9de03284d7297bce1062b50759abfe4092e53789dc2e70c31567b"}
        {"seq":1007,"stream":"animal/rex","version":2,"type":"Nope","schema":1,"time":"2023-11-14T22:13:20.000001Z","actor":"mqtt:alice","cause":"automation.porch","command_id":null,"data":null,"error":"payload not readable by this hub version","hash":"01264b7095badf04294e7398bde2072c51769bc0e50a2f54799ec3e80d32577c"}
        {"seq":1007,"stream":"animal/rex","version":2,"type":"ReadingRecorded","schema":1,"time":"2023-11-14T22:13:20.000001Z","actor":"mqtt:alice","cause":"automation.porch","command_id":null,"data":{"subject":{"kind":"animal","id":"rex"},"quantity":"temperature","value":38.25,"unit":"°C","measured_at":"1969-12-31T23:59:58.765433Z"},"hash":"01264b7095badf04294e7398bde2072c51769bc0e50a2f54799ec3e80d32577c"}
        {"seq":2007,"stream":"device/p\"1\n","version":2,"type":"ReadingRecorded","schema":1,"time":"2023-11-14T22:13:20.000002Z","actor":"mqtt","command_id":"c-2","data":{"subject":{"kind":"device","id":"p\"1\n"},"quantity":"power","value":1800,"unit":"W","measured_at":"2023-11-14T22:13:20.123456Z"},"hash":"02274c7196bbe0052a4f7499bee3082d52779cc1e60b30557a9fc4e90e33587d"}
        {"seq":3007,"stream":"animal/a1","version":2,"type":"AnimalAdmitted","schema":1,"time":"2023-11-14T22:13:20.000003Z","actor":"http:x","command_id":"c-3","data":{"animal":"a1","name":"Rex \\ é","gender":null,"birth_date":"2020-01-01","weight_kg":12.5,"species":"dog","breed":null,"coat":null,"owner_name":null,"owner_address":null,"owner_phone":null,"motive":null,"veterinarian":null,"observations":"\u0001","photo":null,"beacon":"b1"},"hash":"03284d7297bce1062b50759abfe4092e53789dc2e70c31567ba0c5ea0f34597e"}
        """#

    @Test func exportLinesAreTheSameAsTextAndAsValue() {
        let events: [HubEvent] = [
            .switchRequested(SwitchRequested(device: "lamp", state: .on)),
            .readingRecorded(ReadingRecorded(subject: .animal("rex"), quantity: .temperature, value: 38.25, measuredAt: -1_234_567)),
            .readingRecorded(ReadingRecorded(subject: .device("p\"1\n"), quantity: .power, value: 1800, measuredAt: 1_700_000_000_123_456)),
            .animalAdmitted(
                AnimalAdmitted(
                    animal: "a1", name: "Rex \\ é", gender: nil, birthDate: "2020-01-01", weightKg: 12.5, species: "dog", breed: nil,
                    coat: nil, ownerName: nil, ownerAddress: nil, ownerPhone: nil, motive: nil, veterinarian: nil, observations: "\u{1}",
                    photo: nil, beacon: "b1"))
        ]
        // (event, actor, command id, a type this build cannot read)
        let cases: [(Int, String, String?, Bool)] = [
            (0, "mqtt", nil, false), (1, "mqtt:alice#automation.porch", nil, true), (1, "mqtt:alice#automation.porch", nil, false),
            (2, "mqtt", "c-2", false), (3, "http:x", "c-3", false)
        ]
        let lines = Self.golden.split(separator: "\n").map(String.init)
        #expect(lines.count == cases.count)
        for ((i, actor, commandId, unreadable), line) in zip(cases, lines) {
            let e = events[i]
            let record = EventRecord(
                sequence: UInt64(i * 1000 + 7), stream: e.stream, streamVersion: 2, type: unreadable ? "Nope" : e.typeName,
                schemaVersion: 1,
                timestamp: 1_700_000_000_000_000 + Int64(i), causation: Causation(commandId: commandId, actor: actor),
                payload: e.encodePayload(schemaVersion: 1))
            let event = try? HubEvent.decode(type: record.type, schemaVersion: 1, payload: record.payload)
            let digest = (0..<32).map { UInt8(($0 * 37 + i) & 0xFF) }
            var text = JSONText()
            EventLines.write(record, event: event, hash: .bytes(digest), to: &text)
            #expect(String(decoding: text.bytes, as: UTF8.self) == line)
            #expect(EventLines.json(record, event: event, hash: LogVerifier.hex(digest)).serialized() == line)
            #expect(EventLines.render(record, hash: LogVerifier.hex(digest)) == line)
            // Without the hash: the payload the MQTT surface publishes.
            let published = String(decoding: EventLines.bytes(record, event: event), as: UTF8.self)
            #expect(published == EventLines.json(record, event: event).serialized())
            #expect(line == published.dropLast() + ",\"hash\":\"\(LogVerifier.hex(digest))\"}")
        }
    }
}

/// With a broker that pins `hub/from/<user>/` to the connecting user (`pattern write hub/from/%u/#`),
/// a command is logged with the user who sent it, and another user's name under the prefix is
/// refused by the broker.
@Suite(.serialized) struct BrokerVouchedAttributionTests {
    /// The hub and a watcher that may do anything, and the attribution lines of deploy/mosquitto.acl
    /// as they are shipped.
    static func acl() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shipped = try String(contentsOf: root.appendingPathComponent("deploy/mosquitto.acl"), encoding: .utf8)
        let attribution = shipped.split(separator: "\n").filter { $0.hasPrefix("pattern") && $0.contains("hub/") && $0.contains("/from/") }
        #expect(attribution == ["pattern write hub/from/%u/#", "pattern read hub/response/from/%u/#"])
        return "user hub\ntopic readwrite hub/#\ntopic readwrite homeassistant/#\nuser watcher\ntopic readwrite #\n"
            + attribution.joined(separator: "\n") + "\n"
    }

    func actorsLogged(_ service: HubService) async throws -> [String] {
        let store = service.hub.store
        return try await store.records(from: 1, through: store.lastSequence).filter { $0.type == "SwitchRequested" }
            .map(\.causation.actor)
    }

    @Test func aCommandUnderAUsersPrefixIsLoggedWithThatUserAndAnotherUsersIsRefused() async throws {
        let broker = try await TestBroker.startAsync(
            secured: true, users: [("hub", "hub-pw"), ("alice", "alice-pw"), ("watcher", "watcher-pw")], acl: try Self.acl())
        let service = try await SurfaceFixture.startService(
            port: broker.port, dataDirectory: temporaryDirectory(),
            devices: [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp", config: "{}")], username: "hub", password: "hub-pw")
        let watcher = try await Watcher(port: broker.port, username: "watcher", password: "watcher-pw")
        let alice = try await Watcher(
            port: broker.port, id: "alice-ha", filters: ["hub/response/from/alice/#"], username: "alice", password: "alice-pw")
        try await watcher.waitFor("hub/status") { $0 == "online" }

        // As alice, under hub/from/alice/, with a cause in the payload.
        try await alice.client.publishAndWait(
            "hub/from/alice/device/lamp/switch/set", Array(#"{"state":"ON","cause":"automation.porch_lights"}"#.utf8), qos: 1)
        let answer = try await alice.waitFor("hub/response/from/alice/device/lamp/switch/set")
        #expect(answer.contains(#""status":"ok""#), "\(answer)")
        #expect(try await actorsLogged(service) == ["mqtt:alice#automation.porch_lights"])
        // The event feed says who and why.
        let event = try await watcher.waitFor("hub/events/device/lamp/SwitchRequested")
        #expect(event.contains(#""actor":"mqtt:alice","cause":"automation.porch_lights""#), "\(event)")

        // The same with the cause as an MQTT 5 user property.
        try await alice.client.publishAndWait(
            "hub/from/alice/device/lamp/switch/set", Array("OFF".utf8), qos: 1, userProperties: [MQTTUserProperty("cause", "script.night")])
        try await alice.waitFor("hub/response/from/alice/device/lamp/switch/set", skip: 1)
        #expect(try await actorsLogged(service).last == "mqtt:alice#script.night")

        // As alice under bob's prefix: the broker refuses the publish (MQTT 5 PUBACK "not authorized").
        let before = service.hub.store.lastSequence
        do {
            try await alice.client.publishAndWait("hub/from/bob/device/lamp/switch/set", Array("ON".utf8), qos: 1, timeout: .seconds(5))
            Issue.record("the broker let alice publish under hub/from/bob/")
        } catch let error as MQTTError {
            #expect(error.kind == .publishRejected, "\(error)")
        }
        // The plain topic still works, logged as `mqtt` (its answer also shows the hub has read
        // everything sent before it).
        try watcher.publish("hub/device/lamp/switch/set", "ON")
        try await watcher.waitFor("hub/response/device/lamp/switch/set")
        #expect(try await actorsLogged(service).last == "mqtt")
        #expect(service.hub.store.lastSequence > before)
        #expect(try await !actorsLogged(service).contains { $0.hasPrefix("mqtt:bob") })
        #expect(watcher.received.withLock { $0.filter { $0.topic.hasPrefix("hub/response/from/bob") } }.isEmpty)

        // A client name that is not a valid name is refused with its code (a user the ACL lets write anywhere).
        try watcher.publish("hub/from/bob smith/device/lamp/switch/set", "ON")
        let refused = try await watcher.waitFor("hub/response/from/bob smith/device/lamp/switch/set")
        #expect(refused.contains(#""code":"invalid_client""#), "\(refused)")
        // And a bad cause too.
        try await alice.client.publishAndWait(
            "hub/from/alice/device/lamp/switch/set", Array(#"{"state":"ON","cause":"porch lights"}"#.utf8), qos: 1)
        let badCause = try await alice.waitFor("hub/response/from/alice/device/lamp/switch/set", skip: 2)
        #expect(badCause.contains(#""code":"invalid_cause""#), "\(badCause)")

        await alice.stop()
        await watcher.stop()
        try await service.stop()
        await broker.stopAsync()
    }
}
