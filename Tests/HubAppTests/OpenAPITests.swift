import Foundation
import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

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
        let registered = Set(
            hub.routes.router().routes
                .filter { route in
                    Self.documented.contains {
                        route.path.description == $0 || (($0.hasSuffix("/")) && route.path.description.hasPrefix($0))
                    }
                }
                .map { "\($0.method.rawValue) \($0.path.description)" })
        try await hub.stop()
        #expect(registered.count >= 40)
        #expect(registered.subtracting(described).sorted() == [], "served but not in docs/openapi.json")
        #expect(described.subtracting(registered).sorted() == [], "in docs/openapi.json but not served")
    }

    /// A client generated from the contract sends what the hub takes: every API body has a real
    /// schema (its keys, the required ones, no others) for exactly the types the route reads,
    /// history's parameters are required, and every refusal the server may answer is described.
    @Test func theContractIsStrict() throws {
        let document = try Self.openAPI()
        guard case .object(let paths)? = document["paths"] else { Issue.record("no paths"); return }
        let routes = Dictionary(APIRoutes.all.map { ("\($0.method.rawValue.lowercased()) \($0.path)", $0) }) { a, _ in a }
        var bodies = 0
        for (path, operations) in paths where path.hasPrefix("/api/") {
            guard case .object(let methods) = operations else { continue }
            for (method, operation) in methods {
                // The audit's routes read the audit files, not the command path (AuditRoutes): GETs without a body.
                let route = path.hasPrefix("/api/audit/") ? nil : try #require(routes["\(method) \(path)"], "\(method) \(path)")
                let statuses = operation["responses"]?.objectValue?.map(\.0) ?? []
                for status in ["400", "405", "421"] { #expect(statuses.contains(status), "\(method) \(path) \(status)") }
                guard method == "post", let route else { continue }
                for status in ["413", "415", "503"] { #expect(statuses.contains(status), "\(method) \(path) \(status)") }
                let content = try #require(operation["requestBody"]?["content"]?.objectValue, "\(method) \(path) has no body")
                #expect(content.map(\.0).sorted() == route.mediaTypes.sorted(), "\(path): \(content.map(\.0))")
                let schema = try #require(content.first { $0.0 == "application/json" }?.1["schema"])
                if let reference = schema["$ref"]?.stringValue {
                    #expect(reference == "#/components/schemas/Command", "\(path)")
                    continue
                }
                #expect(schema["additionalProperties"] == .bool(false), "\(path): \(schema.serialized().prefix(80))")
                let keys = Set(schema["properties"]?.objectValue?.map(\.0) ?? [])
                let topic: String? =
                    if case .request(let t) = route.target, t.hasPrefix("request/") { String(t.dropFirst("request/".count)) } else { nil }
                if let topic, let known = RequestParser.requestKeys[topic] {
                    #expect(keys == Set(known), "\(path): \(keys.sorted()) against \(known.sorted())")
                }
                bodies += 1
            }
        }
        #expect(bodies >= 25)
        let history = try #require(paths.first { $0.0 == "/api/history" }?.1["get"]?["parameters"]?.arrayValue)
        #expect(history.count == 5 && history.allSatisfy { $0["required"] == .bool(true) })
    }

    @Test func everyMQTTRequestHasItsRoute() {
        let paths = Set(APIRoutes.all.map(\.path))
        for name in RequestParser.requestNames { #expect(paths.contains("/api/request/" + name), "\(name)") }
    }
}
