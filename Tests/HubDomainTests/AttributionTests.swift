import Testing

@testable import HubDomain

@Suite struct AttributionTests {
    @Test func aRecordsActorFieldSplitsAtTheFirstHash() {
        #expect(Attribution(stored: "mqtt") == Attribution(actor: "mqtt"))
        #expect(
            Attribution(stored: "mqtt:alice#automation.porch_lights") == Attribution(actor: "mqtt:alice", cause: "automation.porch_lights"))
        #expect(Attribution(actor: "http:admin", cause: "script.night").stored == "http:admin#script.night")
        #expect(Attribution(actor: "scheduler").stored == "scheduler")
        #expect(Attribution(stored: "mqtt:alice#a.b").text == "mqtt:alice, a.b")
        #expect(Attribution.mqtt(client: nil) == "mqtt" && Attribution.mqtt(client: "alice") == "mqtt:alice")
    }

    @Test func theContextOfAnEventCarriesActorAndCauseApart() {
        let context = EventContext(sequence: 1, timestamp: 0, actor: "mqtt:alice#automation.porch_lights")
        #expect(context.actor == "mqtt:alice" && context.cause == "automation.porch_lights")
        #expect(EventContext(sequence: 1, timestamp: 0, actor: "scheduler").cause == nil)
    }

    @Test(
        arguments: [
            ("automation.porch_lights", nil), ("node-red/flow:3@kitchen", nil), (String(repeating: "a", count: 128), nil),
            ("", "is empty"), (String(repeating: "a", count: 129), "129 characters"), ("porch lights", "U+0020"),
            ("a#b", "'#'"), ("é", "'é'"), ("a\nb", "U+000A")
        ] as [(String, String?)])
    func aCauseIsShortAndPlain(cause: String, refusal: String?) {
        do {
            try DeclaredCause.check(cause)
            #expect(refusal == nil, "\(cause) was taken")
        } catch {
            #expect(error.code == "invalid_cause")
            #expect(refusal.map { error.message.contains($0) } == true, "\(error.message)")
        }
    }

    @Test func aClientNameIsOneTopicLevelOfPlainCharacters() {
        #expect(ClientName.problem("alice") == nil && ClientName.problem("home-assistant_1.lan@home") == nil)
        for bad in ["", "bob smith", "a#b", "a/b", "zoë", String(repeating: "x", count: 65)] {
            #expect(ClientName.problem(bad)?.code == "invalid_client", "\(bad)")
        }
    }
}
