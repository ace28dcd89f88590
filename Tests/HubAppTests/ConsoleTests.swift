import BrokerHarness
import Foundation
import HubDomain
import HubLog
import Logging
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The console served by a real hub (real listener, real TCP requests, a real broker where MQTT is
/// the point): every page renders with a household like the demo's, text is escaped, actions go
/// through the one command path with the request's actor, live updates arrive, photos are bounded.
@Suite(.serialized) struct ConsoleTests {
    struct ConsoleHub {
        let service: HubService
        let port: Int
        let dataDirectory: String

        static func start(brokerPort: Int? = nil, devices: [HubConfig.Device] = ConsoleTests.household) async throws -> ConsoleHub {
            let dataDirectory = temporaryDirectory()
            var config = HubConfig()
            if let brokerPort {
                config.mqtt.port = brokerPort
                config.mqtt.clientId = "hub-under-test"
            } else {
                config.mqtt.enabled = false
            }
            config.devices = devices
            config.beacons = nil
            var options = HubServiceOptions(
                paths: HubPaths(dataDirectory: dataDirectory), config: config, factories: [VirtualDriverFactory()])
            options.http = HTTPSettings(host: "127.0.0.1", port: 0)
            let service = try await HubService.start(options, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
            await service.waitUntilRunning()
            guard let port = await service.httpPort() else { throw HubError.failed("the HTTP listener did not start") }
            return ConsoleHub(service: service, port: port, dataDirectory: dataDirectory)
        }

        func get(_ path: String) async throws -> HTTPProbe.Reply { try await HTTPProbe.get(port: port, path: path) }
        func post(_ path: String, _ json: String) async throws -> HTTPProbe.Reply {
            try await HTTPProbe.post(port: port, path: path, json: json)
        }

        /// The records of the log (all of them: the tests' logs are small).
        func records() async throws -> [EventRecord] {
            var out: [EventRecord] = []
            try await service.hub.store.read(from: 1, through: service.hub.store.lastSequence) {
                out.append($0); return true
            }
            return out
        }

        /// Runs commands as `hub exec` would (actor `cli`), to set up the household.
        func exec(_ json: String) async throws {
            let parsed = try CommandJSON.parse(try JSONValue.parse(Array(json.utf8)), now: currentMicros())
            let answer = await service.commands.execute(parsed.command, commandId: parsed.commandId, actor: "cli")
            guard answer.isOK else { throw HubError.failed("\(json): \(answer.execLine.serialized())") }
        }
    }

    static let household = [
        HubConfig.Device(id: "lamp", driver: "virtual", name: "Living-room lamp", config: "{}"),
        HubConfig.Device(id: "kettle", driver: "virtual", name: "Kettle", config: "{}"),
        HubConfig.Device(id: "heater", driver: "virtual", name: "Heater", config: "{}")
    ]

    /// Groups, a scene, readings, an activation and an admitted animal with owner data, as the demo has.
    func furnish(_ hub: ConsoleHub) async throws {
        try await hub.exec(#"{"command":"define_group","id":"kitchen","name":"Kitchen","members":["kettle","lamp"]}"#)
        try await hub.exec(#"{"command":"define_scene","id":"evening","name":"Evening","states":{"lamp":"ON","heater":"OFF"}}"#)
        try await hub.exec(#"{"command":"record_reading","device":"kettle","quantity":"power","value":1850.5}"#)
        try await hub.exec(#"{"command":"record_reading","device":"kettle","quantity":"energy","value":1200}"#)
        let hour = (Int64(Date().timeIntervalSince1970) / 3600 + 1) * 3600
        try await hub.exec(
            #"{"command":"set_activation","device":"heater","op":"add","name":"morning","start":\#(hour),"length":60,"period":1440}"#)
        try await hub.exec(
            #"{"command":"set_activation","device":"heater","op":"add","name":"overlap","start":\#(hour + 1800),"length":60,"period":1440}"#
        )
        try await hub.exec(
            #"{"command":"admit_animal","id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"beacon":"1de4b189115e45f6b44e5093522699a1","owner_name":"Ana Lima","owner_phone":"+55 11 5555-0100"}"#
        )
        try await hub.exec(#"{"command":"record_reading","animal":"rex","quantity":"heart_rate","value":92}"#)
    }

    @Test func everyPageRendersWithTheHousehold() async throws {
        let hub = try await ConsoleHub.start()
        try await furnish(hub)
        let devices = try await hub.get("/")
        #expect(devices.status == 200)
        #expect(devices.headers["content-type"] == "text/html; charset=utf-8")
        #expect(devices.body.contains("<h1>Devices</h1>"))
        #expect(devices.body.contains(#"data-device="lamp""#))
        #expect(devices.body.contains(#"data-action="toggle""#))
        #expect(devices.body.contains(#"<span class="state" data-field="state">"#))
        #expect(devices.body.contains("1850.5 W"))
        #expect(devices.body.contains("Kitchen") && devices.body.contains("Evening") && devices.body.contains("All off"))

        let heater = try await hub.get("/devices/heater")
        #expect(heater.status == 200)
        #expect(heater.body.contains("<h1>Heater</h1>"))
        #expect(heater.body.contains("“morning” and “overlap” overlap"), "conflicts are shown")
        #expect(heater.body.contains("ActivationChanged") && heater.body.contains("cli"), "recent events with their actor")
        let kettle = try await hub.get("/devices/kettle")
        #expect(kettle.body.contains("<svg class=\"chart\""), "the power chart is drawn")
        #expect(kettle.body.contains("Energy per day"))

        let animals = try await hub.get("/animals")
        #expect(animals.body.contains("<h1>Animals</h1>") && animals.body.contains("/animals/rex"))
        for field in [
            "id", "name", "species", "breed", "gender", "birth_date", "weight_kg", "coat", "beacon", "owner_name", "owner_phone",
            "owner_address", "motive", "veterinarian", "observations", "photo"
        ] {
            #expect(animals.body.contains("name=\"\(field)\""), "the admission form has \(field)")
        }
        #expect(!animals.body.contains("Ana Lima"), "owner data is not on the list")
        let rex = try await hub.get("/animals/rex")
        #expect(rex.body.contains("<h1>Rex</h1>") && rex.body.contains("Ana Lima") && rex.body.contains("92 bpm"))

        let audit = try await hub.get("/audit?verify=1&asof=3")
        #expect(audit.status == 200)
        #expect(audit.body.contains("<h1>Audit</h1>"))
        #expect(audit.body.contains("Log sound: all \(hub.service.hub.store.lastSequence) events checked"))
        #expect(audit.body.contains("Read models as of sequence 3"), "the replay's tables as of the bound")
        #expect(!audit.body.contains("sealed:v1:"), "sealed owner data never shows")
        let filtered = try await hub.get("/audit?stream=animal/rex&type=AnimalAdmitted")
        #expect(filtered.body.contains("1 events shown"))
        let bad = try await hub.get("/audit?from=yesterday")
        #expect(bad.status == 200 && bad.body.contains("from: &quot;yesterday&quot; is not a time"))

        let discovered = try await hub.get("/discovered")
        #expect(discovered.body.contains("<h1>Discovered</h1>"))
        #expect(try await hub.get("/devices/ghost").status == 404)
        #expect(try await hub.get("/console/console.js").body.contains("X-CSRF-Token"))
        try await hub.service.stop()
    }

    /// The as-of view says why beside who, as `hub replay` does: the last change of a stream made
    /// by a command with a declared cause shows that cause in its own column.
    @Test func theAsOfViewShowsTheCauseBesideTheActor() async throws {
        let hub = try await ConsoleHub.start()
        let sent = try await hub.post("/api/device/lamp/switch", #"{"state":"ON","cause":"automation.porch_lights"}"#)
        #expect(sent.status == 200, "\(sent.body)")
        // As of the request (the driver's confirmation comes after it).
        let requested = try #require(try await hub.records().last { $0.type == "SwitchRequested" })
        let page = try await hub.get("/audit?asof=\(requested.sequence)")
        #expect(page.status == 200)
        let lines = page.body.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("  stream ") && $0.contains(" by ") && $0.contains(" cause ") }, "\(page.body.suffix(3000))")
        let lamp = try #require(lines.last { $0.hasPrefix("  device/lamp ") }, "\(page.body.suffix(3000))")
        let cells = lamp.split(separator: " ").map(String.init)
        #expect(Array(cells.dropFirst(3).prefix(3)) == ["SwitchRequested", "http:local", "automation.porch_lights"], "\(lamp)")
        try await hub.service.stop()
    }

    @Test func theTimelineIsFilteredAndPaged() async throws {
        let hub = try await ConsoleHub.start()
        for n in 1...60 { try await hub.exec(#"{"command":"record_reading","device":"lamp","quantity":"power","value":\#(n)}"#) }
        let first = try await hub.get("/audit?actor=cli&type=ReadingRecorded")
        #expect(first.body.contains("50 events shown, newest first"))
        #expect(first.body.contains("value: 60") && !first.body.contains("value: 10 "))
        let older = try #require(first.body.range(of: #"href="/audit?type=ReadingRecorded&amp;actor=cli&amp;before="#))
        let before = first.body[older.upperBound...].prefix { $0.isNumber }
        let second = try await hub.get("/audit?actor=cli&type=ReadingRecorded&before=\(before)")
        #expect(second.body.contains("10 events shown, newest first, from sequence \(before) back"))
        #expect(second.body.contains("value: 1 ·") && second.body.contains("Start of the log reached."))
        #expect(try await hub.get("/audit?actor=nobody").body.contains("0 events shown"))
        try await hub.service.stop()
    }

    /// A log that cannot be read is said on the Audit and Device pages, not shown as an empty timeline.
    @Test func aLogThatCannotBeReadIsSaidOnTheAuditPage() async throws {
        let hub = try await ConsoleHub.start()
        // More than the store keeps in memory for followers, so the oldest are read from the file.
        for n in 1...600 { try await hub.exec(#"{"command":"record_reading","device":"lamp","quantity":"power","value":\#(n)}"#) }
        let logDirectory = hub.dataDirectory + "/log"
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: logDirectory).filter { $0.hasSuffix(".seg") }.sorted().first)
        let handle = try #require(FileHandle(forUpdatingAtPath: logDirectory + "/" + segment))
        try handle.seek(toOffset: 2_000)  // inside an early record's payload
        let byte = try #require(try handle.read(upToCount: 1)).first!
        try handle.seek(toOffset: 2_000)
        try handle.write(contentsOf: [byte ^ 0xFF])
        try handle.close()
        let page = try await hub.get("/audit?before=40")
        #expect(page.status == 200)
        #expect(page.body.contains("the log could not be read"), "\(page.body.prefix(4000))")
        // The Device page's recent events read the same log: said there too, never "No events."
        let device = try await hub.get("/devices/lamp")
        #expect(device.status == 200)
        #expect(device.body.contains("the log could not be read") && !device.body.contains("No events."), "\(device.body.suffix(3000))")
        let asOf = try await hub.get("/audit?asof=1")
        #expect(asOf.body.contains("the log could not be read"))
        try await hub.service.stop()
    }

    @Test func aDeviceNamedLikeMarkupShowsAsText() async throws {
        let hub = try await ConsoleHub.start(devices: [
            HubConfig.Device(id: "x", driver: "virtual", name: "<script>alert(1)</script>", config: "{}")
        ])
        for path in ["/", "/devices/x", "/audit"] {
            let page = try await hub.get(path)
            #expect(!page.body.contains("<script>alert(1)"), "\(path) carries the name as markup")
        }
        #expect(try await hub.get("/").body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(try await hub.get("/devices/x").body.contains("<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>"))
        try await hub.service.stop()
    }

    @Test func anActionIsLoggedWithTheRequestsActorAndRefusalsAreShown() async throws {
        let hub = try await ConsoleHub.start()
        let answer = try await hub.post("/console/command", #"{"command":"switch","id":"lamp","state":"ON","command_id":"console-1"}"#)
        #expect(answer.status == 200)
        #expect(answer.body.contains(#""status":"ok""#))
        let requested = try await hub.records().filter { $0.type == "SwitchRequested" && $0.stream == "device/lamp" }
        #expect(requested.count == 1)
        #expect(requested.first?.causation.actor == "http:local")
        #expect(requested.first?.causation.commandId == "console-1")

        // The status says the refusal's kind, as the API's does: an unknown device is 404, a state
        // that forbids the command 409.
        let refused = try await hub.post("/console/command", #"{"command":"switch","id":"ghost","state":"ON"}"#)
        #expect(refused.status == 404)
        #expect(refused.body.contains("unknown_device"))
        let before = hub.service.hub.store.lastSequence
        let malformed = try await hub.post("/console/command", #"{"command":"switch","id":"lamp","state":"BRIGHT"}"#)
        #expect(malformed.status == 400)
        #expect(malformed.body.contains(#"\"state\": must be ON, OFF or TOGGLE"#))
        let notJSON = try await hub.post("/console/command", "switch lamp on")
        #expect(notJSON.status == 400 && notJSON.body.contains("bad_json"))
        #expect(hub.service.hub.store.lastSequence == before, "bad input changes nothing")
        try await hub.service.stop()
    }

    /// A command's declared cause is recorded beside the request's actor and shown on the device page.
    @Test func anActionsDeclaredCauseIsLoggedAndShown() async throws {
        let hub = try await ConsoleHub.start()
        let answer = try await hub.post("/console/command", #"{"command":"switch","id":"lamp","state":"ON","cause":"console.test"}"#)
        #expect(answer.status == 200, "\(answer.body)")
        let requested = try await hub.records().filter { $0.type == "SwitchRequested" && $0.stream == "device/lamp" }
        #expect(requested.last?.causation.actor == "http:local#console.test")
        let page = try await hub.get("/devices/lamp").body
        #expect(page.contains("Switched on by http:local, console.test, "), "\(page)")
        #expect(page.contains(#"<span class="muted mono" data-field="cause">console.test</span>"#))
        // The virtual lamp confirms the switch on its own time: wait for it, so that its
        // confirmation is not taken for something the refused commands wrote.
        let deadline = ContinuousClock.now + .seconds(10)
        while try await !hub.records().contains(where: { $0.type == "SwitchToggled" && $0.stream == "device/lamp" }),
            ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(10))
        }
        let before = hub.service.hub.store.lastSequence
        let bad = try await hub.post("/console/command", #"{"command":"switch","id":"lamp","state":"OFF","cause":"two words"}"#)
        #expect(bad.status == 400 && bad.body.contains("invalid_cause"), "\(bad.body)")
        let mixed = try await hub.post(
            "/console/command",
            #"[{"command":"switch","id":"lamp","state":"OFF","cause":"a.b"},{"command":"switch","id":"lamp","state":"ON","cause":"c.d"}]"#)
        #expect(mixed.status == 400 && mixed.body.contains("invalid_cause"), "\(mixed.body)")
        #expect(hub.service.hub.store.lastSequence == before, "bad input changes nothing")
        try await hub.service.stop()
    }

    @Test func theEventStreamDeliversAConsoleCommandsEffect() async throws {
        let hub = try await ConsoleHub.start()
        let stream = try EventStreamProbe(port: hub.port)
        defer { stream.close() }
        _ = try await stream.waitFor("live updates from the hub's log")
        let started = ContinuousClock.now
        _ = try await hub.post("/console/command", #"{"command":"switch","id":"lamp","state":"ON"}"#)
        let received = try await stream.waitFor(#""switch":"ON""#, timeout: .seconds(2))
        #expect(ContinuousClock.now - started < .seconds(1), "the confirmed state arrived within 1 s")
        #expect(received.contains("text/event-stream"))
        #expect(received.contains("event: device\ndata: {\"id\":\"lamp\""))
        try await hub.service.stop()
    }

    /// Event rows go only to a page that asked for its device's (the device page), not to every page.
    @Test func eventRowsGoOnlyToThePageOfTheirDevice() async throws {
        let hub = try await ConsoleHub.start()
        let lampPage = try EventStreamProbe(port: hub.port, path: "/console/events?entries=lamp")
        let devicesPage = try EventStreamProbe(port: hub.port)
        defer {
            lampPage.close()
            devicesPage.close()
        }
        _ = try await lampPage.waitFor("live updates from the hub's log")
        _ = try await devicesPage.waitFor("live updates from the hub's log")
        _ = try await hub.post("/console/command", #"{"command":"switch","id":"kettle","state":"ON"}"#)
        _ = try await hub.post("/console/command", #"{"command":"switch","id":"lamp","state":"ON"}"#)
        let lamp = try await lampPage.waitFor("SwitchToggled</td>")
        let devices = try await devicesPage.waitFor(#"data: {"id":"lamp""#)
        #expect(lamp.contains(#"event: entry\#ndata: {"id":"lamp","seq":"#))
        #expect(!lamp.contains(#"event: entry\#ndata: {"id":"kettle""#), "the kettle's rows are not the lamp page's")
        #expect(lamp.contains(#"event: device\#ndata: {"id":"kettle""#), "its state still is")
        #expect(!devices.contains("event: entry"))
        try await hub.service.stop()
    }

    @Test func aSwitchFlippedOverMQTTReachesAnOpenPage() async throws {
        let broker = try await TestBroker.startAsync()
        let hub = try await ConsoleHub.start(brokerPort: broker.port)
        let watcher = try await Watcher(port: broker.port)
        try await watcher.waitFor("hub/status") { $0 == "online" }
        let stream = try EventStreamProbe(port: hub.port)
        defer { stream.close() }
        _ = try await stream.waitFor("live updates from the hub's log")
        try watcher.publish("hub/device/kettle/switch/set", "ON")
        let received = try await stream.waitFor(#""switch":"ON""#, timeout: .seconds(3))
        #expect(received.contains(#"data: {"id":"kettle""#))
        try await hub.service.stop()
        await watcher.stop()
        await broker.stopAsync()
    }

    @Test func aPhotoIsStoredServedAndBoundedInSize() async throws {
        let hub = try await ConsoleHub.start()
        let jpeg = HTTPHardeningTests.jpeg
        let stored = try await HTTPProbe.post(port: hub.port, path: "/console/photo", contentType: "image/jpeg", body: jpeg)
        #expect(stored.status == 200)
        let name = try #require(
            try JSONValue.parse(Array(stored.body.utf8))["photo"].flatMap { if case .string(let s) = $0 { s } else { nil } })
        #expect(PhotoStore.isValidName(name))
        let served = try await hub.get("/console/photos/" + name)
        #expect(served.status == 200 && served.headers["content-type"] == "image/jpeg")
        try await hub.exec(
            #"{"command":"admit_animal","id":"mia","name":"Mia","species":"cat","weight_kg":4,"beacon":"1de4b189115e45f6b44e5093522699b2","photo":"\#(name)"}"#
        )
        #expect(try await hub.get("/animals/mia").body.contains("src=\"/console/photos/\(name)\""))

        let big: [UInt8] = [0xFF, 0xD8, 0xFF] + Array(repeating: 1, count: PhotoStore.maxBytes)
        let refused = try await HTTPProbe.post(port: hub.port, path: "/console/photo", contentType: "image/jpeg", body: big)
        #expect(refused.status == 413)
        #expect(refused.body.contains("photo_too_large") && refused.body.contains("at most 2 MiB"))
        let notImage = try await HTTPProbe.post(port: hub.port, path: "/console/photo", contentType: "image/png", body: jpeg)
        #expect(notImage.status == 400 && notImage.body.contains("not a image/png image"))
        let files = try FileManager.default.contentsOfDirectory(atPath: hub.dataDirectory + "/photos")
        #expect(files == [name], "only the accepted photo is stored")
        #expect(try await hub.get("/console/photos/..%2Flog").status == 404)
        try await hub.service.stop()
    }

    @Test func ownerDataShowsOnlyWhileUnsealed() async throws {
        let hub = try await ConsoleHub.start()
        try await hub.exec(
            #"{"command":"admit_animal","id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"beacon":"1de4b189115e45f6b44e5093522699a1","owner_name":"Ana Lima","owner_phone":"+55 11 5555-0100"}"#
        )
        #expect(try await hub.get("/animals/rex").body.contains("Ana Lima"))
        let erased = try await hub.post("/console/command", #"{"command":"erase_owner_data","id":"rex"}"#)
        #expect(erased.status == 200)
        let page = try await hub.get("/animals/rex").body
        #expect(!page.contains("Ana Lima") && !page.contains("5555-0100"))
        #expect(page.contains("Erased: the key that sealed it was deleted."))
        try await hub.service.stop()
    }

    @Test func ownerDataWhoseKeyCannotBeReadSaysSo() async throws {
        let hub = try await ConsoleHub.start()
        try await hub.exec(
            #"{"command":"admit_animal","id":"rex","name":"Rex","species":"dog","weight_kg":23.5,"beacon":"1de4b189115e45f6b44e5093522699a1","owner_name":"Ana Lima"}"#
        )
        let path = hub.dataDirectory + "/keys/animal-rex.key"
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        let page = try await hub.get("/animals/rex").body
        #expect(!page.contains("None recorded.") && !page.contains("Erased"))
        #expect(page.contains("Cannot be shown: the owner key \(path) is 3 bytes, not 32"), "\(page)")
        try FileManager.default.removeItem(atPath: path)
        #expect(try await hub.get("/animals/rex").body.contains("Sealed, but its key is not in this hub&#39;s data directory"))
        try await hub.service.stop()
    }

    @Test func aPageThatFallsBehindIsDroppedAndToldToReload() async throws {
        let feed = ConsoleFeed(capacity: 3)
        let (id, subscription) = try #require(feed.subscribe())
        for n in 1...3 { feed.publish(ConsoleChange(sequence: UInt64(n), stream: "device/lamp", type: "SwitchToggled")) }
        #expect(subscription.waiting == 3)
        feed.publish(ConsoleChange(sequence: 4, stream: "device/lamp", type: "SwitchToggled"))
        let taken = subscription.take()
        #expect(taken.overflowed && taken.changes.isEmpty, "the buffer is dropped, not grown")
        feed.publish(ConsoleChange(sequence: 5, stream: "device/lamp", type: "SwitchToggled"))
        #expect(subscription.waiting == 0, "nothing more is kept for it")
        feed.unsubscribe(id)
        #expect(feed.subscriberCount == 0)
        feed.finish()
        #expect(feed.subscribe() == nil, "no new pages once the hub stops")
    }
}
