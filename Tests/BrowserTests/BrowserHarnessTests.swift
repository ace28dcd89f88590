import BrowserHarness
import Foundation
import HubJSON
import Testing

/// The harness itself, on pages it writes (data: URLs) and a port nobody listens on: clicks run
/// the page's handlers, waits see changes a timer makes, errors say what and where, screenshots
/// are PNGs of the page.
@Suite(.serialized, .enabled(if: !BrowserRequirement.skipRequested, "HUB_SKIP_BROWSER=1 skips the real-browser tests"))
struct BrowserHarnessTests {
    /// A page whose button says `on` 200 ms after a click, as a page waiting for its server would.
    static let page =
        "data:text/html," + """
            <p id="state">off</p><button onclick="setTimeout(() => { document.getElementById('state').textContent = 'on' }, 200)">switch</button>
            """.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!

    @Test func clicksRunThePagesHandlersAndWaitsSeeTheirEffect() async throws {
        let browser = try await Browser.launch()
        do {
            let tab = try await browser.newPage()
            try await tab.goto(Self.page)
            #expect(try await tab.text("#state") == "off")
            try await tab.click("button")
            #expect(try await tab.text("#state") == "off")  // not yet: the page answers after 200 ms
            try await tab.waitFor("document.getElementById('state').textContent === 'on'", timeout: .seconds(3))
            #expect(try await tab.evaluate("1 + 2") == .number(3))
            #expect(try await tab.evaluate("Promise.resolve({a: [1, 'x']})") == ["a": [1, "x"]])
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    @Test func failuresSayWhatAndWhere() async throws {
        let browser = try await Browser.launch()
        do {
            let tab = try await browser.newPage()
            try await tab.goto(Self.page)
            let thrown = await #expect(throws: BrowserError.self) { try await tab.evaluate("nosuch.thing") }
            #expect(thrown?.description.contains("nosuch is not defined") == true)
            let missing = await #expect(throws: BrowserError.self) { try await tab.click("#absent") }
            #expect(missing?.description.contains("no element matches #absent") == true)
            let late = await #expect(throws: BrowserError.self) {
                try await tab.evaluate("console.log('looked for it')")
                try await tab.waitFor("document.title === 'never'", timeout: .milliseconds(300))
            }
            #expect(late?.description.contains("document.title === 'never'") == true)
            #expect(late?.description.contains("looked for it") == true)  // what the page logged comes along
            let refused = await #expect(throws: BrowserError.self) { try await tab.goto("http://127.0.0.1:\(try closedPort())/") }
            #expect(refused?.description.contains("ERR_CONNECTION_REFUSED") == true)
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    @Test func aScreenshotIsAPNGOfThePage() async throws {
        let browser = try await Browser.launch(width: 640, height: 480)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hub-browser-\(UUID().uuidString).png").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        do {
            let tab = try await browser.newPage()
            try await tab.goto("data:text/html,<body style='margin:0;height:1500px;background:rgb(0,128,0)'>tall</body>")
            try await tab.screenshot(to: file)
            let png = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            // IHDR: width and height, big-endian, at bytes 16 and 20: the whole page, not the window.
            let bytes = [UInt8](png)
            let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
            #expect(width == 640)
            #expect(height == 1500)
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    @Test func closeEndsTheBrowsersProcessGroup() async throws {
        let browser = try await Browser.launch()
        _ = try await browser.newPage()
        let group = browser.pid
        #expect(kill(-group, 0) == 0)
        await browser.close()
        #expect(kill(-group, 0) == -1)  // nothing left of it: no renderer, no zygote
        #expect(!FileManager.default.fileExists(atPath: browser.directory.path))
        let after = await #expect(throws: BrowserError.self) { try await browser.newPage() }
        #expect(after?.description.contains("closed") == true)
    }

    @Test func aMissingBrowserNamesThePackageToInstall() async throws {
        let error = await #expect(throws: BrowserError.self) { try await Browser.launch(executable: "/nonexistent/chromium") }
        #expect(error?.description.contains("/nonexistent/chromium") == true)
        #expect(error?.description.contains("apt-get install chromium") == true)
        #expect(error?.description.contains("HUB_SKIP_BROWSER=1") == true)
    }
}

/// A loopback port with no listener (bound, then closed).
func closedPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 ? getsockname(fd, $0, &length) : -1 }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}
