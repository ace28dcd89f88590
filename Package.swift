// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "hub",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "hub", targets: ["hub"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // Pure domain: events, commands, validation, read models. No I/O, no clock, no dependencies.
        .target(name: "HubDomain"),
        // The append-only event log: storage protocol + segment-file backend.
        .target(name: "HubLog", dependencies: [
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // What a driver may see and do.
        .target(name: "DriverAPI"),
        // System SQLite, used only as the benchmark peer.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The log benchmark and its peer (SQLite with the same durability promise).
        .target(name: "HubBench", dependencies: ["HubLog", "CSQLite"]),
        // Command handling, projections, replay, import/export.
        .target(name: "HubRuntime", dependencies: [
            "HubDomain", "HubLog", "DriverAPI",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "hub", dependencies: [
            "HubRuntime", "HubDomain", "HubLog", "HubBench",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "HubDomainTests", dependencies: ["HubDomain"]),
        .testTarget(name: "HubLogTests", dependencies: ["HubLog"]),
        .testTarget(name: "HubBenchTests", dependencies: ["HubBench", "HubLog"]),
        .testTarget(name: "HubRuntimeTests", dependencies: ["HubRuntime", "HubDomain", "HubLog"]),
    ],
    swiftLanguageModes: [.v6]
)
