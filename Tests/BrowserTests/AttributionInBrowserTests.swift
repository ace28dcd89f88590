import BrokerHarness
import BrowserHarness
import Foundation
import Testing

/// Who and why, as a person reads them: a command sent as `alice` under `hub/from/alice/` with the
/// MQTT 5 user property `cause` shows on the device page ("Switched on by mqtt:alice,
/// automation.porch_lights, ...") and in the audit timeline, in a real Chromium on a real `hub run`.
@Suite(.serialized, .enabled(if: !BrowserRequirement.skipRequested, "HUB_SKIP_BROWSER=1 skips the real-browser tests"))
struct AttributionInBrowserTests {
    @Test func theDevicePageAndTheTimelineShowWhoAndWhy() async throws {
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
        let sent = try runTool(
            "mosquitto_pub",
            [
                "-h", "127.0.0.1", "-p", "\(broker.port)", "-V", "mqttv5", "-q", "1", "-t", "hub/from/alice/device/lamp/switch/set",
                "-m", "ON", "-D", "publish", "user-property", "cause", "automation.porch_lights"
            ])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(try await retained(broker, "hub/device/lamp/switch", equals: "ON"))
        let browser = try await Browser.launch()
        do {
            let page = try await browser.newPage()
            try await page.goto("http://127.0.0.1:\(port)/devices/lamp")
            let line = try await page.text(#"[data-field="last-request"]"#) ?? ""
            #expect(line.hasPrefix("Switched on by mqtt:alice, automation.porch_lights, "), "\(line)")
            #expect(
                try await page.evaluate(#"[...document.querySelectorAll('[data-field="cause"]')].map(e => e.textContent).join()"#)
                    == "automation.porch_lights")

            try await page.goto("http://127.0.0.1:\(port)/audit?actor=mqtt%3Aalice")
            let rows =
                try await page.evaluate(
                    #"[...document.querySelectorAll('tbody tr')].filter(r => r.textContent.includes('SwitchRequested')).map(r => r.textContent).join('|')"#
                ).stringValue ?? ""
            #expect(rows.contains("mqtt:alice") && rows.contains("automation.porch_lights"), "\(rows)")
            #expect(!page.log.contains { $0.hasPrefix("uncaught") }, "the page threw: \(page.log)")
        } catch {
            await browser.close()
            throw BrowserError("\(error)\n--- hub run ---\n\(hub.output.suffix(3000))")
        }
        await browser.close()
    }

    /// The device page's "Switched on by ..." line follows the log while the page is open: a
    /// command with a cause from MQTT (as Home Assistant sends one) makes it appear, and the page's
    /// own switch button changes it, without a reload.
    @Test func theLastRequestLineIsLive() async throws {
        try await ConsoleFormsInBrowserTests().withConsole(zone: "UTC") { page, base, shots, brokerPort in
            try await page.goto(base + "/devices/lamp")
            let line = #"document.querySelector('[data-device="lamp"] [data-field="last-request"]')?.textContent ?? ''"#
            #expect(try await page.evaluate(line) == "", "no switch was requested yet")
            try await page.waitFor("document.body.hasAttribute('data-live-open')", timeout: .seconds(5))
            try await page.evaluate("window.hubTestMark = 'not reloaded'")

            // Home Assistant's way: the JSON body with a cause, on the plain command topic.
            try mosquittoPub(brokerPort, "hub/device/lamp/switch/set", #"{"state":"ON","cause":"automation.porch_lights"}"#)
            let fromMQTT = "Switched on by mqtt, automation.porch_lights, " + (try await Self.requestedAt(page))
            try await page.waitFor("(\(line)) === '\(fromMQTT)'", timeout: .seconds(5))
            #expect(try await page.evaluate(line).stringValue == fromMQTT)
            #expect(try await page.evaluate(#"getComputedStyle(document.querySelector('[data-field="last-request"]')).display"#) != "none")
            try await page.screenshot(to: shots + "/last-request-mqtt.png")

            // The page's own button: the line says who asked (the console's actor), no cause.
            try await page.click(#"[data-device="lamp"] button[data-action="off"]"#)
            try await page.waitFor("(\(line)).startsWith('Switched off by ')", timeout: .seconds(5))
            let fromPage = "Switched off by http:local, " + (try await Self.requestedAt(page))
            #expect(try await page.evaluate(line).stringValue == fromPage)
            #expect(try await page.evaluate("window.hubTestMark") == "not reloaded")
            try await page.screenshot(to: shots + "/last-request-button.png")
        }
    }

    /// The device page's "Recent events" table follows the log while the page is open: a command
    /// from MQTT adds its `SwitchRequested` (with who asked and why) and the lamp's `SwitchToggled`
    /// at the top, newest first, without a reload; another device's events and the lamp's readings
    /// (which the page leaves out) do not show.
    @Test func theRecentEventsTableIsLive() async throws {
        try await ConsoleFormsInBrowserTests().withConsole(zone: "UTC") { page, base, shots, brokerPort in
            try await page.goto(base + "/devices/lamp")
            let rows = #"[...document.querySelectorAll('tbody[data-events="lamp"] tr')]"#
            let types = "(\(rows).map(r => r.children[2].textContent).join(','))"
            let before = try await page.evaluate(types).stringValue ?? ""
            #expect(!before.isEmpty && !before.contains("Switch"), "the lamp was registered, never switched: \(before)")
            let count = try await page.evaluate("\(rows).length").doubleValue ?? 0
            try await page.waitFor("document.body.hasAttribute('data-live-open')", timeout: .seconds(5))
            try await page.evaluate("window.hubTestMark = 'not reloaded'")

            try mosquittoPub(
                brokerPort, "hub/request/command", #"{"command":"record_reading","device":"lamp","quantity":"power","value":7.25}"#)
            try mosquittoPub(brokerPort, "hub/device/lamp/switch/set", #"{"state":"ON","cause":"automation.porch_lights"}"#)
            try mosquittoPub(brokerPort, "hub/device/fan/switch/set", "ON")
            try await page.waitFor("\(types).startsWith('SwitchToggled,SwitchRequested,')", timeout: .seconds(5))
            #expect(try await page.evaluate("\(rows).length").doubleValue == count + 2)
            let requested = try await page.evaluate("\(rows)[1].textContent").stringValue ?? ""
            #expect(requested.contains("mqtt") && requested.contains("automation.porch_lights"), "\(requested)")
            // The rows added live are the rows the page has when loaded afresh.
            let fresh = try await page.evaluate(
                """
                fetch('/devices/lamp').then(r => r.text()).then(t => [...new DOMParser().parseFromString(t, 'text/html')
                  .querySelectorAll('tbody[data-events="lamp"] tr')].map(r => r.outerHTML).join('|'))
                """)
            let live = try await page.evaluate("\(rows).map(r => r.outerHTML).join('|')")
            #expect(live == fresh, "live \(live), fresh \(fresh)")
            // Newest first: the sequence numbers fall down the table, and the new ones are the log's.
            let seqs = try await page.evaluate("\(rows).map(r => Number(r.children[0].textContent)).join(',')").stringValue ?? ""
            let numbers = seqs.split(separator: ",").compactMap { Int($0) }
            #expect(numbers == numbers.sorted(by: >), "\(seqs)")
            let log = try await page.evaluate("fetch('/api/events?limit=1000').then(r => r.json())")
            let lampSeqs = (log["data"]?.arrayValue ?? []).filter {
                $0["stream"]?.stringValue == "device/lamp" && $0["type"]?.stringValue != "ReadingRecorded"
            }.compactMap { $0["seq"]?.doubleValue }.map { Int($0) }
            #expect(Array(numbers.prefix(2)) == Array(lampSeqs.suffix(2).reversed()), "page \(seqs), log \(lampSeqs)")
            #expect(try await page.evaluate("window.hubTestMark") == "not reloaded")
            try await page.screenshot(to: shots + "/recent-events-live.png")
        }
    }

    /// The newest `SwitchRequested`'s time as the console writes it in UTC: `2026-11-27 18:00:02`.
    static func requestedAt(_ page: Page) async throws -> String {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            let answer = try await page.evaluate("fetch('/api/events?limit=1000').then(r => r.json())")
            let events = answer["data"]?.arrayValue ?? []
            if let time = events.last(where: { $0["type"]?.stringValue == "SwitchRequested" })?["time"]?.stringValue {
                // "2026-11-27T18:00:02.123456Z"
                return String(time.prefix(19)).replacingOccurrences(of: "T", with: " ")
            }
            guard ContinuousClock.now < deadline else { throw BrowserError("no SwitchRequested in the log: \(answer.serialized())") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

}
