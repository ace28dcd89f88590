import BrokerHarness
import DriverAPI
import Foundation
import HubDomain
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubMQTT

/// A multi-outlet device (here a virtual strip, `{"outlets": 3}`) as a person uses one over MQTT:
/// registered once, it is one device per outlet (`<id>-<n>`) that switches, groups and Home
/// Assistant see, one Home Assistant device with an entity per outlet, and removed as a whole.
@Suite(.serialized) struct StripTests {
    func request(_ w: Watcher, _ name: String, _ json: String) async throws -> String {
        let before = w.messages("hub/response/\(name)").count
        try w.publish("hub/request/\(name)", json)
        return try await w.waitFor("hub/response/\(name)", timeout: .seconds(15), skip: before)
    }

    @Test func aStripRegistersAnOutletPerDeviceThatSwitchesAloneAndIsRemovedWhole() async throws {
        let f = try await SurfaceFixture.start(devices: [])
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }

        let added = try await request(
            w, "device/add",
            #"{"id":"desk","driver":"virtual","name":"Desk strip","config":{"outlets":3},"hardware_id":"AA:BB:CC"}"#)
        #expect(added.contains(#""status":"ok""#), "\(added)")
        #expect(added.components(separatedBy: #""type":"DeviceRegistered""#).count == 4, "\(added)")
        for n in 1...3 {
            try await w.waitFor("hub/device/desk-\(n)/availability") { $0 == "online" }
        }
        let state = try await w.waitFor("hub/device/desk-2/state")
        #expect(state.contains(#""strip":{"id":"desk","name":"Desk strip","outlet":2}"#), "\(state)")
        #expect(state.contains(#""name":"Desk strip 2""#))

        // Home Assistant: one device (the strip's identity and name), an entity per outlet.
        let config = try await w.waitFor("homeassistant/switch/hub/desk-2_switch/config")
        #expect(config.contains(#""identifiers":["AA:BB:CC"]"#), "\(config)")
        #expect(config.contains(#""name":"Desk strip","model":"virtual""#), "\(config)")
        #expect(config.contains(#""name":"Outlet 2""#))
        #expect(config.contains(#""unique_id":"AA:BB:CC/2_switch""#))

        // The console's device card says which strip an outlet is on.
        let card = DevicesPage.fields(try #require(await f.service.hub.device("desk-2")), lifetimeWh: nil).description
        #expect(card.contains(#"<dt>Strip</dt><dd data-field="strip">Outlet 2 of Desk strip · <code>desk</code></dd>"#), "\(card)")

        // Each outlet switches alone.
        try w.publish("hub/device/desk-2/switch/set", "ON")
        try await w.waitFor("hub/device/desk-2/switch") { $0 == "ON" }
        let one = try await f.service.hub.device("desk-1")
        #expect(one?.switchState == .unknown)

        // Groups take outlets as devices.
        let group = try await request(w, "group/define", #"{"id":"desks","name":"Desks","members":["desk-1","desk-3"]}"#)
        #expect(group.contains(#""status":"ok""#), "\(group)")
        try w.publish("hub/group/desks/switch/set", "ON")
        try await w.waitFor("hub/device/desk-3/switch") { $0 == "ON" }
        try await w.waitFor("hub/device/desk-1/switch") { $0 == "ON" }

        // Ids that would collide are refused, and nothing is registered.
        let again = try await request(w, "device/add", #"{"id":"desk","driver":"virtual","name":"Again"}"#)
        #expect(again.contains(#""code":"device_exists""#) && again.contains("desk-1, desk-2, desk-3"), "\(again)")
        let outletId = try await request(w, "device/add", #"{"id":"desk-3","driver":"virtual","name":"Lamp"}"#)
        #expect(outletId.contains(#""code":"device_exists""#), "\(outletId)")
        try await request(w, "device/add", #"{"id":"tv-2","driver":"virtual","name":"TV"}"#).contains(#""status":"ok""#).expectTrue()
        let collides = try await request(w, "device/add", #"{"id":"tv","driver":"virtual","name":"TV strip","config":{"outlets":2}}"#)
        #expect(collides.contains(#""code":"device_exists""#) && collides.contains(#"\"tv-2\""#), "\(collides)")
        #expect(try await f.service.hub.device("tv-1") == nil)
        let tooMany = try await request(w, "device/add", #"{"id":"rack","driver":"virtual","name":"Rack","config":{"outlets":40}}"#)
        #expect(
            tooMany.contains(#""code":"invalid_config""#) && tooMany.contains(#"virtual setting \"outlets\" of device \"rack\""#),
            "\(tooMany)")

        // Removing the strip removes every outlet, and its Home Assistant entities.
        let removed = try await request(w, "device/remove", #"{"id":"desk"}"#)
        #expect(removed.contains(#""status":"ok""#) && removed.components(separatedBy: "DeviceRemoved").count == 4, "\(removed)")
        try await w.waitFor("homeassistant/switch/hub/desk-2_switch/config") { $0.isEmpty }
        let outlets = await f.service.hub.outlets(of: "desk")
        #expect(outlets.isEmpty)
        try await f.stop()
    }

    @Test func aStripInTheConfigurationIsRegisteredOnceAcrossRestarts() async throws {
        let directory = temporaryDirectory()
        let devices = [HubConfig.Device(id: "rack", driver: "virtual", name: "Rack", config: #"{"outlets":2}"#)]
        let broker = try TestBroker.start()
        for _ in 0..<2 {
            let service = try await SurfaceFixture.startService(port: broker.port, dataDirectory: directory, devices: devices)
            await service.waitUntilRunning()
            let outlets = await service.hub.outlets(of: "rack")
            #expect(outlets.map(\.id) == ["rack-1", "rack-2"])
            var types: [String] = []
            try await service.hub.store.read(from: 1, through: service.hub.store.lastSequence) { record in
                types.append(record.type)
                return true
            }
            #expect(types.filter { $0 == "DeviceRegistered" }.count == 2, "\(types)")
            #expect(!types.contains("CommandRejected"), "\(types)")
            try await service.stop()
        }
        broker.stop()
    }
}

extension Bool {
    fileprivate func expectTrue(sourceLocation: SourceLocation = #_sourceLocation) { #expect(self, sourceLocation: sourceLocation) }
}
