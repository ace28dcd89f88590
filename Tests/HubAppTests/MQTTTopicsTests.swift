import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

@Suite struct MQTTTopicsTests {
    let t = MQTTTopics()

    @Test func builders() {
        #expect(t.status == "hub/status")
        #expect(t.deviceState("lamp") == "hub/device/lamp/state")
        #expect(t.deviceSwitch("lamp") == "hub/device/lamp/switch")
        #expect(t.devicePower("lamp") == "hub/device/lamp/power")
        #expect(t.deviceEnergy("lamp") == "hub/device/lamp/energy")
        #expect(t.deviceAvailability("lamp") == "hub/device/lamp/availability")
        #expect(t.deviceSwitchSet("lamp") == "hub/device/lamp/switch/set")
        #expect(t.deviceActivationsSet("lamp") == "hub/device/lamp/activations/set")
        #expect(t.animalState("rex") == "hub/animal/rex/state")
        #expect(t.animalAdmit == "hub/animal/admit")
        #expect(t.animalDischarge("rex") == "hub/animal/rex/discharge")
        #expect(t.animalVitals("rex") == "hub/animal/rex/vitals")
        #expect(t.request("device/add") == "hub/request/device/add")
        #expect(t.event(stream: "device/lamp", type: "SwitchRequested") == "hub/events/device/lamp/SwitchRequested")
        #expect(t.event(stream: "hub", type: "CommandRejected") == "hub/events/hub/CommandRejected")
        #expect(t.homeAssistantStatus == "homeassistant/status")
    }

    @Test func configurableBaseAndPrefix() {
        let c = MQTTTopics(base: "site1/hub/", discoveryPrefix: "ha")
        #expect(c.base == "site1/hub")
        #expect(c.deviceState("a") == "site1/hub/device/a/state")
        #expect(c.route(topic: "site1/hub/device/a/switch/set") == .command(.switchSet("a")))
        #expect(c.route(topic: "hub/device/a/switch/set") == .ignored)
        #expect(c.route(topic: "ha/status") == .homeAssistantStatus)
        #expect(c.route(topic: "homeassistant/status") == .ignored)
        #expect(c.subscriptions.contains("ha/status"))
        #expect(MQTTTopics(base: "", discoveryPrefix: "").base == "hub")
    }

    /// Routing compares bytes: only `<base>/` followed by more routes, and a topic that merely starts
    /// like the base (or like the status topics) is not the hub's.
    @Test func routesOnlyWhatIsBelowTheBase() {
        let c = MQTTTopics(base: "site1/hub", discoveryPrefix: "ha")
        #expect(c.route(topic: "site1/hub") == .ignored)
        #expect(c.route(topic: "site1/hub/") == .ignored)
        #expect(c.route(topic: "site1/hubx/request/devices") == .ignored)
        #expect(c.route(topic: "site1/hub/request/devices") == .command(.request("devices")))
        #expect(c.route(topic: "site1/hub/request/a//b/") == .command(.request("a//b/")))
        if case .command(.invalid) = c.route(topic: "site1/hub/request/") {
        } else {
            Issue.record("a request without a name must be invalid")
        }
        if case .command(.invalid) = c.route(topic: "site1/hub/request") {
        } else {
            Issue.record("a request without a name must be invalid")
        }
        #expect(c.route(topic: "ha/status/x") == .ignored)
        #expect(c.route(topic: "ha/statu") == .ignored)
        #expect(c.route(topic: "hax/status") == .ignored)
        if case .command(.invalid) = c.route(topic: "site1/hub/device/lämp/switch/set") {
        } else {
            Issue.record("a non-ASCII id must be invalid")
        }
        #expect(c.route(topic: "site1/hub/request/grüße/x") == .command(.request("grüße/x")))
        #expect(c.isStatus("site1/hub/status"))
        #expect(!c.isStatus("site1/hub/status/active"))
        #expect(!c.isStatus("site1/hubstatus"))
        #expect(!c.isStatus("hub/status"))
        #expect(c.isStatus(c.status) && c.route(topic: c.homeAssistantStatus) == .homeAssistantStatus)
    }

    @Test func subscriptions() {
        #expect(
            t.subscriptions == [
                "hub/device/+/switch/set", "hub/device/+/activations/set", "hub/group/+/switch/set", "hub/animal/admit",
                "hub/animal/+/discharge", "hub/animal/+/vitals", "hub/request/#", "homeassistant/status",
                "hub/from/+/device/+/switch/set", "hub/from/+/device/+/activations/set", "hub/from/+/group/+/switch/set",
                "hub/from/+/animal/admit", "hub/from/+/animal/+/discharge", "hub/from/+/animal/+/vitals", "hub/from/+/request/#"
            ])
    }

    @Test func routesGroupSwitches() {
        #expect(t.route(topic: "hub/group/living/switch/set") == .command(.groupSwitchSet("living")))
        #expect(t.response(for: .command(.groupSwitchSet("living"))) == "hub/response/group/living/switch/set")
        if case .command(.invalid) = t.route(topic: "hub/group/a b/switch/set") {} else { Issue.record("a bad group id must be invalid") }
        #expect(t.route(topic: "hub/group/living/switch") == .ignored)
    }

    @Test func routesEveryCommandPattern() {
        #expect(t.route(topic: "hub/device/lamp/switch/set") == .command(.switchSet("lamp")))
        #expect(t.route(topic: "hub/device/Plug_1-a/activations/set") == .command(.activationsSet("Plug_1-a")))
        #expect(t.route(topic: "hub/animal/admit") == .command(.animalAdmit))
        #expect(t.route(topic: "hub/animal/rex/discharge") == .command(.animalDischarge("rex")))
        #expect(t.route(topic: "hub/animal/rex/vitals") == .command(.animalVitals("rex")))
        #expect(t.route(topic: "hub/request/device/add") == .command(.request("device/add")))
        #expect(t.route(topic: "hub/request/devices") == .command(.request("devices")))
        #expect(t.route(topic: "hub/request/nonsense/x/y") == .command(.request("nonsense/x/y")))
        #expect(t.route(topic: "homeassistant/status") == .homeAssistantStatus)
        #expect(MQTTRoute.route(topic: "hub/device/x/switch/set") == .command(.switchSet("x")))
    }

    @Test func invalidIds() {
        func reason(_ topic: String) -> String? {
            if case .command(.invalid(let r)) = t.route(topic: topic) { return r }
            return nil
        }
        let plus = reason("hub/device/a+b/switch/set")
        #expect(plus?.contains("device id \"a+b\"") == true)
        #expect(plus?.contains("wildcard character '+'") == true)
        #expect(plus?.contains("1 to 64 characters of A-Z, a-z, 0-9, _ and -") == true)
        #expect(reason("hub/device/+/switch/set")?.contains("'+'") == true)
        #expect(reason("hub/device/#/activations/set")?.contains("'#'") == true)
        #expect(reason("hub/animal/r#x/vitals")?.contains("animal id \"r#x\"") == true)
        #expect(reason("hub/device//switch/set")?.contains("device id in topic \"hub/device//switch/set\" is empty") == true)
        #expect(reason("hub/animal//discharge")?.contains("is empty") == true)
        let long = String(repeating: "a", count: 65)
        #expect(reason("hub/device/\(long)/switch/set")?.contains("is 65 characters long") == true)
        #expect(
            t.route(topic: "hub/device/\(String(repeating: "a", count: 64))/switch/set")
                == .command(.switchSet(String(repeating: "a", count: 64))))
        #expect(reason("hub/device/l amp/switch/set")?.contains("U+0020") == true)
        #expect(reason("hub/device/lâmp/switch/set")?.contains("'â'") == true)
        #expect(reason("hub/device/l.amp/switch/set")?.contains("'.'") == true)
        // A huge id is shown shortened in the reason.
        let huge = String(repeating: "x", count: 10_000)
        #expect((reason("hub/device/\(huge)/switch/set")?.utf8.count ?? .max) < 400)
        #expect(reason("hub/request")?.contains("names no request") == true)
        #expect(reason("hub/request/")?.contains("names no request") == true)
        #expect(reason("hub/request/device/+")?.contains("wildcard") == true)
    }

    @Test func ignoresEverythingElse() {
        for topic in [
            "hub/device/lamp/state", "hub/device/lamp/switch", "hub/device/lamp/power", "hub/device/lamp/availability",
            "hub/animal/rex/state", "hub/status", "hub/response/device/add", "hub/events/device/lamp/SwitchToggled",
            "hub/device/lamp/switch/set/extra", "hub/device/lamp/dim/set", "hub/animal/rex/feed", "hub/animal/admit/now",
            "hub", "hub/", "hubx/device/lamp/switch/set", "other/device/lamp/switch/set", "", "homeassistant/switch/x/config",
            "HUB/device/lamp/switch/set", "/hub/device/lamp/switch/set"
        ] {
            #expect(t.route(topic: topic) == .ignored, "\(topic)")
        }
    }

    @Test func responseTopics() {
        #expect(t.response(for: .command(.switchSet("lamp"))) == "hub/response/device/lamp/switch/set")
        #expect(t.response(for: .command(.activationsSet("lamp"))) == "hub/response/device/lamp/activations/set")
        #expect(t.response(for: .command(.animalAdmit)) == "hub/response/animal/admit")
        #expect(t.response(for: .command(.animalDischarge("rex"))) == "hub/response/animal/rex/discharge")
        #expect(t.response(for: .command(.animalVitals("rex"))) == "hub/response/animal/rex/vitals")
        #expect(t.response(for: .command(.request("device/add"))) == "hub/response/device/add")
        #expect(t.response(for: .ignored) == nil)
        #expect(t.response(for: .homeAssistantStatus) == nil)
        #expect(t.response(for: .command(.invalid("x"))) == nil)
        // Topic-based: the same for valid routes, and usable for invalid ones.
        for topic in [
            "hub/device/lamp/switch/set", "hub/device/lamp/activations/set", "hub/animal/admit", "hub/animal/rex/discharge",
            "hub/animal/rex/vitals", "hub/request/device/add", "hub/request/devices"
        ] {
            #expect(t.response(forTopic: topic) == t.response(for: t.route(topic: topic)), "\(topic)")
        }
        #expect(t.response(forTopic: "hub/device//switch/set") == "hub/response/device//switch/set")
        #expect(t.response(forTopic: "hub/device/a+b/switch/set") == "hub/response/error")
        #expect(t.response(forTopic: "hub/request") == "hub/response")
        #expect(t.response(forTopic: "hub/status") == nil)
        #expect(t.response(forTopic: "hub/response/device/add") == nil)
        #expect(t.response(forTopic: "hub/events/hub/CommandRejected") == nil)
        #expect(t.response(forTopic: "elsewhere/x") == nil)
        // The incoming topic fits in MQTT's 65,535 bytes, its mirror would not.
        let tooLong = "hub/device/" + String(repeating: "a", count: 65_510) + "/switch/set"
        #expect(tooLong.utf8.count <= 65_535)
        let answer = t.response(forTopic: tooLong)
        #expect(answer == "hub/response/error", "\(answer?.utf8.count ?? 0) bytes")
    }

    /// MQTT 5 response topics: the hub answers only where nobody reads commands.
    @Test func responseTopicsTheHubAnswersOn() {
        let scopes = ["cmnd/plug7/#", "stat/plug7/#", "shellyplus1pm-abc/#", "+/online", "espresense/devices/#"]
        let accepted = [
            "app/replies/42", "client/inbox", "hub/response/device/get", "hub/response", "hubx/request/all-off",
            "a//b", "x/online/more"
        ]
        for topic in accepted {
            #expect(t.responseTopicProblem(topic, deviceScopes: scopes) == nil, "\(topic)")
        }
        let refused: [(topic: String, reason: String)] = [
            ("hub/request/all-off", "the hub reads it (hub/request/#)"),
            ("hub/device/lamp/switch/set", "the hub reads it (hub/device/+/switch/set)"),
            ("hub/group/g/switch/set", "the hub reads it (hub/group/+/switch/set)"),
            ("hub/animal/admit", "the hub reads it (hub/animal/admit)"),
            ("hub/animal/rex/vitals", "the hub reads it (hub/animal/+/vitals)"),
            ("homeassistant/status", "the hub reads it (homeassistant/status)"),
            ("hub/status", "it is one of the hub's own topics, and under hub/ the hub answers only on hub/response/..."),
            ("hub/events/device/lamp/SwitchToggled", "it is one of the hub's own topics"),
            ("hub/device/lamp/state", "it is one of the hub's own topics"),
            ("hub", "it is one of the hub's own topics"),
            ("hub/responses", "it is one of the hub's own topics"),
            ("homeassistant/switch/hub/lamp_switch/config", "it is under the discovery prefix homeassistant/, which Home Assistant reads"),
            ("cmnd/plug7/POWER", "a device or bridge the hub drives reads it (cmnd/plug7/#), so an answer there would be a command to it"),
            ("shellyplus1pm-abc/rpc", "a device or bridge the hub drives reads it (shellyplus1pm-abc/#)"),
            ("app/online", "a device or bridge the hub drives reads it (+/online)"),
            ("app/+/replies", "it contains the wildcard character '+', which no topic name may"),
            ("app/#", "it contains the wildcard character '#', which no topic name may"),
            ("app/\u{0}x", "it contains the character U+0000, which no topic name may"),
            ("$SYS/broker/x", "topics that start with $ are the broker's"),
            (String(repeating: "a", count: 65_536), "it is 65536 bytes long, more than a topic may be (65535)")
        ]
        for (topic, reason) in refused {
            let problem = t.responseTopicProblem(topic, deviceScopes: scopes)
            #expect(problem?.contains(": " + reason) == true, "\(topic.prefix(40)): \(problem ?? "accepted")")
        }
        #expect(
            t.responseTopicProblem("hub/request/all-off") == """
                response topic "hub/request/all-off" is refused: the hub reads it (hub/request/#); \
                give a topic of your own outside hub/ and homeassistant/, or one under hub/response/
                """)
        // Another base and prefix move the rules with them.
        let site = MQTTTopics(base: "site1/hub", discoveryPrefix: "ha")
        #expect(site.responseTopicProblem("site1/hub/response/x") == nil)
        #expect(site.responseTopicProblem("hub/request/all-off") == nil)
        #expect(site.responseTopicProblem("site1/hub/request/all-off") != nil)
        #expect(site.responseTopicProblem("site1/hub/status") != nil)
        #expect(site.responseTopicProblem("ha/status") != nil && site.responseTopicProblem("ha/x") != nil)
    }
}
