import BrokerHarness
import DriverAPI
import Foundation
import HubDomain
import Kasa
import KasaSimulator
import PowerPlug
import PowerPlugSimulator
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The TCP plug drivers with their simulators over real loopback TCP, through the hub and a real
/// mosquitto: what a home-automation user sees on the MQTT surface.
@Suite(.serialized) struct TCPPlugSurfaceTests {
    static let factories: [any DriverFactory] = [VirtualDriverFactory(), PowerPlugDriverFactory(), KasaDriverFactory()]

    func addDevice(_ w: Watcher, _ json: String) async throws {
        let before = w.messages("hub/response/device/add").count
        try await w.waitFor("hub/status") { $0 == "online" }  // a request before the hub subscribes is not for it
        try w.publish("hub/request/device/add", json)
        let answer = try await w.waitFor("hub/response/device/add", skip: before)
        #expect(answer.contains("\"status\":\"ok\""), "\(answer)")
    }

    func plugSimulator(port: Int = 0, stateFile: String) -> PowerPlugSimulator {
        PowerPlugSimulator(
            options: PowerPlugSimulator.Options(
                port: port, stateFile: stateFile, statusInterval: .milliseconds(300),
                checkInterval: .seconds(60)))
    }

    @Test func powerPlugSwitchActivationsEditedBehindTheHubsBackAndRestart() async throws {
        let dir = temporaryDirectory()
        var sim = plugSimulator(stateFile: dir + "/plug.state")
        let port = try await sim.start()
        let f = try await SurfaceFixture.start(devices: [], factories: Self.factories)
        let w = f.watcher
        try await addDevice(
            w, #"{"id":"pump","driver":"powerplug","name":"Pump","config":{"host":"127.0.0.1","port":\#(port),"activation_check":1}}"#)
        try await w.waitFor("hub/device/pump/availability") { $0 == "online" }

        // Switch: commanded, then confirmed by the plug's status (manual on / automatic off).
        try w.publish("hub/device/pump/switch/set", "ON")
        try await w.waitFor("hub/device/pump/switch") { $0 == "ON" }
        #expect(sim.status.manual && sim.status.on)
        try await w.waitFor("hub/device/pump/state") { $0.contains(#""switch":"ON","mode":"manual""#) }
        let statesBefore = w.messages("hub/device/pump/state").count
        try w.publish("hub/device/pump/switch/set", "OFF")
        try await w.waitFor("hub/device/pump/state", skip: statesBefore) { $0.contains(#""switch":"OFF","mode":"automatic""#) }
        #expect(!sim.status.manual && !sim.status.on)

        // Activations: written to the plug with U, read back with A.
        let start = (currentMicros() / 1_000_000 / 60 + 24 * 60) * 60
        try w.publish(
            "hub/device/pump/activations/set",
            #"{"op":"add","name":"lawn","start":"\#(ISO8601.format(seconds: start))","length":30,"period":1440}"#)
        try await waitUntil("the plug to hold the activation") { sim.activations.map(\.name) == ["lawn"] }
        #expect(sim.activations.first == DeviceActivation(name: "lawn", start: start, lengthMinutes: 30, periodMinutes: 1440))
        try w.publish(
            "hub/device/pump/activations/set",
            #"{"op":"add","name":"night","start":"\#(ISO8601.format(seconds: start + 3600))","length":5,"period":0}"#)
        try await waitUntil("the plug to hold both") { sim.activations.map(\.name) == ["lawn", "night"] }
        try w.publish("hub/device/pump/activations/set", #"{"op":"remove","name":"lawn"}"#)
        try await waitUntil("the plug to hold only night") { sim.activations.map(\.name) == ["night"] }
        #expect(w.messages("hub/events/device/pump/ActivationsDiverged").isEmpty)

        // Edited behind the hub's back: recorded once, and restored from the log (default policy).
        sim.replaceActivations([DeviceActivation(name: "rogue", start: start, lengthMinutes: 600, periodMinutes: 0)])
        let diverged = try await w.waitFor("hub/events/device/pump/ActivationsDiverged")
        #expect(diverged.contains(#""found":[{"name":"rogue""#) && diverged.contains(#""resolution":"restore""#))
        try await waitUntil("the plug to be restored") { sim.activations.map(\.name) == ["night"] }
        let reads = sim.listRequests
        try await waitUntil("two more read-backs") { sim.listRequests >= reads + 2 }
        try await f.eventFeedCaughtUp()
        // In line: nothing more recorded.
        #expect(
            w.messages("hub/events/device/pump/ActivationsDiverged").count == 1,
            "\(w.messages("hub/events/device/pump/ActivationsDiverged"))")

        // The plug restarts (its activations survive on its "SD card"); the hub sees it go and come back.
        await sim.stop()
        try await w.waitFor("hub/device/pump/availability", timeout: .seconds(10)) { $0 == "offline" }
        sim = plugSimulator(port: port, stateFile: dir + "/plug.state")
        _ = try await sim.start()
        let onlineBefore = w.messages("hub/device/pump/availability").count
        try await w.waitFor("hub/device/pump/availability", timeout: .seconds(40), skip: onlineBefore) { $0 == "online" }
        #expect(sim.activations.map(\.name) == ["night"])
        try w.publish("hub/device/pump/switch/set", "ON")
        try await waitUntil("the restarted plug to switch on") { sim.status.on }
        try await waitUntil("two read-backs of the restarted plug") { sim.listRequests >= 2 }
        try await f.eventFeedCaughtUp()
        #expect(w.messages("hub/events/device/pump/ActivationsDiverged").count == 1)

        await sim.stop()
        try await f.stop()
    }

    @Test func adoptPolicyTakesThePlugsListIntoTheLog() async throws {
        let dir = temporaryDirectory()
        let sim = plugSimulator(stateFile: dir + "/plug.state")
        let port = try await sim.start()
        let f = try await SurfaceFixture.start(devices: [], factories: Self.factories) { $0.activationDivergence = .adopt }
        let w = f.watcher
        try await addDevice(
            w, #"{"id":"heater","driver":"powerplug","name":"Heater","config":{"host":"127.0.0.1","port":\#(port),"activation_check":1}}"#)
        try await w.waitFor("hub/device/heater/availability") { $0 == "online" }
        let start: Int64 = 1_900_000_020
        sim.replaceActivations([DeviceActivation(name: "morning", start: start, lengthMinutes: 20, periodMinutes: 1440)])
        let added = try await w.waitFor("hub/events/device/heater/ActivationChanged")
        #expect(added.contains(#""actor":"driver:powerplug""#) && added.contains(#""name":"morning""#))
        try await w.waitFor("hub/device/heater/state") { $0.contains(#""activations":[{"name":"morning""#) }
        #expect(await f.service.hub.state.activations["heater"].map(\.name) == ["morning"])
        #expect(sim.activations.map(\.name) == ["morning"])
        await sim.stop()
        try await f.stop()
    }

    @Test func kasaSwitchReadingsAndEnergyCounterReset() async throws {
        // 36 kW: 10 Wh a second, so the energy ledger moves within the test.
        let sim = KasaSimulator(options: KasaSimulator.Options(port: 0, firmware: .old, loadWatts: 36_000))
        let port = try await sim.start()
        let f = try await SurfaceFixture.start(devices: [], factories: Self.factories)
        let w = f.watcher
        try await addDevice(
            w, #"{"id":"kettle","driver":"kasa","name":"Kettle","config":{"host":"127.0.0.1","port":\#(port),"poll_interval":0.25}}"#)
        try await w.waitFor("hub/device/kettle/availability") { $0 == "online" }
        try w.publish("hub/device/kettle/switch/set", "ON")
        try await w.waitFor("hub/device/kettle/switch") { $0 == "ON" }
        #expect(sim.relayOn)
        try await w.waitFor("hub/device/kettle/power") { (Double($0) ?? 0) > 30_000 }
        try await w.waitFor("hub/device/kettle/energy") { (Double($0) ?? 0) >= 0.02 }

        // The plug loses its counter: recorded as a reset, the lifetime total never goes down.
        sim.resetEnergyCounter()
        let reset = try await w.waitFor("hub/events/device/kettle/EnergyCounterReset")
        #expect(reset.contains(#""actor":"driver:kasa""#))
        try await w.waitFor("hub/device/kettle/energy", skip: w.messages("hub/device/kettle/energy").count)  // a total after the reset
        let totals = w.messages("hub/device/kettle/energy").compactMap { Double(w.text($0)) }
        #expect(totals == totals.sorted(), "\(totals)")
        let account = await f.service.hub.state.energy["kettle"]
        #expect((account?.resets ?? 0) >= 1)

        let powerBefore = w.messages("hub/device/kettle/power").count
        try w.publish("hub/device/kettle/switch/set", "OFF")
        try await w.waitFor("hub/device/kettle/switch") { $0 == "OFF" }
        try await w.waitFor("hub/device/kettle/power", skip: powerBefore) { $0 == "0" }
        #expect(!sim.relayOn)
        await sim.stop()
        try await f.stop()
    }

    @Test func hostileDevicesAreMarkedUnavailableAndTheHubKeepsServing() async throws {
        let garbage = try HostilePeer { _ in Array("zzzz not a plug \u{1}\u{2}\u{3}".utf8) }
        let huge = try HostilePeer { request in
            request.isEmpty ? nil : [0x7F, 0xFF, 0xFF, 0xFF] + Array(repeating: 0x41, count: 16)  // a 2 GB Kasa header
        }
        let f = try await SurfaceFixture.start(factories: Self.factories)
        let w = f.watcher
        try await addDevice(w, #"{"id":"junk","driver":"powerplug","name":"Junk","config":{"host":"127.0.0.1","port":\#(garbage.port)}}"#)
        try await addDevice(
            w,
            #"{"id":"fake","driver":"kasa","name":"Fake","config":{"host":"127.0.0.1","port":\#(huge.port),"poll_interval":0.5,"timeout":2}}"#
        )
        try await w.waitFor("hub/device/junk/state") { $0.contains(#""availability":"offline""#) && $0.contains("unknown message type") }
        try await w.waitFor("hub/device/fake/state") { $0.contains(#""availability":"offline""#) && $0.contains("2147483647 bytes") }
        // The hub and its other devices keep working.
        try w.publish("hub/device/lamp/switch/set", "ON")
        try await w.waitFor("hub/device/lamp/switch") { $0 == "ON" }
        try w.publish("hub/device/junk/switch/set", "ON")
        try await w.waitFor("hub/device/junk/state") { $0.contains(#""last_failure":{"state":"ON""#) }
        garbage.stop()
        huge.stop()
        try await f.stop()
    }
}

/// A TCP server on loopback that answers every read (and the connection itself, with an empty
/// request) with whatever `reply` returns; nil sends nothing. One thread, blocking sockets.
final class HostilePeer: Sendable {
    let port: Int
    private let fd: Int32

    init(reply: @escaping @Sendable ([UInt8]) -> [UInt8]?) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard bound else { close(fd); throw HubError.failed("hostile peer: cannot listen") }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread {
                    defer { close(client) }
                    var request: [UInt8] = []
                    var buffer = [UInt8](repeating: 0, count: 4096)
                    while true {
                        if let bytes = reply(request), !bytes.isEmpty {
                            guard bytes.withUnsafeBytes({ send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 else { return }
                        }
                        let n = recv(client, &buffer, buffer.count, 0)
                        guard n > 0 else { return }
                        request = Array(buffer[0..<n])
                    }
                }
            }
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}

extension TCPPlugSurfaceTests {
    @Test func switchingAPlugToTheStateItIsAlreadyInIsConfirmed() async throws {
        let sim = plugSimulator(stateFile: temporaryDirectory() + "/plug.state")
        let port = try await sim.start()
        let f = try await SurfaceFixture.start(devices: [], factories: Self.factories)
        let w = f.watcher
        try await addDevice(w, #"{"id":"pump","driver":"powerplug","name":"Pump","config":{"host":"127.0.0.1","port":\#(port)}}"#)
        try await w.waitFor("hub/device/pump/availability") { $0 == "online" }
        try w.publish("hub/device/pump/switch/set", "OFF")  // already off
        let toggled = try await w.waitFor("hub/events/device/pump/SwitchToggled") { $0.contains(#""cause":"command""#) }
        #expect(toggled.contains(#""state":"off""#))
        try w.publish("hub/device/pump/switch/set", "ON")
        try await w.waitFor("hub/events/device/pump/SwitchToggled") { $0.contains(#""state":"on","cause":"command""#) }
        try await f.eventFeedCaughtUp()
        #expect(w.messages("hub/events/device/pump/SwitchFailed").isEmpty)
        await sim.stop()
        try await f.stop()
    }
}
