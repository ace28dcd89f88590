import Foundation
import HTTPTypes
import HubDomain
import Hummingbird
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

#if canImport(Glibc)
import Glibc
#endif

/// Who may use the HTTP listener (``HTTPAccess``): loopback free, a token or a session cookie
/// otherwise, cross-site requests refused, and the actor recorded on the log.
@Suite(.serialized) struct HTTPAccessTests {
    /// The router client (``RouterClient``) asks for `localhost` (the request's authority, which is
    /// where a real HTTP/1.1 Host header goes too: HTTPProcessTests checks that over a socket).
    static let host = ("Host", "localhost")

    @Test func onLoopbackNoCredentialIsNeededAndTheActorIsLocal() async throws {
        let hub = try await RouteFixture.start(requireCredential: false)
        try await hub.test { client in
            try await client.execute(uri: "/api/devices", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/api/device/lamp/switch", method: .post, body: ByteBuffer(text: "ON")) { response in
                #expect(response.status == .ok, "\(response.text)")
            }
        }
        let event = try await hub.lastEvent()
        #expect(event.causation.actor == "http:local", "\(event.type) by \(event.causation.actor)")
        try await hub.stop()
    }

    @Test func offLoopbackTheAPIAnswers401WithoutATokenAnd200WithIt() async throws {
        let hub = try await RouteFixture.start(requireCredential: true)
        let token = try hub.adminToken()
        try await hub.test { client in
            try await client.execute(uri: "/api/devices", method: .get) { response in
                #expect(response.status == .unauthorized)
                #expect(response.json?["code"] == "unauthorized", "\(response.text)")
                #expect(response.headers[.wwwAuthenticate] == #"Bearer realm="hub""#)
            }
            try await client.execute(uri: "/api/devices", method: .get, headers: [.authorization: "Bearer wrong"]) { response in
                #expect(response.status == .unauthorized)
                #expect(response.text.contains("not one of this hub's tokens"), "\(response.text)")
            }
            try await client.execute(uri: "/api/devices", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                #expect(response.status == .ok)
                #expect(response.json?["data"]?.arrayValue?.count == 1, "\(response.text)")
            }
            // /metrics needs the credential too (this fixture collects none: 404 once past access).
            try await client.execute(uri: "/metrics", method: .get) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(token)"]) {
                #expect($0.status == .notFound)
            }
            // Probes stay open.
            try await client.execute(uri: "/healthz", method: .get) { #expect($0.status == .ok) }
            try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .ok) }
            try await client.execute(
                uri: "/api/device/lamp/switch", method: .post,
                headers: [.authorization: "Bearer \(token)"], body: ByteBuffer(text: "ON")
            ) { #expect($0.status == .ok) }
        }
        #expect(try await hub.lastEvent().causation.actor == "http:admin")
        try await hub.stop()
    }

    @Test func aBrowserAskingForAPageIsSentToTheLoginPage() async throws {
        let hub = try await RouteFixture.start(requireCredential: true)
        try await hub.test { client in
            try await client.execute(uri: "/devices?x=1", method: .get, headers: [.accept: "text/html,application/xhtml+xml"]) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "/login?next=/devices%3Fx%3D1")
            }
            try await client.execute(uri: "/login", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.text.contains(#"<form method="post" action="/login">"#))
            }
        }
        try await hub.stop()
    }

    @Test func loginSetsASessionCookieAndCookieRequestsNeedTheCSRFHeader() async throws {
        let hub = try await RouteFixture.start(requireCredential: true)
        let token = try hub.adminToken()
        try await hub.test { client in
            try await client.execute(
                uri: "/login", method: .post, headers: HTTPFields([Self.host]),
                body: ByteBuffer(text: "token=wrong&next=%2Fdevices")
            ) { response in
                #expect(response.status == .unauthorized)
                #expect(response.headers[values: .setCookie].isEmpty)
            }
            let cookies = try await client.execute(
                uri: "/login", method: .post, headers: HTTPFields([Self.host]),
                body: ByteBuffer(text: "token=\(token)&next=%2Fdevices")
            ) { response in
                #expect(response.status == .seeOther)
                #expect(response.headers[.location] == "/devices")
                return response.headers[values: .setCookie]
            }
            let session = try #require(cookies.first { $0.hasPrefix("hub_session=") })
            let csrfCookie = try #require(cookies.first { $0.hasPrefix("hub_csrf=") })
            #expect(session.contains("HttpOnly") && session.contains("SameSite=Strict"), "\(session)")
            #expect(!csrfCookie.contains("HttpOnly") && csrfCookie.contains("SameSite=Strict"), "\(csrfCookie)")
            let sessionPair = String(session.prefix { $0 != ";" }), csrfPair = String(csrfCookie.prefix { $0 != ";" })
            let csrf = String(csrfPair.dropFirst("hub_csrf=".count))
            let cookie = "\(sessionPair); \(csrfPair)"

            try await client.execute(uri: "/api/devices", method: .get, headers: [.cookie: cookie]) { #expect($0.status == .ok) }
            try await client.execute(
                uri: "/api/device/lamp/switch", method: .post, headers: HTTPFields([Self.host, ("Cookie", cookie)]),
                body: ByteBuffer(text: "ON")
            ) { response in
                #expect(response.status == .forbidden)
                #expect(response.json?["code"] == "csrf" && response.text.contains("X-CSRF-Token"), "\(response.text)")
            }
            try await client.execute(
                uri: "/api/device/lamp/switch", method: .post,
                headers: HTTPFields([Self.host, ("Cookie", cookie), ("X-CSRF-Token", "not-it")]),
                body: ByteBuffer(text: "ON")
            ) { #expect($0.status == .forbidden) }
            try await client.execute(
                uri: "/api/device/lamp/switch", method: .post,
                headers: HTTPFields([Self.host, ("Cookie", cookie), ("X-CSRF-Token", csrf)]),
                body: ByteBuffer(text: "ON")
            ) { response in
                #expect(response.status == .ok, "\(response.text)")
            }
            #expect(try await hub.lastEvent().causation.actor == "http:admin")

            // Rotating the token ends the session and refuses the old token.
            _ = try hub.adminToken()
            try await client.execute(uri: "/api/devices", method: .get, headers: [.cookie: cookie]) { #expect($0.status == .unauthorized) }
            try await client.execute(uri: "/api/devices", method: .get, headers: [.authorization: "Bearer \(token)"]) {
                #expect($0.status == .unauthorized)
            }
        }
        try await hub.stop()
    }

    @Test(arguments: [false, true])
    func crossSiteRequestsAreRefusedEvenWithAValidToken(requireCredential: Bool) async throws {
        let hub = try await RouteFixture.start(requireCredential: requireCredential)
        let token = try hub.adminToken()
        let bearer = ("Authorization", "Bearer \(token)")
        try await hub.test { client in
            for headers in [
                [Self.host, bearer, ("Origin", "http://evil.example")], [Self.host, bearer, ("Origin", "null")],
                [Self.host, bearer, ("Sec-Fetch-Site", "cross-site")]
            ] {
                try await client.execute(
                    uri: "/api/device/lamp/switch", method: .post, headers: HTTPFields(headers),
                    body: ByteBuffer(text: "ON")
                ) { response in
                    #expect(response.status == .forbidden, "\(headers)")
                    #expect(
                        response.json?["code"] == "cross_site" && response.text.contains("cross-site request refused"), "\(response.text)")
                }
            }
            // The hub's own page: same origin, a bearer needs no CSRF header.
            try await client.execute(
                uri: "/api/device/lamp/switch", method: .post,
                headers: HTTPFields([Self.host, bearer, ("Origin", "http://localhost"), ("Sec-Fetch-Site", "same-origin")]),
                body: ByteBuffer(text: "ON")
            ) { #expect($0.status == .ok, "\($0.text)") }
        }
        #expect(hub.service.hub.store.lastSequence > 0)
        try await hub.stop()
    }

    @Test func theTokenFileIsPrivateAndHoldsNoToken() throws {
        let directory = temporaryDirectory()
        let tokens = AccessTokens(dataDirectory: directory)
        let first = try #require(try tokens.ensureOne())
        #expect(try tokens.ensureOne() == nil, "a second start makes no new token")
        #expect(first.hasPrefix("hub_") && first.count == 47)
        var info = stat()
        #expect(stat(tokens.path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        let text = try String(contentsOfFile: tokens.path, encoding: .utf8)
        #expect(!text.contains(first.dropFirst(4)))
        #expect(tokens.name(of: first) == "admin")
        let second = try tokens.rotate(name: "admin")
        #expect(tokens.name(of: first) == nil && tokens.name(of: second) == "admin")
        #expect(try tokens.entries().map(\.name) == ["admin"])
        #expect(throws: HubError.self) { try tokens.rotate(name: "no spaces") }
    }
}
