import Foundation
import HTTPTypes
import HubDomain
import HubLog
import Hummingbird
import HummingbirdTesting
import Logging
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// A real hub (log, drivers, command path; no MQTT) and the HTTP routes it serves, driven through
/// HummingbirdTesting's router client.
struct RouteFixture {
    let service: HubService
    let routes: HubRoutes
    let dataDirectory: String

    /// - Parameters:
    ///   - requireCredential: as when bound off loopback.
    ///   - surface: an MQTT surface to share the answers with (default: none).
    static func start(
        requireCredential: Bool, service: HubService? = nil, dataDirectory: String = temporaryDirectory(),
        auditHeadSeconds: Double? = nil
    ) async throws -> RouteFixture {
        let service =
            if let service { service } else { try await startService(dataDirectory: dataDirectory, auditHeadSeconds: auditHeadSeconds) }
        let routes = HubRoutes(
            hub: service.hub, commands: service.commands, drivers: service.drivers, bridges: service.bridges,
            link: service.surface, dataDirectory: dataDirectory,
            observability: ObservabilityResponders(hub: service.hub, link: service.surface, registry: nil, readiness: Readiness([])),
            requests: service.surface?.requests
                ?? Requests(hub: service.hub, commands: service.commands, drivers: service.drivers, bridges: service.bridges),
            base: service.surface?.topics.base ?? MQTTTopics().base,
            requireCredential: requireCredential, tokens: AccessTokens(dataDirectory: dataDirectory))
        return RouteFixture(service: service, routes: routes, dataDirectory: dataDirectory)
    }

    static func startService(dataDirectory: String, auditHeadSeconds: Double? = nil) async throws -> HubService {
        var config = HubConfig()
        if let auditHeadSeconds { config.auditHeadSeconds = auditHeadSeconds }
        config.mqtt.enabled = false
        config.beacons = nil
        config.devices = [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp", config: "{}")]
        let service = try await HubService.start(
            HubServiceOptions(
                paths: HubPaths(dataDirectory: dataDirectory), config: config,
                factories: [VirtualDriverFactory()]),
            logger: Logger(label: "test") { _ in LineLogHandler(sink: { _ in }) })
        await service.waitUntilRunning()
        return service
    }

    /// Runs `body` against the router (no sockets: HummingbirdTesting's `.router`).
    func test<T: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        try await Application(router: routes.router()).test(.router, body)
    }

    /// The admin token, made as `hub run` makes it off loopback.
    func adminToken() throws -> String {
        try routes.tokens.rotate(name: "admin")
    }

    /// The log's last event of this type (a driver's confirmation may follow the command's own).
    func lastEvent(_ type: String = "SwitchRequested") async throws -> EventRecord {
        var found: EventRecord?
        try await service.hub.store.read(from: 1, through: service.hub.store.lastSequence) { record in
            if record.type == type { found = record }
            return true
        }
        guard let found else { throw HubError.failed("no \(type) in the log") }
        return found
    }

    func stop() async throws { try await service.stop() }
}

extension TestResponse {
    var text: String { String(buffer: body) }
    var json: JSONValue? { try? JSONValue.parse(Array(text.utf8)) }
}

extension HTTPFields {
    /// `Name: value` pairs, for readable tests.
    init(_ pairs: [(String, String)]) {
        self.init()
        for (name, value) in pairs { self.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    }
}

extension ByteBuffer {
    init(text: String) { self.init(string: text) }
}
