import Foundation
import HubRuntime
import Logging
import MQTT
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
    static func startHub(port: Int, root: String, devices: [HubConfig.Device] = []) async throws -> HubService {
        var config = HubConfig()
        config.mqtt.port = port
        config.devices = devices + (0..<100).map { HubConfig.Device(id: "meter-\($0)", driver: "virtual", name: "Meter \($0)", config: "{}") }
        return try await HubService.start(HubServiceOptions(paths: HubPaths(dataDirectory: root + "/hub"), config: config,
                                                            factories: [VirtualDriverFactory()]),
                                          logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() })
    }
}

extension Duration {
    /// The duration in seconds, as a Double (for rates and printed figures).
    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
