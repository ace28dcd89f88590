// swift-tools-version:6.1
import PackageDescription

/// What the TCP drivers and their simulators use of swift-nio.
let nio: [Target.Dependency] = [
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio")
]

let package = Package(
    name: "hub",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hub", targets: ["hub"]),
        // Benchmarks and crash tools: a separate executable, never part of the product.
        .executable(name: "hub-bench", targets: ["hub-bench"])
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Without its ConfigurationSupport trait: the hub reads its own configuration, and swift-configuration
        // would only lengthen every build.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // TLS to PostgreSQL (postgres-nio builds it already; named here because HubPostgres makes its context).
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6")
    ],
    targets: [
        // JSON values, the strict parser and the strict object reader: a leaf, shared by the domain and the driver API.
        .target(name: "HubJSON"),
        // Which hub this is: the release number and the commit it was built from (the BuildCommit plugin).
        .target(name: "HubRelease", plugins: ["BuildCommit"]),
        .plugin(name: "BuildCommit", capability: .buildTool(), path: "Plugins/BuildCommit"),
        // What a reading measures (`Quantity`): one type for the domain and the driver API. No dependencies.
        .target(name: "Quantities"),
        // Pure domain: events, commands, validation, read models. No I/O, no clock; JSON from HubJSON only.
        .target(name: "HubDomain", dependencies: ["HubJSON", "Quantities"]),
        // CRC-32C with the CPU's instructions (SSE4.2 / ARMv8 CRC), used by the log when available.
        .target(name: "CCRC32C"),
        // Names the hub's own threads (the log's writer, the MQTT network threads) for `top -H` and profiles.
        .target(name: "CThreadName"),
        // The append-only event log: storage protocol + segment-file backend.
        .target(
            name: "HubLog",
            dependencies: [
                "CCRC32C", "CThreadName",
                .product(name: "Crypto", package: "swift-crypto")
            ]),
        // The Merkle tree over the log (RFC 9162 hashing), signed tree heads and proofs an outsider checks.
        .target(
            name: "HubAudit",
            dependencies: [
                "HubLog", "HubDomain", "CThreadName",
                .product(name: "Crypto", package: "swift-crypto")
            ]),
        // The event log on PostgreSQL: the same EventStore contract, through postgres-nio.
        .target(
            name: "HubPostgres",
            dependencies: [
                "HubLog",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log")
            ]),
        // What a driver may see and do.
        .target(name: "DriverAPI", dependencies: ["HubJSON", "Quantities"]),
        // Driver plugins: each sees the driver API only.
        .target(name: "VirtualDriver", dependencies: ["DriverAPI"], path: "Plugins/Virtual"),
        // The seed's TCP Wi-Fi power plug: driver, and its device simulator (which shares the driver's
        // public wire format: messages, commands, framer).
        .target(name: "PowerPlug", dependencies: ["DriverAPI"] + nio, path: "Plugins/PowerPlug/Driver"),
        .target(name: "PowerPlugSimulator", dependencies: ["PowerPlug", "DriverAPI"] + nio, path: "Plugins/PowerPlug/Simulator"),
        // TP-Link Kasa plugs on port 9999: driver, and its HS110 simulator (which shares the driver's
        // public cipher and frame decoder).
        .target(
            name: "Kasa",
            dependencies: [
                "DriverAPI", .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto")
            ] + nio, path: "Plugins/Kasa/Driver"),
        .target(
            name: "KasaSimulator", dependencies: ["Kasa", "DriverAPI", .product(name: "NIOHTTP1", package: "swift-nio")] + nio,
            path: "Plugins/Kasa/Simulator"),
        // MQTT-native plugs: Tasmota (driver) and its simulator (an MQTT client).
        .target(name: "Tasmota", dependencies: ["DriverAPI"], path: "Plugins/Tasmota/Driver"),
        .target(name: "TasmotaSimulator", dependencies: ["MQTT"], path: "Plugins/Tasmota/Simulator"),
        // MQTT-native plugs: Shelly Gen1 and Gen2/Gen3 (driver) and its simulator (an MQTT client).
        .target(name: "Shelly", dependencies: ["DriverAPI"], path: "Plugins/Shelly/Driver"),
        .target(name: "ShellySimulator", dependencies: ["MQTT", "HubJSON"], path: "Plugins/Shelly/Simulator"),
        // Zigbee plugs through Zigbee2MQTT (driver) and a bridge simulator (an MQTT client).
        .target(name: "Zigbee2MQTT", dependencies: ["DriverAPI"], path: "Plugins/Zigbee2MQTT/Driver"),
        .target(name: "Zigbee2MQTTSimulator", dependencies: ["MQTT", "HubJSON"], path: "Plugins/Zigbee2MQTT/Simulator"),
        // BLE beacon observations from ESPresense, OpenMQTTGateway and Theengs bridges, and a simulator.
        .target(name: "BeaconBridge", dependencies: ["DriverAPI"], path: "Plugins/BeaconBridge/Bridge"),
        .target(name: "BeaconSimulator", dependencies: ["MQTT"], path: "Plugins/BeaconBridge/Simulator"),
        // System SQLite, used only as the benchmark peer (hub-bench and the tests, never `hub`).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The log benchmark and its peer (SQLite with the same durability promise): hub-bench only.
        .target(name: "HubBench", dependencies: ["HubLog", "HubDomain", "CSQLite"]),
        // System libmosquitto (2.0.x) and the MQTT client built on it.
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        .target(name: "MQTT", dependencies: ["CMosquitto", "CThreadName"]),
        // Test and benchmark helper: runs a private mosquitto broker on a free port (never in `hub`).
        .target(name: "BrokerHarness", path: "Tests/BrokerHarness"),
        // Test support: a private PostgreSQL server (initdb in a temporary directory, a free loopback port).
        .target(name: "PostgresHarness", dependencies: ["BrokerHarness"], path: "Tests/PostgresHarness"),
        // Test support: a small tmpfs of its own, filled to make a real full disk.
        .target(name: "DiskHarness", dependencies: ["BrokerHarness"], path: "Tests/DiskHarness"),
        // Test support: a real headless Chromium driven over the DevTools Protocol on a pipe (Debian's `chromium`).
        .target(name: "BrowserHarness", dependencies: ["HubJSON"], path: "Tests/BrowserHarness"),
        // Test-only helper for MQTT-native drivers and bridges: a DriverMQTT over a real broker, recording contexts.
        .target(name: "DriverTestSupport", dependencies: ["DriverAPI", "MQTT"], path: "Tests/DriverTestSupport"),
        // The history read model's files: fixed-size slots of time-weighted buckets beside the log.
        .target(name: "HubHistory", dependencies: ["HubDomain", "HubLog"]),
        // When activations run: their windows, next edges and overlaps (pure, over HubDomain's types).
        .target(name: "HubSchedule", dependencies: ["HubDomain"]),
        // The hub's own measurements: the metric catalog, their recording through swift-metrics and
        // the Prometheus export.
        .target(
            name: "HubMetrics",
            dependencies: [
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus")
            ]),
        // The engine: the `Hub` actor (log, read models, commands), the command service, household
        // control, the driver and bridge hosts, the scheduler and the transport-neutral request
        // grammar. No HTTP server, no broker client.
        .target(
            name: "HubEngine",
            dependencies: [
                "HubDomain", "HubLog", "HubHistory", "HubSchedule", "HubMetrics", "DriverAPI",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]),
        // The MQTT surface: topics, commands and answers over the broker, the event feed, Home
        // Assistant discovery, and the broker connection shared with MQTT-native drivers.
        .target(
            name: "HubMQTT",
            dependencies: [
                "HubEngine", "HubDomain", "HubLog", "DriverAPI", "MQTT",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]),
        // The HTTP surface: the JSON API and the console, on Hummingbird.
        .target(
            name: "HubHTTP",
            dependencies: [
                "HubEngine", "HubMetrics", "HubDomain", "HubLog", "HubAudit", "HubSchedule", "DriverAPI",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The HTTP listener's per-connection deadlines sit in the channel pipeline.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras")
            ]),
        // The app: composes the engine and its surfaces into one service group; configuration, the
        // log's backend (segment files or PostgreSQL), the hot standby, log transfer and signals.
        .target(
            name: "HubApp",
            dependencies: [
                "HubEngine", "HubMetrics", "HubMQTT", "HubHTTP", "HubDomain", "HubLog", "HubPostgres", "HubAudit", "HubHistory",
                "HubRelease", "DriverAPI", "MQTT",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird")
            ]),
        // What the command-line tools share: one-line messages, the error convention, unbuffered output.
        .target(name: "CLISupport", dependencies: [.product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // The product: the hub, its log tools, and the simulators behind `hub sim` and the demo.
        .executableTarget(
            name: "hub",
            dependencies: [
                "HubEngine", "HubMetrics", "HubHistory", "HubMQTT", "HubHTTP", "HubApp", "HubDomain", "HubLog", "HubAudit", "DriverAPI",
                "HubRelease", "VirtualDriver",
                "PowerPlug", "PowerPlugSimulator", "Kasa", "KasaSimulator", "Shelly", "ShellySimulator",
                "BeaconBridge", "BeaconSimulator", "Tasmota", "TasmotaSimulator", "Zigbee2MQTT", "Zigbee2MQTTSimulator", "MQTT",
                "CLISupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus")
            ]),
        // Benchmarks (log, mqtt, plugs, beacons) with their peers, and the crash test's writer. The
        // benchmarks that run the hub as a process launch the `hub` built beside it.
        .executableTarget(
            name: "hub-bench",
            dependencies: [
                "HubEngine", "HubHistory", "HubMQTT", "HubHTTP", "HubApp", "HubDomain", "HubLog", "HubPostgres", "HubBench", "HubAudit",
                "DriverAPI", "VirtualDriver", "PowerPlug", "PowerPlugSimulator", "Kasa", "KasaSimulator",
                "BeaconSimulator", "MQTT", "BrokerHarness", "CLISupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log")
            ]),
        .testTarget(name: "HubJSONTests", dependencies: ["HubJSON"]),
        .testTarget(name: "HubDomainTests", dependencies: ["HubDomain"]),
        .testTarget(name: "HubLogTests", dependencies: ["HubLog", "DiskHarness"]),
        .testTarget(name: "HubAuditTests", dependencies: ["HubAudit", "HubLog"]),
        .testTarget(
            name: "HubBenchTests",
            dependencies: ["HubBench", "HubLog", "HubEngine", "HubHistory", "HubMQTT", "HubHTTP", "HubApp", "HubDomain", "BrokerHarness"]),
        .testTarget(
            name: "HubAppTests",
            dependencies: [
                "HubEngine", "HubMetrics", "HubHistory", "HubSchedule", "HubMQTT", "HubHTTP", "HubApp", "HubDomain", "HubLog", "HubAudit",
                "DriverAPI", "HubRelease",
                "VirtualDriver",
                "PowerPlug", "PowerPlugSimulator", "Kasa", "KasaSimulator",
                "MQTT", "BrokerHarness", "DiskHarness",
                "Shelly", "ShellySimulator", "BeaconBridge", "BeaconSimulator", "Tasmota", "TasmotaSimulator",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The HTTP route tests hand requests to the router themselves (HTTPRouteSupport), so no
                // HummingbirdTesting and none of the HTTP client it brings.
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio")
            ]),
        .testTarget(
            name: "HubPostgresTests",
            dependencies: [
                "HubPostgres", "HubLog", "HubEngine", "HubHistory", "HubMQTT", "HubHTTP", "HubApp", "HubDomain", "PostgresHarness",
                "BrokerHarness", "MQTT"
            ]),
        // The console as a person uses it: a real hub process, a real broker, a real Chromium.
        .testTarget(name: "BrowserTests", dependencies: ["BrowserHarness", "BrokerHarness", "HubJSON"]),
        .testTarget(name: "MQTTTests", dependencies: ["MQTT", "BrokerHarness"]),
        .testTarget(
            name: "PowerPlugTests",
            dependencies: [
                "PowerPlug", "PowerPlugSimulator", "DriverAPI", "DriverTestSupport", .product(name: "NIOEmbedded", package: "swift-nio")
            ]),
        .testTarget(name: "KasaTests", dependencies: ["Kasa", "KasaSimulator", "DriverAPI", "DriverTestSupport"]),
        .testTarget(
            name: "TasmotaTests", dependencies: ["Tasmota", "TasmotaSimulator", "DriverAPI", "DriverTestSupport", "BrokerHarness", "MQTT"]),
        .testTarget(
            name: "ShellyTests", dependencies: ["Shelly", "ShellySimulator", "DriverAPI", "MQTT", "BrokerHarness", "DriverTestSupport"]),
        .testTarget(
            name: "Zigbee2MQTTTests",
            dependencies: ["Zigbee2MQTT", "Zigbee2MQTTSimulator", "DriverAPI", "MQTT", "BrokerHarness", "DriverTestSupport"]),
        .testTarget(
            name: "BeaconBridgeTests",
            dependencies: ["BeaconBridge", "BeaconSimulator", "DriverAPI", "MQTT", "BrokerHarness", "DriverTestSupport"])
    ],
    swiftLanguageModes: [.v6]
)
