// A real headless Chromium for tests, driven over the DevTools Protocol on a pipe (no WebSocket
// client needed):
//
//     let browser = try await Browser.launch()
//     let page = try await browser.newPage()
//     try await page.goto("http://127.0.0.1:\(port)/")
//     try await page.click("[data-device=\"lamp\"] button[data-action=\"toggle\"]")
//     try await page.waitFor("document.querySelector('[data-field=\"state\"]').textContent === 'on'")
//     try await page.screenshot(to: "devices.png")
//     await browser.close()          // also done (by SIGKILL) when the browser is released

import Foundation
import HubJSON
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

public final class Browser: Sendable {
    /// The browser's process id; it leads a process group of its own (its renderers and helpers).
    public let pid: pid_t
    /// Its temporary profile directory (`--user-data-dir`), which also holds `chromium.log`.
    public let directory: URL
    let pipe: DevToolsPipe
    private let closed = Mutex(false)

    private init(pid: pid_t, directory: URL, pipe: DevToolsPipe) {
        self.pid = pid
        self.directory = directory
        self.pipe = pipe
    }

    deinit {
        if !closed.withLock({ $0 }) { kill(); try? FileManager.default.removeItem(at: directory) }
    }

    /// Starts Chromium headless with a fresh temporary profile and waits until it answers.
    /// - Parameters:
    ///   - executable: the browser to run; by default `$HUB_CHROMIUM`, else `chromium`,
    ///     `chromium-browser` or `google-chrome` on `PATH`.
    ///   - width, height: the window (and so the screenshots') size in CSS pixels.
    ///   - timeout: how long it may take to answer its first call.
    /// - Throws: `BrowserError` naming the package to install when there is no browser, or with the
    ///   tail of the browser's own log when it does not start.
    public static func launch(
        executable: String? = nil, width: Int = 1280, height: Int = 900,
        timeout: Duration = .seconds(30)
    ) async throws -> Browser {
        guard let path = executable ?? findChromium(), FileManager.default.isExecutableFile(atPath: path) else {
            let chosen = ProcessInfoEnvironment.value("HUB_CHROMIUM").map { "$HUB_CHROMIUM=\($0)" }
            throw BrowserError(
                BrowserRequirement.missingMessage(executable ?? chosen ?? "chromium, chromium-browser, google-chrome on PATH"))
        }
        // A browser that dies makes our writes fail with EPIPE instead of killing the test process.
        signal(SIGPIPE, SIG_IGN)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hub-test-browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var arguments = [
            path, "--headless=new", "--disable-gpu", "--remote-debugging-pipe",
            "--user-data-dir=\(directory.path)", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-sync",
            "--disable-dev-shm-usage", "--mute-audio", "--hide-scrollbars", "--password-store=basic",
            "--window-size=\(width),\(height)", "about:blank"
        ]
        if getuid() == 0 { arguments.insert("--no-sandbox", at: 1) }
        let spawned: (pid: pid_t, toBrowser: Int32, fromBrowser: Int32)
        do {
            spawned = try spawn(arguments, log: directory.appendingPathComponent("chromium.log").path)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        let browser = Browser(
            pid: spawned.pid, directory: directory,
            pipe: DevToolsPipe(toBrowser: spawned.toBrowser, fromBrowser: spawned.fromBrowser))
        do {
            _ = try await browser.pipe.call("Browser.getVersion", timeout: timeout)
        } catch {
            let log = browser.logTail()
            await browser.close()
            throw BrowserError("\(path) did not start: \(error)\n--- chromium.log ---\n\(log)")
        }
        return browser
    }

    /// A new tab (about:blank), attached so that calls go to it alone.
    public func newPage(timeout: Duration = .seconds(10)) async throws -> Page {
        let target = try await pipe.call("Target.createTarget", ["url": "about:blank"], timeout: timeout)
        guard let targetId = target["targetId"]?.stringValue else { throw BrowserError("Target.createTarget: no targetId in \(target)") }
        let attached = try await pipe.call("Target.attachToTarget", ["targetId": .string(targetId), "flatten": true], timeout: timeout)
        guard let session = attached["sessionId"]?.stringValue else {
            throw BrowserError("Target.attachToTarget: no sessionId in \(attached)")
        }
        for domain in ["Page", "Runtime", "Log"] {
            _ = try await pipe.call("\(domain).enable", session: session, timeout: timeout)
        }
        return Page(pipe: pipe, session: session, targetId: targetId)
    }

    /// Asks the browser to close, then ends its whole process group (renderers included) and
    /// removes its profile. Safe to call twice.
    public func close() async {
        guard
            !closed.withLock({
                let was = $0; $0 = true; return was
            })
        else { return }
        _ = try? await pipe.call("Browser.close", timeout: .seconds(3))
        var status: Int32 = 0
        for _ in 0..<60 {
            if waitpid(pid, &status, WNOHANG) != 0 { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        kill()
        pipe.shutDown("the browser was closed")
        try? FileManager.default.removeItem(at: directory)
    }

    /// SIGKILL to the browser's process group (whatever is left of it), and reaps the browser.
    /// Waits up to 2 s for the group to be gone (the kernel delivers SIGKILL, init reaps the helpers).
    private func kill() {
        _ = Glibc.kill(-pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        for _ in 0..<200 where Glibc.kill(-pid, 0) == 0 {
            _ = Glibc.kill(-pid, SIGKILL)
            usleep(10_000)
        }
    }

    /// The last lines the browser wrote to its standard output and error.
    public func logTail(lines: Int = 30) -> String {
        let text = (try? String(contentsOf: directory.appendingPathComponent("chromium.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    static func findChromium() -> String? {
        if let chosen = ProcessInfoEnvironment.value("HUB_CHROMIUM"), !chosen.isEmpty { return chosen }
        let path = ProcessInfoEnvironment.value("PATH") ?? "/usr/bin:/bin"
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/bin", "/usr/local/bin"]
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            if let found = dirs.map({ "\($0)/\(name)" }).first(where: FileManager.default.isExecutableFile) { return found }
        }
        return nil
    }
}
