import BrokerHarness
import DriverAPI
import Foundation
import HubDomain
import MQTT
import PowerPlug
import PowerPlugSimulator
import Prometheus
import Synchronization
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubMQTT

/// Drivers run as child tasks of the driver host (cancelled when their device goes and at
/// shutdown), and the queues between the parts are bounded with a named overflow policy.
@Suite(.serialized) struct StructuredDriverTests {
    static let factories: [any DriverFactory] = [VirtualDriverFactory(), PowerPlugDriverFactory()]

    func plugSimulator() -> PowerPlugSimulator {
        PowerPlugSimulator(
            options: PowerPlugSimulator.Options(
                port: 0, stateFile: temporaryDirectory() + "/plug.state", statusInterval: .milliseconds(300),
                checkInterval: .seconds(60)))
    }

    func request(_ w: Watcher, _ name: String, _ json: String) async throws {
        let topic = "hub/response/\(name)"
        let before = w.messages(topic).count
        try w.publish("hub/request/\(name)", json)
        let answer = try await w.waitFor(topic, skip: before)
        #expect(answer.contains(#""status":"ok""#), "\(answer)")
    }

    /// A command whose lane is full is answered `hub_busy` (retryable: nothing was carried out) and
    /// counted; the command already in the lane waits for it, unanswered until it runs.
    @Test func aCommandItsLaneCannotTakeIsRefusedRetryablyAndCounted() async throws {
        let registry = PrometheusCollectorRegistry()
        let f = try await SurfaceFixture.start(options: { $0.metrics = .prometheus(registry: registry) })
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        let surface = try #require(f.service.surface)
        // One lane that holds one command, and no consumer: the second command finds it full.
        let (held, lane) = AsyncStream<MQTTSurface.Work>.makeStream(bufferingPolicy: .bufferingOldest(1))
        func set(_ id: String) -> MQTTMessage {
            MQTTMessage(topic: "hub/device/lamp/switch/set", payload: Array(#"{"state":"ON","id":"\#(id)"}"#.utf8), qos: 1)
        }
        surface.dispatch(set("first"), lanes: [lane])
        surface.dispatch(set("second"), lanes: [lane])
        let refused = try await w.waitFor("hub/response/device/lamp/switch/set") { $0.contains("second") }
        #expect(refused.contains(#""status":"error""#) && refused.contains(#""code":"hub_busy""#), "\(refused)")
        #expect(refused.contains("send it again"))
        #expect(!w.messages("hub/response/device/lamp/switch/set").map(w.text).contains { $0.contains("first") })
        #expect(RejectionKind(code: CommandService.hubBusy) == .unavailable)
        #expect(registry.emitToString().contains(#"hub_queue_overflow_total{queue="mqtt_command_lane"} 1"#))
        #expect(surface.commandWindow.current == 1)  // the first, still in its lane
        withExtendedLifetime(held) {}  // a stream no one holds ends, and its lane takes nothing
        try await f.stop()
    }

    /// A full report lane: a new reading displaces the oldest reading waiting (whose `report`
    /// returns), any other report waits for room; both are counted, and the consumer then takes
    /// what is left in order.
    @Test func aFullReportLaneDropsTheOldestReadingAndMakesStateReportsWait() async throws {
        let overflows = Atomic<Int>(0)
        let lanes = DriverReportLanes(laneCount: 1, capacity: 2) { overflows.add(1, ordering: .relaxed) }
        func reading(_ value: Double) -> DriverReportLanes.Report {
            .init(device: "m", driver: "meter", observation: .reading(quantity: .power, value: value, measuredAt: t0))
        }
        let returned = Mutex<[String]>([])
        let first = Task {
            await lanes.submit(reading(1))
            returned.withLock { $0.append("1") }
        }
        try await waitUntil("the first reading queued") { lanes.waiting == 1 }
        let second = Task { await lanes.submit(reading(2)) }
        try await waitUntil("the second reading queued") { lanes.waiting == 2 }
        let third = Task { await lanes.submit(reading(3)) }
        await first.value  // displaced by the third
        #expect(returned.withLock { $0 } == ["1"])
        #expect(lanes.waiting == 2 && overflows.load(ordering: .relaxed) == 1)
        let state = Task {
            await lanes.submit(.init(device: "m", driver: "meter", observation: .availability(available: true, reason: "up")))
        }
        try await waitUntil("the state report counted") { overflows.load(ordering: .relaxed) == 2 }
        #expect(lanes.waiting == 2)  // it waits for room, it is not dropped

        let handled = Mutex<[Observation]>([])
        let consumer = Task { await lanes.consume(0) { report in handled.withLock { $0.append(report.observation) } } }
        await second.value
        await third.value
        await state.value
        #expect(
            handled.withLock { $0 } == [
                .reading(quantity: .power, value: 2, measuredAt: t0), .reading(quantity: .power, value: 3, measuredAt: t0),
                .availability(available: true, reason: "up")
            ])
        lanes.close()
        await consumer.value
        await lanes.submit(reading(4))  // closed: returns at once
        #expect(handled.withLock { $0.count } == 3)
    }

    /// A lane that has drained keeps no buffer: the reports it handled (their strings, activation
    /// lists and continuations) are not held on to, so an idle hub's lanes hold no memory.
    @Test func aDrainedReportLaneHoldsNoBuffer() async throws {
        let lanes = DriverReportLanes(laneCount: 1, capacity: 256) {}
        let reporters = (0..<100).map { i in
            Task {
                await lanes.submit(
                    .init(device: "m", driver: "meter", observation: .reading(quantity: .power, value: Double(i), measuredAt: t0)))
            }
        }
        try await waitUntil("the reports queued") { lanes.waiting == 100 }
        #expect(lanes.bufferedSlots >= 100)
        let handled = Atomic<Int>(0)
        let consumer = Task { await lanes.consume(0) { _ in handled.add(1, ordering: .relaxed) } }
        for reporter in reporters { await reporter.value }
        #expect(handled.load(ordering: .relaxed) == 100 && lanes.waiting == 0)
        #expect(lanes.bufferedSlots == 0)
        lanes.close()
        await consumer.value
    }

    /// Removing a device cancels its driver's task: the plug sees its connection closed, and a
    /// device registered again gets a new driver.
    @Test func aRemovedDevicesDriverIsCancelled() async throws {
        let sim = plugSimulator()
        let port = try await sim.start()
        let f = try await SurfaceFixture.start(devices: [], factories: Self.factories)
        let w = f.watcher
        try await w.waitFor("hub/status") { $0 == "online" }
        let add = #"{"id":"pump","driver":"powerplug","name":"Pump","config":{"host":"127.0.0.1","port":\#(port)}}"#
        try await request(w, "device/add", add)
        try await w.waitFor("hub/device/pump/availability") { $0 == "online" }
        try await waitUntil("the plug to see the driver's connection") { sim.openConnections == 1 }

        try await request(w, "device/remove", #"{"id":"pump"}"#)
        try await waitUntil("the plug to see the connection closed") { sim.openConnections == 0 }
        #expect(await f.service.drivers.running["pump"] == nil)
        #expect(sim.connectionCount == 1)
        try await f.stop()
        await sim.stop()
    }

    /// At shutdown the driver host cancels every driver and returns only once all have ended: when
    /// the service has stopped, no plug has a connection open.
    @Test func shutdownStopsEveryDriver() async throws {
        let sims = [plugSimulator(), plugSimulator()]
        var devices: [HubConfig.Device] = []
        for (i, sim) in sims.enumerated() {
            let port = try await sim.start()
            devices.append(
                HubConfig.Device(id: "plug\(i)", driver: "powerplug", name: "Plug \(i)", config: #"{"host":"127.0.0.1","port":\#(port)}"#))
        }
        let f = try await SurfaceFixture.start(devices: devices, factories: Self.factories)
        try await waitUntil("both plugs connected") { sims.allSatisfy { $0.openConnections == 1 } }
        try await f.service.stop()
        try await waitUntil("both connections closed", timeout: .seconds(2)) { sims.allSatisfy { $0.openConnections == 0 } }
        #expect(await f.service.drivers.running.isEmpty)
        await f.watcher.stop()
        f.broker.stop()
        for sim in sims { await sim.stop() }
    }
}
