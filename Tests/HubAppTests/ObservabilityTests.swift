import BrokerHarness
import DiskHarness
import Foundation
import HubDomain
import HubLog
import Logging
import Prometheus
import Synchronization
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// `/metrics`, `/healthz` and `/readyz` of a real hub (real broker, real TCP requests), and the
/// scrape checked by Prometheus's own parser.
@Suite(.serialized) struct ObservabilityTests {
    /// A hub with its HTTP listener on a free port and its own metrics registry.
    struct ObservedHub {
        let service: HubService
        let port: Int

        static func start(
            brokerPort: Int?, dataDirectory: String = temporaryDirectory(), extraChecks: [ReadinessCheck] = [],
            note: @escaping @Sendable (String) -> Void = { _ in }
        ) async throws -> ObservedHub {
            var config = HubConfig()
            if let brokerPort {
                config.mqtt.port = brokerPort
                config.mqtt.clientId = "hub-under-test"
            } else {
                config.mqtt.enabled = false
            }
            config.devices = [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp", config: "{}")]
            config.beacons = nil
            var options = HubServiceOptions(
                paths: HubPaths(dataDirectory: dataDirectory), config: config, factories: [VirtualDriverFactory()])
            let registry = PrometheusCollectorRegistry()
            options.metrics = .prometheus(registry: registry)
            options.metricsRegistry = registry
            options.http = HTTPSettings(host: "127.0.0.1", port: 0)
            options.extraReadinessChecks = extraChecks
            let service = try await HubService.start(options, logger: Logger(label: "test") { _ in LineLogHandler(sink: note) })
            await service.waitUntilRunning()
            guard let port = await service.httpPort() else { throw HubError.failed("the HTTP listener did not start") }
            return ObservedHub(service: service, port: port)
        }

        func get(_ path: String) async throws -> HTTPProbe.Reply { try await HTTPProbe.get(port: port, path: path) }

        /// Waits until `path` answers `status`.
        @discardableResult
        func waitFor(_ path: String, status: Int, timeout: Duration = .seconds(10)) async throws -> HTTPProbe.Reply {
            let deadline = ContinuousClock.now + timeout
            var last: HTTPProbe.Reply?
            while ContinuousClock.now < deadline {
                let reply = try await get(path)
                if reply.status == status { return reply }
                last = reply
                try await Task.sleep(for: .milliseconds(50))
            }
            throw HubError.failed(
                "\(path) did not answer \(status) within \(timeout); last: \(last.map { "\($0.status) \($0.body)" } ?? "-")")
        }
    }

    /// The value of one series (`name{labels}` exactly as exposed), nil when absent.
    static func sample(_ exposition: String, _ series: String) -> Double? {
        for line in exposition.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test func scrapeParsesWithPromtoolAndCountersMoveWithCommands() async throws {
        let broker = try await TestBroker.startAsync()
        let watcher = try await Watcher(port: broker.port)
        let hub = try await ObservedHub.start(brokerPort: broker.port)
        try await watcher.waitFor("hub/status") { $0 == "online" }
        try await hub.waitFor("/readyz", status: 200)
        let before = try await hub.get("/metrics").body

        try watcher.publish("hub/device/lamp/switch/set", "ON")
        try await watcher.waitFor("hub/response/device/lamp/switch/set") { $0.contains(#""status":"ok""#) }
        try watcher.publish("hub/device/ghost/switch/set", "ON")
        try await watcher.waitFor("hub/response/device/ghost/switch/set") { $0.contains("unknown_device") }
        try await watcher.waitFor("hub/events/device/lamp/SwitchToggled")

        let scrape = try await hub.get("/metrics")
        #expect(scrape.status == 200)
        #expect(scrape.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        let checked = try PromTool.check(scrape.body)
        #expect(checked.status == 0, "promtool check metrics: \(checked.output)\n\(scrape.body)")
        let after = scrape.body
        func moved(_ series: String) -> Double { (Self.sample(after, series) ?? 0) - (Self.sample(before, series) ?? 0) }
        // The switch command, then the virtual driver's confirmation (reported through the same path).
        #expect(moved(#"hub_commands_total{outcome="ok"}"#) >= 2)
        #expect(moved(#"hub_commands_total{outcome="refused"}"#) == 1)
        #expect(moved(#"hub_command_rejections_total{outcome="refused",code="unknown_device"}"#) == 1)
        // SwitchRequested, SwitchToggled and the recorded CommandRejected at least.
        #expect(moved("hub_events_appended_total") >= 3)
        #expect(moved("hub_append_duration_seconds_count") >= 3)
        #expect(moved("hub_fsync_duration_seconds_count") >= 1)
        #expect(moved("hub_mqtt_messages_received_total") >= 2)
        #expect(moved("hub_mqtt_messages_published_total") >= 2)
        #expect(Self.sample(after, "hub_mqtt_connected") == 1)
        #expect(Self.sample(after, #"hub_devices{driver="virtual",availability="available"}"#) == 1)
        #expect(moved(#"hub_driver_command_duration_seconds_count{driver="virtual",outcome="sent"}"#) >= 1)
        #expect(after.contains("# HELP hub_events_appended_total "))
        #expect(after.contains("# TYPE hub_fsync_duration_seconds histogram"))

        try await hub.service.stop()
        await watcher.stop()
        await broker.stopAsync()
    }

    @Test func readinessFollowsTheBrokerWhileHealthStaysUp() async throws {
        let broker = try await TestBroker.startAsync()
        let hub = try await ObservedHub.start(brokerPort: broker.port)
        let ready = try await hub.waitFor("/readyz", status: 200)
        #expect(ready.body == #"{"status":"ready"}"# + "\n")
        #expect(ready.headers["content-type"] == "application/json")

        await broker.stopAsync()
        let down = try await hub.waitFor("/readyz", status: 503)
        #expect(down.body.contains(#""status":"not ready""#))
        #expect(down.body.contains(#""mqtt":"not connected to the broker at 127.0.0.1:\#(broker.port)""#))
        #expect(!down.body.contains(#""log""#))
        let health = try await hub.get("/healthz")
        #expect(health.status == 200 && health.body == "ok\n")
        #expect(Self.sample(try await hub.get("/metrics").body, "hub_mqtt_connected") == 0)

        try await broker.restartAsync()
        try await hub.waitFor("/readyz", status: 200, timeout: .seconds(20))
        // The reconnect is counted once the state publisher saw it.
        let deadline = ContinuousClock.now + .seconds(5)
        var reconnects: Double?
        repeat {
            reconnects = Self.sample(try await hub.get("/metrics").body, "hub_mqtt_reconnects_total")
            if reconnects == 1 { break }
            try await Task.sleep(for: .milliseconds(50))
        } while ContinuousClock.now < deadline
        #expect(reconnects == 1)

        try await hub.service.stop()
        await broker.stopAsync()
    }

    @Test func readinessTakesExtraChecksAndIgnoresMQTTWhenOff() async throws {
        let fullFlag = FlagBox()
        let storage = ReadinessCheck(name: "storage") { fullFlag.isSet ? "the log's storage is full" : nil }
        let hub = try await ObservedHub.start(brokerPort: nil, extraChecks: [storage])
        let ready = try await hub.get("/readyz")
        #expect(ready.status == 200)
        #expect(Self.sample(try await hub.get("/metrics").body, "hub_mqtt_connected") == nil)
        fullFlag.set()
        let notReady = try await hub.get("/readyz")
        #expect(notReady.status == 503)
        #expect(notReady.body == #"{"status":"not ready","problems":{"storage":"the log's storage is full"}}"# + "\n")
        #expect(try await hub.get("/nothing-here").status == 404)
        try await hub.service.stop()
    }

    @Test func readinessSaysWhenTheLogWriterStopped() async throws {
        // The writer's first data sync fails (the log's fault injection): appends stop, /readyz says why.
        let directory = temporaryDirectory()
        let store = try SegmentStore(directory: HubPaths(dataDirectory: directory).log, options: SegmentStoreOptions(failSyncNumber: 1))
        let hub = try await Hub(store: store, paths: HubPaths(dataDirectory: directory))
        let check = Readiness.log(hub)
        #expect(await check.problem() == nil)
        _ = try? await hub.execute(
            .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil),
            actor: "test", now: 1)
        let problem = await check.problem()
        #expect(problem?.hasPrefix("the log's writer stopped: ") == true)
        #expect(problem?.contains("fdatasync (injected fault)") == true)
        store.close()
    }

    @Test(.enabled(if: SmallDisk.available, Comment(rawValue: SmallDisk.unavailableReason)))
    func readinessSaysWhileTheLogsDiskIsFull() async throws {
        // A real full disk (a small tmpfs): the command is refused storage_full and /readyz's
        // storage check says so, until space is back and the next append goes through.
        let disk = try SmallDisk(megabytes: 4)
        let paths = HubPaths(dataDirectory: disk.path + "/data")
        let store = try SegmentStore(directory: paths.log, options: SegmentStoreOptions(preallocation: 16 * 1024))
        let hub = try await Hub(store: store, paths: paths)
        let check = Readiness.storage(hub)
        #expect(await check.problem() == nil)
        try disk.fill()
        // The first few may still fit in the room the segment has written ahead (here 16 KiB).
        for n in 0..<200 where !hub.isStorageFull {
            _ = try? await hub.execute(
                .registerDevice(id: "d\(n)", driver: "virtual", name: "Device \(n)", config: "{}", hardwareId: nil),
                actor: "test", now: Int64(n))
        }
        let problem = await check.problem()
        #expect(problem?.hasPrefix("the disk holding the log is full (") == true)
        #expect(problem?.hasSuffix("commands are refused with storage_full") == true)
        disk.free()
        _ = try await hub.execute(
            .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: nil),
            actor: "test", now: 1_000)
        #expect(await check.problem() == nil)
        store.close()
    }

    @Test func diskCheckNamesTheDirectoryAndTheShortfall() async throws {
        let directory = temporaryDirectory()
        #expect(await Readiness.disk(directory, minimumFreeBytes: 1).problem() == nil)
        let problem = await Readiness.disk(directory, minimumFreeBytes: UInt64.max / 2).problem()
        #expect(problem?.contains("MiB free on \(directory), less than") == true)
        #expect(
            await Readiness.disk(directory + "/missing", minimumFreeBytes: 1).problem()
                == "cannot read the free space of \(directory)/missing")
    }
}

final class FlagBox: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}

extension ObservabilityTests {
    @Test func anAddressInUseIsRefusedBeforeAnythingStarts() async throws {
        // Something else listens on the port: a real listening socket.
        let other = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(other) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(other, $0, length) == 0 && getsockname(other, $0, &length) == 0 }
        }
        #expect(bound && listen(other, 1) == 0)
        let port = Int(UInt16(bigEndian: address.sin_port))

        let directory = temporaryDirectory()
        var options = HubServiceOptions(paths: HubPaths(dataDirectory: directory), config: HubConfig(), factories: [VirtualDriverFactory()])
        options.config.mqtt.enabled = false
        options.http = HTTPSettings(host: "127.0.0.1", port: port)
        await #expect {
            _ = try await HubService(options, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        } throws: { error in
            "\(error)" == "HTTP address 127.0.0.1:\(port): cannot listen there: Address already in use"
        }
        // Nothing was opened: the data directory is free for the next hub.
        options.http = nil
        let next = try await HubService(options, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        try await next.hub.close()
    }
}
