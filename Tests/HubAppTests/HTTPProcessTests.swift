import BrokerHarness
import Foundation
import Synchronization
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// `hub run` off loopback as a person runs it: the admin token printed once on the first start,
/// the API closed without it and open with it, and `hub token` to list and rotate.
@Suite(.serialized) struct HTTPProcessTests {
    /// A running `hub run`, its standard output and error collected as they come.
    final class RunningHub: @unchecked Sendable {  // Process is not Sendable; its output is behind the Mutex
        let process: Process
        let collected = Collected()
        final class Collected: Sendable { let text = Mutex((stdout: "", stderr: "")) }

        /// What it wrote so far.
        var output: (stdout: String, stderr: String) { collected.text.withLock { $0 } }

        init(_ arguments: [String]) throws {
            guard let executable = hubExecutable() else { throw HubError.failed("the hub executable must be built (swift build)") }
            let configured = Process()
            configured.executableURL = URL(fileURLWithPath: executable)
            configured.arguments = arguments
            let out = Pipe(), err = Pipe()
            configured.standardOutput = out
            configured.standardError = err
            let collected = self.collected
            out.fileHandleForReading.readabilityHandler = { h in
                let text = String(decoding: h.availableData, as: UTF8.self)
                collected.text.withLock { $0.stdout += text }
            }
            err.fileHandleForReading.readabilityHandler = { h in
                let text = String(decoding: h.availableData, as: UTF8.self)
                collected.text.withLock { $0.stderr += text }
            }
            process = try spawn(configured: configured)
        }

        /// The port from `console and API on http://127.0.0.1:PORT/`, once the hub says it runs.
        func port(timeout: Duration = .seconds(60)) async throws -> Int {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                let err = output.stderr
                if let range = err.range(of: "console and API on http://127.0.0.1:") {
                    let digits = err[range.upperBound...].prefix { $0.isNumber }
                    if let port = Int(digits) { return port }
                }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw HubError.failed("hub run did not say where it serves: \(output)")
        }

        func stop() async throws {
            kill(process.processIdentifier, SIGTERM)
            let deadline = ContinuousClock.now + .seconds(30)
            while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    @Test func offLoopbackTheTokenIsPrintedOnceAndRequired() async throws {
        let dir = temporaryDirectory() + "/data"
        let arguments = ["run", "--data-dir", dir, "--no-mqtt", "--http", "0.0.0.0:0"]
        let first = try RunningHub(arguments)
        let port = try await first.port()
        let stdout = first.output.stdout
        let token = try #require(
            stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
                .first { $0.hasPrefix("hub_") }, "no token on stdout: \(stdout)")

        let refused = try await HTTPProbe.request(port: port, method: "GET", path: "/api/devices")
        #expect(refused.status == 401 && refused.body.contains("unauthorized"), "\(refused)")
        let bearer = "Authorization: Bearer \(token)"
        let added = try await HTTPProbe.request(
            port: port, method: "POST", path: "/api/request/device/add", headers: [bearer],
            body: #"{"id":"lamp","driver":"virtual","name":"Lamp"}"#)
        #expect(added.status == 200 && added.body.contains(#""status":"ok""#), "\(added)")
        let events = try await HTTPProbe.request(port: port, method: "GET", path: "/api/events?after=0", headers: [bearer])
        #expect(events.body.contains(#""type":"DeviceRegistered""#) && events.body.contains(#""actor":"http:admin""#), "\(events.body)")
        #expect(try await HTTPProbe.get(port: port, path: "/healthz").status == 200)
        // Over a real socket the Host header is the request's authority: its own origin is accepted, another refused.
        let sameOrigin = try await HTTPProbe.request(
            port: port, method: "POST", path: "/api/device/lamp/switch",
            headers: [bearer, "Origin: http://127.0.0.1:\(port)"], body: "ON")
        #expect(sameOrigin.status == 200, "\(sameOrigin)")
        let crossSite = try await HTTPProbe.request(
            port: port, method: "POST", path: "/api/device/lamp/switch",
            headers: [bearer, "Origin: http://evil.example"], body: "ON")
        #expect(crossSite.status == 403 && crossSite.body.contains("cross_site"), "\(crossSite)")
        try await first.stop()
        #expect(first.process.terminationStatus == 0, "\(first.output)")

        // The second start makes no token and prints none; the first still works.
        let second = try RunningHub(arguments)
        let port2 = try await second.port()
        #expect(!second.output.stdout.contains("hub_"), "\(second.output)")
        #expect(try await HTTPProbe.request(port: port2, method: "GET", path: "/api/devices", headers: [bearer]).status == 200)
        try await second.stop()

        let listed = try runHub(["token", "list", "--data-dir", dir])
        #expect(listed.status == 0 && listed.stdout.hasPrefix("admin\t") && !listed.stdout.contains("hub_"), "\(listed)")
        let rotated = try runHub(["token", "rotate", "--data-dir", dir])
        let newToken = rotated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(rotated.status == 0 && newToken.hasPrefix("hub_") && newToken != token, "\(rotated)")
        let tokens = AccessTokens(dataDirectory: dir)
        #expect(tokens.name(of: newToken) == "admin" && tokens.name(of: token) == nil)
    }
}
