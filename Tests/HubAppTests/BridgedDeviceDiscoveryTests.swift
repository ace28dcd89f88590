import BrokerHarness
import DriverAPI
import Foundation
import Testing
import VirtualDriver

@testable import HubApp

/// A device whose driver leaves Home Assistant to another bridge (Zigbee2MQTT announces its own
/// plugs) gets no `homeassistant/...` config from the hub, while the hub's other devices do; a
/// driver that says it wants one (`home_assistant: true` in Zigbee2MQTT's settings) gets it.
@Suite(.serialized) struct BridgedDeviceDiscoveryTests {
    /// A switch that says whether the hub announces it (`{"announce": false}`).
    struct BridgedFactory: DriverFactory {
        let name = "bridged"
        func make(configuration: DriverConfiguration) throws -> any Driver {
            BridgedSwitch(announces: !configuration.settingsJSON.contains(#""announce":false"#))
        }
    }

    final class BridgedSwitch: Driver {
        let announces: Bool
        init(announces: Bool) { self.announces = announces }
        var capabilities: DriverCapabilities { DriverCapabilities(announcesToHomeAssistant: announces) }
        func run(context: any DriverContext) async throws {
            await context.report(.availability(available: true, reason: "bridged"))
            while !Task.isCancelled { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
        }
        func execute(_ command: DriverCommand) async throws {}
    }

    @Test func aDeviceAnnouncedByItsOwnBridgeIsNotAnnouncedAgain() async throws {
        let f = try await SurfaceFixture.start(
            devices: [
                HubConfig.Device(id: "hall", driver: "bridged", name: "Hall plug", config: #"{"announce":false}"#),
                HubConfig.Device(id: "porch", driver: "bridged", name: "Porch plug", config: "{}"),
                HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp", config: "{}")
            ],
            factories: [VirtualDriverFactory(), BridgedFactory()])
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        try await w.waitFor("hub/device/hall/availability") { $0 == "online" }
        let porch = try await w.waitFor("homeassistant/switch/hub/porch_switch/config")
        #expect(porch.contains(#""name":"Porch plug""#), "\(porch)")
        _ = try await w.waitFor("homeassistant/switch/hub/lamp_switch/config")
        // Announced in one pass with the others: by now the hall's would be there too. What the hub
        // sent on its topic only clears a config an earlier hub may have left retained.
        let hall = w.messages("homeassistant/switch/hub/hall_switch/config")
        #expect(hall.allSatisfy { $0.payload.isEmpty }, "\(hall)")
        // The hub still carries the device itself.
        let state = try await w.waitFor("hub/device/hall/state")
        #expect(state.contains(#""name":"Hall plug""#), "\(state)")
        try await f.stop()
    }
}
