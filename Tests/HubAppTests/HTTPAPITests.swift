import BrokerHarness
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

/// The JSON API: the MQTT surface's requests and commands, parsed and answered by the same code,
/// with a status that says the outcome.
@Suite(.serialized) struct HTTPAPITests {
    @Test func aCommandIsAnsweredOKAndLoggedWithTheRequestsActor() async throws {
        let hub = try await RouteFixture.start(requireCredential: false)
        try await hub.test { client in
            let body = #"{"id":"fan","driver":"virtual","name":"Fan","transaction":"t-1"}"#
            try await client.execute(uri: "/api/request/device/add", method: .post, body: ByteBuffer(text: body)) { response in
                #expect(response.status == .ok, "\(response.text)")
                #expect(response.json?["status"] == "ok" && response.json?["id"] == "fan" && response.json?["transaction"] == "t-1")
                #expect(response.headers[.contentType] == "application/json")
            }
            try await client.execute(uri: "/api/devices/fan", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.json?["data"]?["name"] == "Fan", "\(response.text)")
            }
            try await client.execute(
                uri: "/api/command", method: .post,
                body: ByteBuffer(text: #"{"command":"record_reading","device":"fan","quantity":"power","value":"7.25"}"#)
            ) { response in
                #expect(response.status == .ok, "\(response.text)")
            }
        }
        #expect(try await hub.lastEvent("DeviceRegistered").causation.actor == "http:local")
        #expect(try await hub.lastEvent("ReadingRecorded").causation.actor == "http:local")
        try await hub.stop()
    }

    @Test func aDeclaredCauseIsLoggedBesideTheRequestsActor() async throws {
        let hub = try await RouteFixture.start(requireCredential: false)
        try await hub.test { client in
            try await client.execute(
                uri: "/api/request/device/add", method: .post, body: ByteBuffer(text: #"{"id":"fan","driver":"virtual","name":"Fan"}"#)
            ) { response in #expect(response.status == .ok, "\(response.text)") }
            try await client.execute(
                uri: "/api/device/fan/switch", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(text: #"{"state":"ON","cause":"automation.fan_on"}"#)
            ) { response in #expect(response.status == .ok, "\(response.text)") }
            try await client.execute(
                uri: "/api/device/fan/switch", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(text: #"{"state":"ON","cause":"fan on"}"#)
            ) { response in
                #expect(response.status == .badRequest && response.json?["code"] == "invalid_cause", "\(response.text)")
            }
        }
        #expect(try await hub.lastEvent("SwitchRequested").causation.actor == "http:local#automation.fan_on")
        try await hub.stop()
    }

    @Test func refusalsCarryTheirCodeAndAStatusThatSaysIt() async throws {
        let hub = try await RouteFixture.start(requireCredential: false)
        try await hub.test { client in
            for (uri, body, status, code) in [
                ("/api/device/ghost/switch", "ON", HTTPResponse.Status.notFound, "unknown_device"),
                ("/api/request/device/add", #"{"id":"lamp","driver":"virtual","name":"Again"}"#, .conflict, "device_exists"),
                ("/api/request/device/add", #"{"id":"x y","driver":"virtual","name":"Bad"}"#, .badRequest, "invalid_id")
            ] {
                try await client.execute(uri: uri, method: .post, body: ByteBuffer(text: body)) { response in
                    #expect(response.status == status, "\(uri): \(response.text)")
                    #expect(response.json?["code"] == .string(code), "\(uri): \(response.text)")
                }
            }
            try await client.execute(uri: "/api/devices/ghost", method: .get) { response in
                #expect(response.status == .notFound)
                #expect(response.json?["code"] == "unknown_device")
            }
            try await client.execute(uri: "/api/nothing-here", method: .get) { #expect($0.status == .notFound) }
        }
        try await hub.stop()
    }

    /// The same bad payloads on MQTT (a real broker and the hub's surface) and on HTTP: the same answer, byte for byte.
    @Test func malformedPayloadsGetTheSameAnswerAsOnMQTT() async throws {
        let surface = try await SurfaceFixture.start()
        let hub = try await RouteFixture.start(requireCredential: false, service: surface.service, dataDirectory: surface.dataDirectory)
        let cases: [(topic: String, uri: String, payload: String)] = [
            ("hub/request/device/add", "/api/request/device/add", #"{"id":"fan","colour":"red"}"#),
            ("hub/request/device/add", "/api/request/device/add", #"{"id":"fan","#),
            ("hub/device/lamp/switch/set", "/api/device/lamp/switch", "BRIGHT"),
            ("hub/device/lamp/switch/set", "/api/device/lamp/switch", ""),
            ("hub/device/a.b/switch/set", "/api/device/a.b/switch", "ON"),
            (
                "hub/request/history", "/api/request/history",
                #"{"subject":"device/lamp","quantity":"power","from":"x","to":"y","bucket":"1h"}"#
            )
        ]
        for c in cases {
            let responseTopic =
                c.topic.hasPrefix("hub/request/")
                ? "hub/response/" + c.topic.dropFirst("hub/request/".count)
                : c.topic.replacingOccurrences(of: "hub/", with: "hub/response/")
            surface.watcher.received.messages.withLock { $0.removeAll() }
            try surface.watcher.publish(c.topic, bytes: Array(c.payload.utf8))
            let overMQTT = try await surface.watcher.waitFor(responseTopic)
            let overHTTP = try await hub.test { client in
                try await client.execute(uri: c.uri, method: .post, body: ByteBuffer(text: c.payload)) { response in
                    #expect(response.status == .badRequest, "\(c.uri): \(response.text)")
                    return response.text.trimmingCharacters(in: .newlines)
                }
            }
            #expect(overHTTP == overMQTT, "\(c.topic) \(c.payload.prefix(40))")
        }
        // Larger than a message may be: MQTT says so on the response topic; HTTP refuses it as 413
        // without reading it, in its own sentence.
        try await hub.test { client in
            try await client.execute(
                uri: "/api/request/all-off", method: .post, body: ByteBuffer(text: String(repeating: " ", count: 70_000))
            ) { response in
                #expect(response.status == .contentTooLarge)
                #expect(
                    response.text.contains("/api/request/all-off takes a body of at most 64 KiB; this one is 70000 bytes"),
                    "\(response.text)")
            }
        }
        try await surface.stop()
    }

    @Test func historyAndEventsAreReadWithGET() async throws {
        let hub = try await RouteFixture.start(requireCredential: false)
        try await hub.test { client in
            try await client.execute(
                uri: "/api/command", method: .post,
                body: ByteBuffer(
                    text:
                        #"{"command":"record_reading","device":"lamp","quantity":"power","value":"40","measured_at":"2026-11-20T10:15:00Z"}"#
                )
            ) {
                #expect($0.status == .ok, "\($0.text)")
            }
            let query = "subject=device/lamp&quantity=power&from=2026-11-20T00:00:00Z&to=2026-11-21T00:00:00Z&bucket=1h"
            try await client.execute(uri: "/api/history?" + query, method: .get) { response in
                #expect(response.status == .ok, "\(response.text)")
                let buckets = (response.json?["data"]?.arrayValue ?? []).filter { $0["count"] != .number(0) }
                #expect(buckets.count == 1 && buckets.first?["max"] == .number(40), "\(response.text)")
            }
            try await client.execute(uri: "/api/history?subject=device/lamp&quantity=power", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.text.contains(#"\"from\": is required"#) || response.text.contains("from"), "\(response.text)")
            }
            try await client.execute(uri: "/api/devices?colour=red", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.text.contains("colour"), "\(response.text)")
            }
            try await client.execute(uri: "/api/events?after=0&limit=2", method: .get) { response in
                #expect(response.status == .ok)
                let events = response.json?["data"]?.arrayValue ?? []
                #expect(events.count == 2 && events.first?["seq"] == .number(1), "\(response.text)")
            }
            try await client.execute(uri: "/api/events?limit=5000", method: .get) { response in
                #expect(response.status == .badRequest)
                #expect(response.text.contains("limit: expected a number from 1 to 1000"), "\(response.text)")
            }
        }
        try await hub.stop()
    }
}
