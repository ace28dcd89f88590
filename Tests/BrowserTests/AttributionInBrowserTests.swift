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
}
