import BrokerHarness
import BrowserHarness
import Foundation
import Testing

/// The console as a person uses it: a real `hub run` (its own process) on a real mosquitto, the
/// page loaded in a real headless Chromium. The page's contract: each device is an element
/// `[data-device="<id>"]` holding `button[data-action="toggle"]` and `[data-field="state"]`,
/// whose text is `on` or `off`.
@Suite(.serialized, .enabled(if: !BrowserRequirement.skipRequested, "HUB_SKIP_BROWSER=1 skips the real-browser tests"))
struct ConsoleInBrowserTests {
    static func state(_ device: String) -> String {
        #"document.querySelector('[data-device="\#(device)"] [data-field="state"]')?.textContent.trim()"#
    }

    @Test func aClickShowsTheConfirmedStateAndASwitchFromMQTTShowsWithinASecond() async throws {
        let broker = try await TestBroker.startAsync()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = dir + "/hub.json"
        try #"{"devices": [{"id": "lamp", "driver": "virtual", "name": "Desk lamp"}]}"#.write(
            toFile: config, atomically: true, encoding: .utf8)
        let port = try TestBroker.freePort()
        let hub = try await RunningHub.start([
            "--data-dir", dir + "/data", "--config", config, "--mqtt-port", "\(broker.port)",
            "--http", "127.0.0.1:\(port)"
        ])
        defer { hub.stop() }
        let browser = try await Browser.launch()
        do {
            let page = try await browser.newPage()
            try await page.goto("http://127.0.0.1:\(port)/")
            let before = try await page.evaluate(Self.state("lamp")).stringValue
            #expect(before != nil, "no [data-device=\"lamp\"] [data-field=\"state\"] on the Devices page")
            try await page.evaluate("window.hubTestMark = 'not reloaded'")

            // A person's click: the page shows the state the hub confirmed and pushed, and the hub
            // says the same on its retained switch topic.
            let clicked = before == "on" ? "off" : "on"
            try await page.click(#"[data-device="lamp"] button[data-action="toggle"]"#)
            try await page.waitFor("\(Self.state("lamp")) === '\(clicked)'", timeout: .seconds(5))
            #expect(try await retained(broker, "hub/device/lamp/switch", equals: clicked.uppercased()))

            // A switch from elsewhere (MQTT), shown within 1 s in the open page, without a reload.
            let flipped = clicked == "on" ? "off" : "on"
            let sent = ContinuousClock.now
            try mosquittoPub(broker.port, "hub/device/lamp/switch/set", flipped.uppercased())
            try await page.waitFor("\(Self.state("lamp")) === '\(flipped)'", timeout: .seconds(1) - (ContinuousClock.now - sent))
            let shownAfter = ContinuousClock.now - sent
            #expect(shownAfter < .seconds(1))
            #expect(try await page.evaluate("window.hubTestMark") == "not reloaded")
            #expect(!page.log.contains { $0.hasPrefix("uncaught") }, "the page threw: \(page.log)")
        } catch {
            await browser.close()
            throw BrowserError("\(error)\n--- hub run ---\n\(hub.output.suffix(3000))")
        }
        await browser.close()
    }

    /// The Devices, Device and Animals pages with the demo's devices and animals, screenshotted:
    /// into docs/screenshots when HUB_WRITE_SCREENSHOTS=1 (README shows them), else into a
    /// temporary directory (so a test run leaves the tree as it was).
    @Test func theDemoPagesRenderAndAreScreenshotted() async throws {
        let broker = try await TestBroker.startAsync()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let port = try TestBroker.freePort()
        let hub = try await startDemoHub([
            "--demo", "--data-dir", dir + "/data", "--mqtt-port", "\(broker.port)",
            "--http", "127.0.0.1:\(port)"
        ])
        defer { hub.stop() }
        let shots = ProcessInfo.processInfo.environment["HUB_WRITE_SCREENSHOTS"] == "1" ? Self.screenshotDirectory : dir + "/screenshots"
        let browser = try await Browser.launch(width: 1280, height: 900)
        do {
            let page = try await browser.newPage()
            try await page.goto("http://127.0.0.1:\(port)/")
            // The kettle is switched on by the demo and polled every 2 s: wait for its power to show.
            try await page.waitFor("\(Self.state("demo-kettle")) === 'on'", timeout: .seconds(20))
            for device in ["demo-pump", "demo-heater", "demo-tasmota", "demo-shelly"] {
                #expect(try await page.evaluate("\(Self.state(device)) != null") == true, "\(device) is not on the Devices page")
            }
            try await Task.sleep(for: .seconds(3))
            try await page.screenshot(to: shots + "/devices.png")

            try await page.goto("http://127.0.0.1:\(port)/devices/demo-kettle")
            try await page.waitFor("document.querySelectorAll('svg').length > 0", timeout: .seconds(5))
            // The Kasa plug's meter reports voltage and current: shown as rows, not as markup text.
            #expect(
                try await page.evaluate(#"document.querySelector('[data-field="voltage"]')?.textContent.endsWith(' V') === true"#) == true)
            #expect(
                try await page.evaluate(#"document.querySelector('[data-field="current"]')?.textContent.endsWith(' A') === true"#) == true)
            #expect(try await page.text("main")?.contains("<dt>") == false)
            try await page.screenshot(to: shots + "/device.png")

            try await page.goto("http://127.0.0.1:\(port)/animals")
            try await page.waitFor(
                "document.body.textContent.includes('Rex') && document.body.textContent.includes('Tom')", timeout: .seconds(5))
            try await page.screenshot(to: shots + "/animals.png")
            for name in ["devices", "device", "animals"] {
                let size = try FileManager.default.attributesOfItem(atPath: "\(shots)/\(name).png")[.size] as? Int ?? 0
                #expect(size > 10_000, "\(name).png is only \(size) bytes")
            }
            #expect(!page.log.contains { $0.hasPrefix("uncaught") }, "the page threw: \(page.log)")
        } catch {
            await browser.close()
            throw BrowserError("\(error)\n--- hub run ---\n\(hub.output.suffix(3000))")
        }
        await browser.close()
    }

    /// `hub run --demo`, whose simulated plugs listen on fixed ports: while another demo hub holds
    /// them (a developer's `./scripts/run`), it waits for them up to 2 minutes, saying so.
    func startDemoHub(_ arguments: [String]) async throws -> RunningHub {
        let deadline = ContinuousClock.now + .seconds(120)
        while true {
            do {
                return try await RunningHub.start(arguments)
            } catch let error as BrokerHarnessError where error.description.contains("another demo hub") && ContinuousClock.now < deadline {
                print("ConsoleInBrowserTests: the demo's ports are taken by another demo hub; waiting for them")
                try await Task.sleep(for: .seconds(5))
            }
        }
    }

    /// docs/screenshots of this package.
    static var screenshotDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/screenshots").path
    }
}

func temporaryDirectory() throws -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hub-browser-test-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// `mosquitto_pub` (Debian's mosquitto-clients) publishing one message at QoS 1.
func mosquittoPub(_ port: Int, _ topic: String, _ message: String) throws {
    let result = try runTool("mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", topic, "-m", message])
    guard result.status == 0 else { throw BrokerHarnessError("mosquitto_pub -t \(topic) failed: \(result.output)") }
}

/// Whether the retained message on `topic` becomes `value` within 3 s (`mosquitto_sub -C 1 -W 2`).
func retained(_ broker: TestBroker, _ topic: String, equals value: String) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(3)
    var last = ""
    while ContinuousClock.now < deadline {
        last = try runTool("mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-t", topic, "-C", "1", "-W", "2"])
            .output.trimmingCharacters(in: .whitespacesAndNewlines)
        if last == value { return true }
        try await Task.sleep(for: .milliseconds(100))
    }
    Issue.record("retained \(topic) is \(last), not \(value)")
    return false
}

func runTool(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    guard let path = ["/usr/bin/", "/usr/local/bin/"].map({ $0 + name }).first(where: FileManager.default.isExecutableFile) else {
        throw BrokerHarnessError("\(name) is not installed (apt-get install mosquitto-clients; scripts/setup-system does it)")
    }
    return try runCapturing([path] + arguments)
}
