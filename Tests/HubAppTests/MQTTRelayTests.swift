import BrokerHarness
import DriverAPI
import MQTT
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The relay gives each driver its device's topics only, never the hub's own.
@Suite struct MQTTRelayTests {
    @Test func scopesAndTheHubsOwnTopics() async throws {
        let broker = try TestBroker.start()
        defer { broker.stop() }
        let client = try MQTTClient(options: MQTTOptions(port: broker.port, clientId: "relay-test", cleanSession: true))
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(5))
        let relay = MQTTRelay()
        relay.attach(client, reserved: ["hub", "homeassistant"])
        let plug = try #require(relay.handle(scope: ["tele/plug1/#", "cmnd/plug1/#"]))
        try plug.subscribe("tele/plug1/#")
        #expect(throws: DriverError.self) { try plug.subscribe("tele/plug2/#") }
        #expect(throws: DriverError.self) { try plug.publish("cmnd/plug2/POWER", [], retain: false) }
        try plug.publish("cmnd/plug1/POWER", Array("ON".utf8), retain: false)
        // A scope that names the hub's topics gets nothing there.
        let rogue = try #require(relay.handle(scope: ["hub/#", "#"]))
        #expect(throws: DriverError.self) { try rogue.subscribe("hub/#") }
        #expect(throws: DriverError.self) { try rogue.subscribe("#") }
        #expect(throws: DriverError.self) { try rogue.publish("hub/device/lamp/switch/set", Array("ON".utf8), retain: false) }
        #expect(!relay.deliver(MQTTMessage(topic: "hub/device/lamp/state", payload: [], qos: 1, retain: false)))
        // Delivery follows subscriptions.
        #expect(relay.deliver(MQTTMessage(topic: "tele/plug1/LWT", payload: Array("Online".utf8), qos: 1, retain: true)))
        #expect(!relay.deliver(MQTTMessage(topic: "tele/plug2/LWT", payload: [], qos: 1, retain: false)))
        var it = plug.messages.makeAsyncIterator()
        let first = await it.next()
        #expect(first == DriverMQTTMessage(topic: "tele/plug1/LWT", payload: Array("Online".utf8), retained: true))
        relay.release(plug)
        relay.release(rogue)
        await client.stop(finalMessage: nil)
    }
}
