import BrokerHarness
import DriverAPI
import Foundation
import HubDomain
import PowerPlug
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// Groups, scenes, "all off" and hub-run activations through a real mosquitto.
@Suite(.serialized) struct HouseholdSurfaceTests {
    static let factories: [any DriverFactory] = [VirtualDriverFactory(), PowerPlugDriverFactory()]

    static let devices = [
        HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp"),
        HubConfig.Device(id: "tv", driver: "virtual", name: "TV"),
        // Nothing listens on port 9 (discard): this plug stays unavailable.
        HubConfig.Device(id: "ghost", driver: "powerplug", name: "Ghost plug", config: #"{"host":"127.0.0.1","port":9}"#)
    ]

    func request(_ w: Watcher, _ name: String, _ json: String) async throws -> String {
        let before = w.messages("hub/response/\(name)").count
        try w.publish("hub/request/\(name)", json)
        return try await w.waitFor("hub/response/\(name)", timeout: .seconds(15), skip: before)
    }

    @Test func groupsScenesAndAllOffAnswerPerDevice() async throws {
        let f = try await SurfaceFixture.start(devices: Self.devices, factories: Self.factories)
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        try await w.waitFor("hub/device/ghost/availability") { $0 == "offline" }

        let defined = try await request(w, "group/define", #"{"id":"living","name":"Living room","members":["lamp","tv","ghost"]}"#)
        #expect(defined.contains(#""status":"ok""#) && defined.contains("GroupDefined"))
        try await w.waitFor("hub/group/living/state") { $0.contains(#""switch":"OFF","on":0,"total":3"#) }
        try await w.waitFor("homeassistant/switch/hub/group_living/config") {
            $0.contains(#""command_topic":"hub/group/living/switch/set""#)
        }

        try w.publish("hub/group/living/switch/set", #"{"state":"ON","id":"g-1"}"#)
        let answer = try await w.waitFor("hub/response/group/living/switch/set", timeout: .seconds(10))
        #expect(answer.contains(#"{"device":"lamp","state":"ON","outcome":"confirmed"}"#), "\(answer)")
        #expect(answer.contains(#"{"device":"tv","state":"ON","outcome":"confirmed"}"#))
        #expect(answer.contains(#""device":"ghost","state":"ON","outcome":"unavailable""#))
        #expect(answer.contains(#""confirmed":2,"total":3"#) && answer.contains(#""id":"g-1""#))
        try await w.waitFor("hub/group/living/switch") { $0 == "ON" }
        try await w.waitFor("hub/group/living/state") { $0.contains(#""on":2,"total":3"#) }
        let multi = try await w.waitFor("hub/events/group/living/MultiSwitchRequested")
        #expect(multi.contains(#""command_id":"g-1""#))
        let lampSwitch = try await w.waitFor("hub/events/device/lamp/SwitchRequested") { $0.contains("g-1/lamp") }
        #expect(lampSwitch.contains(#""state":"on""#))

        // The same command id again switches nobody twice.
        let requestsBefore = w.messages("hub/events/device/lamp/SwitchRequested").count
        try w.publish("hub/group/living/switch/set", #"{"state":"ON","id":"g-1"}"#)
        _ = try await w.waitFor("hub/response/group/living/switch/set", skip: 1)
        try await f.eventFeedCaughtUp()
        #expect(w.messages("hub/events/device/lamp/SwitchRequested").count == requestsBefore)

        // A scene, then everything off.
        let scene = try await request(w, "scene/define", #"{"id":"movie","name":"Movie","states":{"tv":"ON","lamp":"OFF"}}"#)
        #expect(scene.contains(#""status":"ok""#))
        let applied = try await request(w, "scene/apply", #"{"id":"movie"}"#)
        #expect(applied.contains(#"{"device":"lamp","state":"OFF","outcome":"confirmed"}"#), "\(applied)")
        #expect(applied.contains(#"{"device":"tv","state":"ON","outcome":"confirmed"}"#))
        let scenes = try await request(w, "scenes", "")
        #expect(scenes.contains(#""states":{"tv":"ON","lamp":"OFF"}"#))
        let off = try await request(w, "all-off", "")
        #expect(off.contains(#""origin":"all""#) && off.contains(#"{"device":"tv","state":"OFF","outcome":"confirmed"}"#), "\(off)")
        try await w.waitFor("hub/group/living/switch") { $0 == "OFF" }

        // Bad input is answered and changes nothing.
        let unknown = try await request(w, "group/define", #"{"id":"x","members":["nope"]}"#)
        #expect(unknown.contains(#""code":"unknown_device""#))
        try w.publish("hub/group/nope/switch/set", "ON")
        let noGroup = try await w.waitFor("hub/response/group/nope/switch/set")
        #expect(noGroup.contains(#""code":"unknown_group""#))

        // Removing the group clears its retained state and its Home Assistant entity.
        let removed = try await request(w, "group/remove", #"{"id":"living"}"#)
        #expect(removed.contains(#""status":"ok""#))
        try await w.waitFor("homeassistant/switch/hub/group_living/config") { $0.isEmpty }
        try await f.stop()
    }

    @Test func dailyRepeatsConflictsAndPlugsThatRunTheirOwnActivations() async throws {
        let f = try await SurfaceFixture.start(devices: Self.devices, factories: Self.factories)
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        let start = ISO8601.format(seconds: currentMicros() / 1_000_000 / 60 * 60 + 3600)
        try w.publish(
            "hub/device/lamp/activations/set",
            #"{"op":"add","name":"evening","start":"\#(start)","length":60,"repeat":{"at":"18:00","days":["mon","fri"],"time_zone":"Europe/Lisbon"}}"#
        )
        let added = try await w.waitFor("hub/response/device/lamp/activations/set")
        #expect(added.contains(#""repeat":{"at":"18:00","days":["mon","fri"],"time_zone":"Europe/Lisbon"}"#), "\(added)")
        #expect(added.contains(#""conflicts":[]"#))
        // A daily-at-18:30 activation overlaps on Mondays and Fridays: reported in the answer and the state.
        try w.publish(
            "hub/device/lamp/activations/set",
            #"{"op":"add","name":"late","start":"\#(start)","length":30,"repeat":{"at":"18:30","time_zone":"Europe/Lisbon"}}"#)
        let conflicting = try await w.waitFor("hub/response/device/lamp/activations/set", skip: 1)
        #expect(conflicting.contains(#""conflicts":[{"first":"late","second":"evening""#), "\(conflicting)")
        try await w.waitFor("hub/device/lamp/state") { $0.contains(#""activation_conflicts":[{"first":"evening","second":"late""#) }
        // Wrong shapes are refused with the field named.
        try w.publish(
            "hub/device/lamp/activations/set",
            #"{"op":"add","name":"x","start":"\#(start)","length":5,"repeat":{"at":"25:00","time_zone":"Europe/Lisbon"}}"#)
        #expect(try await w.waitFor("hub/response/device/lamp/activations/set", skip: 2).contains("repeat.at"))
        try w.publish(
            "hub/device/lamp/activations/set",
            #"{"op":"add","name":"x","start":"\#(start)","length":5,"repeat":{"at":"18:00","time_zone":"Mars/Olympus"}}"#)
        #expect(try await w.waitFor("hub/response/device/lamp/activations/set", skip: 3).contains("repeat.time_zone"))
        // The TCP plug runs its own activations and cannot hold a daily repeat at a local time.
        try w.publish(
            "hub/device/ghost/activations/set",
            #"{"op":"add","name":"x","start":"\#(start)","length":5,"repeat":{"at":"18:00","time_zone":"Europe/Lisbon"}}"#)
        let plug = try await w.waitFor("hub/response/device/ghost/activations/set")
        #expect(plug.contains(#""code":"activation_repeat_unsupported""#), "\(plug)")
        try await f.stop()
    }
}
