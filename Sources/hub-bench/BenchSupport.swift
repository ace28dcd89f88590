import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import Logging
import MQTT
import Synchronization
import VirtualDriver

/// What the benchmarks share.
enum Bench {
    /// A clean MQTT 5 client connected to the benchmark's broker, subscribed to `subscribe` at QoS 1.
    static func client(_ port: Int, _ id: String, subscribe: [String] = []) async throws -> MQTTClient {
        let client = try MQTTClient(options: MQTTOptions(port: port, clientId: id, cleanSession: true))
        for filter in subscribe { try client.subscribe(filter, qos: 1) }
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(5))
        return client
    }

    /// `dir` as an absolute path, emptied (what an earlier run left is removed) and created.
    static func freshDirectory(_ dir: String) throws -> String {
        let root = (dir as NSString).standardizingPath
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return root
    }

    /// A hub in this process on the benchmark's broker, data in `<root>/hub`, with virtual devices
    /// `meter-0` ... `meter-99` (the ingest's targets) besides `devices`; its diagnostics discarded.
    static func startHub(
        port: Int, root: String, devices: [HubConfig.Device] = [],
        syncs: SyncTimes? = nil
    ) async throws -> HubService {
        var config = HubConfig()
        config.mqtt.port = port
        config.devices =
            devices + (0..<100).map { HubConfig.Device(id: "meter-\($0)", driver: "virtual", name: "Meter \($0)", config: "{}") }
        var options = HubServiceOptions(paths: HubPaths(dataDirectory: root + "/hub"), config: config, factories: [VirtualDriverFactory()])
        if let syncs { options.logOptions.syncObserver = syncs.record }
        return try await HubService.start(options, logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() })
    }
}

/// The durations of the hub log's own `fdatasync`s while recording is on (told on the log's writer
/// thread), so that a run can set them beside the disk's floor measured in the same run.
final class SyncTimes: Sendable {
    private let state = Mutex<(on: Bool, seconds: [Double])>((false, []))

    /// Recording on (what was recorded before is dropped) or off.
    func recording(_ on: Bool) {
        state.withLock { $0 = (on, on ? [] : $0.seconds) }
    }

    /// What the writer thread tells after each sync.
    var record: @Sendable (Duration) -> Void {
        { [self] duration in self.state.withLock { if $0.on { $0.seconds.append(duration.inSeconds) } } }
    }

    /// The durations recorded, in seconds.
    var seconds: [Double] { state.withLock { $0.seconds } }
}

extension Duration {
    /// The duration in seconds, as a Double (for rates and printed figures).
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
