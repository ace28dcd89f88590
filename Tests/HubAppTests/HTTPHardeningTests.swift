import Foundation
import HubDomain
import Hummingbird
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

#if canImport(Glibc)
import Glibc
#endif

/// The browser-facing server made safe, over real sockets against a running hub: foreign `Host`
/// names refused before any route runs (DNS rebinding), the security headers on every answer,
/// photos checked as images, honest statuses, and the per-connection deadlines and limit.
@Suite(.serialized) struct HTTPHardeningTests {
    struct ServedHub {
        let service: HubService
        let port: Int
        let registry: PrometheusCollectorRegistry

        static func start(_ adjust: (inout HTTPSettings) -> Void = { _ in }) async throws -> ServedHub {
            var config = HubConfig()
            config.mqtt.enabled = false
            config.beacons = nil
            config.devices = [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp", config: "{}")]
            var options = HubServiceOptions(
                paths: HubPaths(dataDirectory: temporaryDirectory()), config: config,
                factories: [VirtualDriverFactory()])
            let registry = PrometheusCollectorRegistry()
            options.metrics = .prometheus(registry: registry)
            options.metricsRegistry = registry
            var http = HTTPSettings(host: "127.0.0.1", port: 0)
            adjust(&http)
            options.http = http
            let service = try await HubService.start(options, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
            await service.waitUntilRunning()
            guard let port = await service.httpPort() else { throw HubError.failed("the HTTP listener did not start") }
            return ServedHub(service: service, port: port, registry: registry)
        }

        func request(
            _ method: String, _ path: String, host: String? = nil, headers: [String] = [], body: String = ""
        ) async throws -> HTTPProbe.Reply {
            try await HTTPProbe.request(
                port: port, method: method, path: path, headers: (host.map { ["Host: \($0)"] } ?? []) + headers, body: body)
        }

        func exec(_ json: String) async throws {
            let parsed = try CommandJSON.parse(try JSONValue.parse(Array(json.utf8)), now: currentMicros())
            let answer = await service.commands.execute(parsed.command, commandId: parsed.commandId, actor: "cli")
            guard answer.isOK else { throw HubError.failed("\(json): \(answer.execLine.serialized())") }
        }

        var lastSequence: UInt64 { service.hub.store.lastSequence }
    }

    // MARK: DNS rebinding

    /// A DNS-rebinding request: a page of another site whose name now points at 127.0.0.1 asks the hub
    /// to erase an owner's data, and reads an animal's page. Both are refused before any route
    /// runs; nothing is recorded; the same requests with the hub's own names work.
    @Test func theRebindingRequestChangesNothing() async throws {
        let hub = try await ServedHub.start()
        try await hub.exec(
            #"{"command":"admit_animal","id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"#
                + #""beacon":"1de4b189115e45f6b44e5093522699a1","owner_phone":"+351 912 345 678"}"#)
        let before = hub.lastSequence
        let attacker = "rebind.attacker.example:8080"
        let erase = try await hub.request(
            "POST", "/console/command", host: attacker,
            headers: ["Origin: http://\(attacker)", "Content-Type: application/json"],
            body: #"{"command":"erase_owner_data","id":"rex"}"#)
        #expect(erase.status == 421, "\(erase)")
        #expect(erase.body.contains(#""code":"unknown_host""#) && erase.body.contains("DNS rebinding"), "\(erase.body)")
        #expect(hub.lastSequence == before, "the refused request recorded nothing")
        let page = try await hub.request("GET", "/animals/rex", host: attacker)
        #expect(page.status == 421 && !page.body.contains("912"), "\(page)")
        for path in ["/api/animals/rex", "/api/events", "/nowhere", "/healthz"] {
            #expect(try await hub.request("GET", path, host: attacker).status == 421, "\(path)")
        }
        // The hub's own names: loopback addresses and localhost, with or without a port.
        for host in ["127.0.0.1:\(hub.port)", "localhost:\(hub.port)", "LOCALHOST", "[::1]:\(hub.port)", "127.1.2.3", "app.localhost"] {
            #expect(try await hub.request("GET", "/animals/rex", host: host).status == 200, "\(host)")
        }
        // A LAN address is no loopback name either, while bound to loopback.
        #expect(try await hub.request("GET", "/", host: "192.168.1.20:8080").status == 421)
        let erased = try await hub.request(
            "POST", "/console/command", host: "localhost:\(hub.port)",
            headers: ["Origin: http://localhost:\(hub.port)", "Content-Type: application/json"],
            body: #"{"command":"erase_owner_data","id":"rex"}"#)
        #expect(erased.status == 200 && hub.lastSequence > before, "\(erased)")
        try await hub.service.stop()
    }

    @Test func namesInAllowedHostsAreAcceptedAndOthersRefused() async throws {
        let hub = try await ServedHub.start { $0.allowedHosts = ["hub.home.arpa"] }
        #expect(try await hub.request("GET", "/api/devices", host: "hub.home.arpa:\(hub.port)").status == 200)
        #expect(try await hub.request("GET", "/api/devices", host: "HUB.home.arpa.").status == 200)
        let other = try await hub.request("GET", "/api/devices", host: "hub.home.arpa.evil.example")
        #expect(other.status == 421 && other.body.contains("hub.home.arpa"), "\(other)")
        try await hub.service.stop()
    }

    /// Off loopback an address cannot be rebound: any IP literal is accepted, names only when
    /// configured.
    @Test func offLoopbackAddressesAreAcceptedAndNamesMustBeConfigured() {
        var settings = HTTPSettings(host: "0.0.0.0", port: 8080)
        settings.allowedHosts = ["hub.home.arpa"]
        let check = HostCheck(settings: settings)
        for host in ["192.168.1.20:8080", "[fe80::1]:8080", "hub.home.arpa", "localhost:8080"] { #expect(check.accepts(host), "\(host)") }
        for host in ["rebind.attacker.example", "hub.home.arpa:x", "[::1", "a b", ""] { #expect(!check.accepts(host), "\(host)") }
        let loopback = HostCheck(settings: .standard)
        #expect(!loopback.accepts("192.168.1.20") && loopback.accepts("127.0.0.1:8080"))
    }

    @Test func theConfigurationSaysWhichNamesTimeoutsAndLimit() throws {
        func parse(_ text: String) throws -> HubConfig { try HubConfig.parse(try JSONValue.parse(Array(text.utf8))) }
        func problem(_ text: String) -> String {
            do { _ = try parse(text); return "no problem" } catch { return "\(error)" }
        }
        let http = try #require(
            try parse(
                #"{"http":{"allowed_hosts":["Hub.Home.Arpa","10.0.0.2"],"idle_timeout_seconds":5,"#
                    + #""body_timeout_seconds":12.5,"max_connections":64}}"#
            ).http)
        #expect(http.host == "127.0.0.1" && http.port == 8080, "listen defaults to 127.0.0.1:8080")
        #expect(http.allowedHosts == ["hub.home.arpa", "10.0.0.2"])
        #expect(http.idleTimeout == .seconds(5) && http.bodyTimeout == .milliseconds(12_500) && http.maxConnections == 64)
        #expect(
            problem(#"{"http":{"allowed_hosts":["hub.home.arpa:8080"]}}"#).contains(
                "http.allowed_hosts \"hub.home.arpa:8080\" is not a host name"))
        #expect(problem(#"{"http":{"allowed_hosts":["http://hub"]}}"#).contains("http.allowed_hosts"))
        #expect(problem(#"{"http":{"idle_timeout_seconds":0}}"#).contains("http.idle_timeout_seconds must be a number from 1"))
        #expect(problem(#"{"http":{"max_connections":0}}"#).contains("http.max_connections"))
        #expect(problem(#"{"http":{"idle_timeout":5}}"#).contains("unknown key http.idle_timeout"))
    }

    /// A configuration file that gives a key twice is refused, naming where (the last one does not win).
    @Test func aConfigurationKeyGivenTwiceIsRefused() throws {
        let path = temporaryDirectory() + "/hub.json"
        try Data(#"{"http":{"listen":"0.0.0.0:8080","listen":"127.0.0.1:8080"}}"#.utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: HubConfig.Problem.self) { try HubConfig.load(path: path) }
        do { _ = try HubConfig.load(path: path) } catch {
            #expect(
                "\(error)".contains(
                    #"not valid JSON: invalid JSON at byte 33: expected each key once in an object ("listen" is given twice)"#),
                "\(error)")
        }
    }

    // MARK: Headers

    @Test func everyAnswerCarriesTheSecurityHeaders() async throws {
        let hub = try await ServedHub.start()
        let answers = [
            try await hub.request("GET", "/"), try await hub.request("GET", "/api/devices"), try await hub.request("GET", "/nowhere"),
            try await hub.request("GET", "/console/console.js"), try await hub.request("GET", "/", host: "evil.example"),
            try await hub.request("DELETE", "/api/devices"), try await hub.request("GET", "/healthz")
        ]
        for reply in answers {
            let policy = reply.headers["content-security-policy"] ?? ""
            #expect(
                policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'") && !policy.contains("unsafe-inline"),
                "\(reply.status): \(policy)")
            #expect(reply.headers["x-content-type-options"] == "nosniff", "\(reply.status)")
            #expect(reply.headers["x-frame-options"] == "DENY" && reply.headers["referrer-policy"] == "no-referrer", "\(reply.status)")
        }
        // The pages carry no inline script or handler for the policy to forbid.
        let page = try await hub.request("GET", "/")
        #expect(
            page.body.contains(#"<script src="/console/console.js""#) && !page.body.contains("<script>") && !page.body.contains(" onclick=")
        )
        try await hub.service.stop()
    }

    // MARK: Photos

    static let gif: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00,
        0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
        0x02, 0x02, 0x44, 0x01, 0x00, 0x3B
    ]
    static let png: [UInt8] = [
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00,
        0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0xDA, 0x63, 0x64, 0x60, 0xF8, 0x5F, 0x0F, 0x00, 0x02, 0x87, 0x01, 0x80,
        0xEB, 0x47, 0xBA, 0x92, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82
    ]
    /// A 1×1 JPEG: SOI, JFIF, a quantisation table, a frame, a scan and EOI.
    static let jpeg: [UInt8] =
        [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x01, 0x00, 0x48, 0x00, 0x48,
            0x00, 0x00, 0xFF, 0xDB, 0x00, 0x43, 0x00
        ] + Array(repeating: 0x01, count: 64)
        + [
            0xFF, 0xC9, 0x00, 0x0B, 0x08, 0x00, 0x01, 0x00, 0x01, 0x01, 0x01, 0x11, 0x00, 0xFF, 0xCC, 0x00, 0x06, 0x00, 0x10, 0x10, 0x05,
            0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00, 0xD2, 0xCF, 0x20, 0xFF, 0xD9
        ]

    @Test func photosAreReadThroughTheirStructure() {
        #expect(PhotoFormat.problem(Self.gif, type: "image/gif") == nil)
        #expect(PhotoFormat.problem(Self.png, type: "image/png") == nil)
        #expect(PhotoFormat.problem(Self.jpeg, type: "image/jpeg") == nil)
        #expect(PhotoFormat.problem(Self.jpeg + [0xFF, 0xD8, 0x00], type: "image/jpeg") == nil, "a phone's second picture after EOI")
        let polyglot = Array("GIF89a".utf8) + Array("<html><script>alert(document.cookie)</script></html>".utf8)
        #expect(PhotoFormat.problem(polyglot, type: "image/gif") != nil)
        #expect(PhotoFormat.problem(Self.gif + Array("<script>".utf8), type: "image/gif") == "it goes on after the GIF trailer")
        #expect(PhotoFormat.problem(Array(Self.png.dropLast(12)), type: "image/png") == "it has no PNG end (IEND)")
        #expect(PhotoFormat.problem([0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 7, count: 1000), type: "image/jpeg") != nil)
        #expect(PhotoFormat.problem(Array("RIFF\u{4}\0\0\0WEBP".utf8), type: "image/webp") != nil)
    }

    @Test func aPhotoThatIsNotAnImageIsRefusedAndOneThatIsIsServedSandboxed() async throws {
        let hub = try await ServedHub.start()
        let polyglot = Array("GIF89a".utf8) + Array("<html><script>alert(document.cookie)</script></html>".utf8)
        let refused = try await HTTPProbe.post(port: hub.port, path: "/console/photo", contentType: "image/gif", body: polyglot)
        #expect(refused.status == 400 && refused.body.contains("bad_photo") && refused.body.contains("not a image/gif image"), "\(refused)")
        for (type, bytes) in [("image/gif", Self.gif), ("image/png", Self.png), ("image/jpeg", Self.jpeg)] {
            let stored = try await HTTPProbe.post(port: hub.port, path: "/console/photo", contentType: type, body: bytes)
            #expect(stored.status == 200, "\(type): \(stored)")
            let name = try #require(try JSONValue.parse(Array(stored.body.utf8))["photo"]?.stringValue)
            let served = try await hub.request("GET", "/console/photos/" + name)
            #expect(served.status == 200 && served.headers["content-type"] == type)
            #expect(served.headers["x-content-type-options"] == "nosniff")
            #expect(served.headers["content-security-policy"]?.contains("sandbox") == true, "\(served.headers)")
        }
        try await hub.service.stop()
    }

    // MARK: Statuses

    @Test func headWrongMethodsTooLargeAndUnsupportedBodiesAnswerWithTheirStatus() async throws {
        let hub = try await ServedHub.start()
        for path in ["/", "/devices/lamp", "/animals", "/audit", "/discovered", "/api/devices", "/console/events", "/healthz"] {
            let head = try await hub.request("HEAD", path)
            #expect(head.status == 200 && head.body.isEmpty, "HEAD \(path): \(head.status)")
        }
        let put = try await hub.request("PUT", "/api/devices", body: "{}")
        #expect(put.status == 405 && put.headers["allow"] == "GET, HEAD" && put.body.contains("method_not_allowed"), "\(put)")
        let get = try await hub.request("GET", "/api/device/lamp/switch")
        #expect(get.status == 405 && get.headers["allow"] == "POST", "\(get)")
        #expect(try await hub.request("GET", "/api/nowhere").status == 404)

        let before = hub.lastSequence
        let big = #"{"command":"switch","id":"lamp","state":"ON","pad":""# + String(repeating: "x", count: 300 * 1024) + #""}"#
        let tooLarge = try await hub.request("POST", "/console/command", headers: ["Content-Type: application/json"], body: big)
        #expect(
            tooLarge.status == 413 && tooLarge.body.contains("/console/command takes a body of at most 256 KiB"),
            "\(tooLarge.status) \(tooLarge.body)")
        #expect(!tooLarge.body.contains("NIOTooManyBytesError"))
        let apiLarge = try await hub.request(
            "POST", "/api/command", headers: ["Content-Type: application/json"],
            body: String(repeating: " ", count: 70_000) + "{}")
        #expect(apiLarge.status == 413 && apiLarge.body.contains("at most 64 KiB"), "\(apiLarge.status)")
        for type in ["application/xml", "multipart/form-data; boundary=x", "application/x-www-form-urlencoded"] {
            let refused = try await hub.request("POST", "/api/device/lamp/switch", headers: ["Content-Type: \(type)"], body: "ON")
            #expect(refused.status == 415 && refused.body.contains("reads application/json or text/plain"), "\(type): \(refused)")
        }
        let textCommand = try await hub.request(
            "POST", "/api/command", headers: ["Content-Type: text/plain"],
            body: #"{"command":"switch","id":"lamp","state":"ON"}"#)
        #expect(textCommand.status == 415, "\(textCommand)")
        let consoleText = try await hub.request(
            "POST", "/console/command", headers: ["Content-Type: text/plain"],
            body: #"{"command":"switch","id":"lamp","state":"ON"}"#)
        #expect(consoleText.status == 415, "\(consoleText)")
        #expect(hub.lastSequence == before, "nothing refused was recorded")
        let plain = try await hub.request("POST", "/api/device/lamp/switch", headers: ["Content-Type: text/plain"], body: "ON")
        #expect(plain.status == 200, "\(plain)")
        try await hub.service.stop()
    }

    /// A declared length over the limit is refused from the head, at once, and the connection is
    /// closed: the body announced is not waited for.
    @Test func aDeclaredLengthOverTheLimitIsRefusedAtOnce() async throws {
        let hub = try await ServedHub.start()
        let started = ContinuousClock.now
        let reply = try await onOwnThread {
            let fd = try HTTPProbe.connected(port: hub.port)
            defer { close(fd) }
            try HTTPProbe.sendAll(
                fd,
                Array(
                    ("POST /console/command HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        + "Content-Length: 99999999999\r\n\r\n{").utf8))
            return try HTTPProbe.parse(try HTTPProbe.readToEnd(fd))
        }
        #expect(reply.status == 413 && reply.body.contains("this one is 99999999999 bytes"), "\(reply)")
        #expect(ContinuousClock.now - started < .seconds(5), "answered and closed without waiting for the body")
        try await hub.service.stop()
    }

    @Test func pathIdsAreDecodedBeforeTheyAreChecked() async throws {
        let hub = try await ServedHub.start()
        let spaced = try await hub.request("POST", "/api/device/living%20room/switch", headers: ["Content-Type: text/plain"], body: "ON")
        #expect(
            spaced.status == 400 && spaced.body.contains(#"device id \"living room\" contains the character U+0020"#)
                && !spaced.body.contains("%"),
            "\(spaced)")
        let slash = try await hub.request("POST", "/api/device/lamp%2Fswitch/switch", headers: ["Content-Type: text/plain"], body: "ON")
        #expect(slash.status == 400 && slash.body.contains(#"device id \"lamp/switch\" contains the character '/'"#), "\(slash)")
        let badEscape = try await hub.request("GET", "/api/devices/lamp%zz")
        #expect(badEscape.status == 400 && badEscape.body.contains("not valid percent-encoding"), "\(badEscape)")
        let encoded = try await hub.request("GET", "/api/devices/%6Camp")
        #expect(encoded.status == 200 && encoded.body.contains(#""id":"lamp""#), "\(encoded)")
        try await hub.service.stop()
    }

    @Test func aKeyGivenTwiceOverHTTPIsRefusedAndChangesNothing() async throws {
        let hub = try await ServedHub.start()
        let before = hub.lastSequence
        let twice = try await hub.request(
            "POST", "/api/device/lamp/switch", headers: ["Content-Type: application/json"],
            body: #"{"state":"ON","state":"OFF"}"#)
        #expect(twice.status == 400 && twice.body.contains(#"(\"state\" is given twice)"#), "\(twice)")
        let console = try await hub.request(
            "POST", "/console/command", headers: ["Content-Type: application/json"],
            body: #"{"command":"switch","id":"lamp","state":"ON","id":"ghost"}"#)
        #expect(console.status == 400 && console.body.contains("given twice"), "\(console)")
        #expect(hub.lastSequence == before)
        try await hub.service.stop()
    }

    /// A command the log refused because another instance holds the lease: 503, Retry-After, and
    /// the sentence naming the active one.
    @Test func notActiveIsATemporary503() {
        let rejection = Rejection(
            code: CommandService.notActive, message: "not the active hub: instance b holds the lease now; send it again")
        let response = APIResponders.response(.refused(rejection))
        #expect(response.status == .serviceUnavailable)
        #expect(response.headers[.retryAfter] == APIResponders.retryAfterSeconds)
    }

    /// The status comes from the refusal's kind, and the kind from the code: one table, in the
    /// domain, that every surface reads.
    @Test func theStatusFollowsTheRefusalsKind() {
        let cases: [(code: String, kind: RejectionKind, status: Int)] = [
            ("invalid_name", .invalid, 400), ("unknown_device", .notFound, 404), ("unknown_subject", .notFound, 404),
            ("device_exists", .conflict, 409), ("manual_mode", .conflict, 409), ("not_active", .unavailable, 503),
            ("storage_full", .storage, 507), ("internal", .internal, 500)
        ]
        for (code, kind, status) in cases {
            let rejection = Rejection(code: code, message: "m")
            #expect(rejection.kind == kind, "\(code)")
            let response = APIResponders.response(.refused(rejection))
            #expect(response.status.code == status, "\(code)")
            #expect((response.headers[.retryAfter] != nil) == (kind == .unavailable), "\(code)")
        }
        #expect(APIResponders.response(.ok()).status == .ok)
        #expect(APIResponders.response(.refused(RequestError("bad"))).status == .badRequest)
    }

    /// A command not carried out because the log's database cannot be reached: 503 with
    /// `Retry-After: 1` (the hub connects again by itself), over the API and the console alike.
    @Test func logUnavailableIsATemporary503() {
        let rejection = Rejection(
            code: CommandService.logUnavailable,
            message: "the event log cannot be reached: ...; send it again with the same command_id")
        let response = APIResponders.response(.refused(rejection))
        #expect(response.status == .serviceUnavailable)
        #expect(response.headers[.retryAfter] == "1")
        #expect(APIResponders.retryAfter(code: "internal") == nil)
    }

    // MARK: Deadlines and the connection limit

    /// Reads from `fd` until the server closes it; the time it took and what was read.
    static func untilClosed(_ fd: Int32, sending trickle: [UInt8] = [], every: Duration = .milliseconds(100)) -> (Duration, [UInt8]) {
        let started = ContinuousClock.now
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        var next = 0
        while ContinuousClock.now - started < .seconds(20) {
            if next < trickle.count {
                let sent = trickle[next...next].withUnsafeBytes { send(fd, $0.baseAddress, 1, Int32(MSG_NOSIGNAL)) }
                if sent < 0 { break }
                next += 1
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, Int32(every.components.seconds * 1000 + every.components.attoseconds / 1_000_000_000_000_000)) > 0 {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                received += chunk[0..<n]
            }
        }
        return (ContinuousClock.now - started, received)
    }

    @Test func idleSlowHeadAndSlowBodyConnectionsAreCutAndCounted() async throws {
        let hub = try await ServedHub.start {
            $0.idleTimeout = .seconds(1)
            $0.bodyTimeout = .seconds(1)
        }
        let port = hub.port
        let (idle, slowHead, slowBody) = try await onOwnThread {
            let idleFd = try HTTPProbe.connected(port: port)
            defer { close(idleFd) }
            let idle = Self.untilClosed(idleFd)
            // A head sent one byte per 100 ms: it would take 6 s.
            let headFd = try HTTPProbe.connected(port: port)
            defer { close(headFd) }
            let slowHead = Self.untilClosed(
                headFd,
                sending: Array("GET /api/devices HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: \(String(repeating: "a", count: 20))\r\n\r\n".utf8))
            let bodyFd = try HTTPProbe.connected(port: port)
            defer { close(bodyFd) }
            try HTTPProbe.sendAll(
                bodyFd,
                Array("POST /api/command HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{".utf8)
            )
            let slowBody = Self.untilClosed(bodyFd, sending: Array(#""command":"switch","id":"lamp","#.utf8), every: .milliseconds(200))
            return (idle, slowHead, slowBody)
        }
        #expect(idle.0 < .seconds(4) && idle.1.isEmpty, "an idle connection is closed after about 1 s: \(idle.0)")
        #expect(slowHead.0 < .seconds(4) && slowHead.1.isEmpty, "a head sent byte by byte is cut: \(slowHead.0)")
        #expect(slowBody.0 < .seconds(4), "a body sent slowly is cut: \(slowBody.0)")
        let metrics = hub.registry.emitToString()
        #expect(metrics.contains(#"hub_http_connections_cut_total{reason="idle"} 2"#), "\(metrics)")
        #expect(metrics.contains(#"hub_http_connections_cut_total{reason="body"} 1"#))
        // A connection that asks in time is answered and kept open for the next request.
        #expect(try await hub.request("GET", "/api/devices").status == 200)
        #expect(hub.lastSequence > 0)
        try await hub.service.stop()
    }

    @Test func pastTheConnectionLimitANewConnectionWaitsForOneToClose() async throws {
        let hub = try await ServedHub.start {
            $0.maxConnections = 2
            $0.idleTimeout = .seconds(30)
        }
        let port = hub.port
        // Two keep-alive connections, each answered once and left open.
        var open: [Int32] = []
        for _ in 0..<2 {
            let fd = try HTTPProbe.connected(port: port)
            open.append(fd)
            try HTTPProbe.sendAll(fd, Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
            let ready = try await onOwnThread { () -> Int32 in
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                return poll(&poller, 1, 5000)
            }
            #expect(ready == 1, "connection \(open.count) is served")
        }
        let answered = Mutex(false)
        let third = Task {
            try await onOwnThread {
                let reply = try HTTPProbe.blockingGet(port: port, path: "/healthz")
                answered.withLock { $0 = true }
                return reply
            }
        }
        try await Task.sleep(for: .milliseconds(800))
        #expect(!answered.withLock { $0 }, "a third connection is not served while two are open")
        close(open[0])
        let reply = try await third.value
        #expect(reply.status == 200, "answered once a connection closed")
        close(open[1])
        try await hub.service.stop()
    }
}
