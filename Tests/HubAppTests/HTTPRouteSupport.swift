import Foundation
import HTTPTypes
import HubDomain
import HubLog
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// A real hub (log, drivers, command path; no MQTT) and the HTTP routes it serves, each request
/// handed to the router as the listener hands it (``RouterClient``; the live listener is
/// exercised by the process, browser and OpenAPI tests).
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

    /// Runs `body` against the router (no sockets).
    func test<T: Sendable>(_ body: @Sendable (RouterClient) async throws -> T) async throws -> T {
        try await body(RouterClient(responder: routes.router().buildResponder()))
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

/// Sends a request straight to the router's responder, as the HTTP listener would after parsing
/// it, and collects the whole response.
struct RouterClient: Sendable {
    let responder: RouterResponder<HubRequestContext>

    struct Response: Sendable {
        let head: HTTPResponse
        let body: ByteBuffer
        var status: HTTPResponse.Status { head.status }
        var headers: HTTPFields { head.headerFields }
        var text: String { String(buffer: body) }
        var json: JSONValue? { try? JSONValue.parse(Array(text.utf8)) }
    }

    func execute<Return>(
        uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil,
        testCallback: (Response) throws -> Return
    ) async throws -> Return {
        var headers = headers
        if let body { headers[.contentLength] = String(body.readableBytes) }
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: uri, headerFields: headers),
            body: RequestBody(buffer: body ?? ByteBuffer()))
        let context = HubRequestContext(source: .init(channel: EmbeddedChannel(), logger: Logger(label: "test")))
        let response: Hummingbird.Response
        do { response = try await responder.respond(to: request, context: context) } catch {
            response = Hummingbird.Response(status: .internalServerError)
        }
        let collected = Collector()
        let head = response.head
        try await response.body.write(collected)
        return try testCallback(Response(head: head, body: collected.buffer.withLockedValue { $0 }))
    }

    /// Keeps what the response body writes.
    final class Collector: ResponseBodyWriter, Sendable {
        let buffer = NIOLockedValueBox(ByteBuffer())
        func write(_ buffer: ByteBuffer) async throws { self.buffer.withLockedValue { $0.writeImmutableBuffer(buffer) } }
        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
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
