import Foundation
import HubDomain
import Testing
@testable import HubRuntime

/// docs/openapi.json describes exactly the routes the server registers: the API's, sign-in and the
/// observability endpoints (the console's pages are not API and are left out).
@Suite struct OpenAPITests {
    static let documented: [String] = ["/api/", "/login", "/logout", "/metrics", "/healthz", "/readyz"]

    static func openAPI() throws -> JSONValue {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let data = try Data(contentsOf: root.appendingPathComponent("docs/openapi.json"))
        return try JSONValue.parse(Array(data))
    }

    @Test func theOpenAPIFileAndTheRouterAgreeInBothDirections() async throws {
        let document = try Self.openAPI()
        #expect(document["openapi"]?.stringValue?.hasPrefix("3.1") == true)
        guard case .object(let paths)? = document["paths"] else { Issue.record("no paths"); return }
        var described: Set<String> = []
        for (path, operations) in paths {
            guard case .object(let methods) = operations else { continue }
            for (method, _) in methods { described.insert("\(method.uppercased()) \(path)") }
        }
        let hub = try await RouteFixture.start(requireCredential: false)
        let registered = Set(hub.routes.router().routes
            .filter { route in Self.documented.contains { route.path.description == $0 || (($0.hasSuffix("/")) && route.path.description.hasPrefix($0)) } }
            .map { "\($0.method.rawValue) \($0.path.description)" })
        try await hub.stop()
        #expect(registered.count >= 40)
        #expect(registered.subtracting(described).sorted() == [], "served but not in docs/openapi.json")
        #expect(described.subtracting(registered).sorted() == [], "in docs/openapi.json but not served")
    }

    @Test func everyMQTTRequestHasItsRoute() {
        let paths = Set(APIRoutes.all.map(\.path))
        for name in MQTTCommands.requestNames { #expect(paths.contains("/api/request/" + name), "\(name)") }
    }
}
