import Foundation
import HubJSON

/// One tab of a ``Browser``. JavaScript runs in the page as a script of its own would (so a
/// click is `element.click()`, which runs the page's handlers); values come back as JSON.
public struct Page: Sendable {
    let pipe: DevToolsPipe
    /// The DevTools session this tab is attached as.
    public let session: String
    public let targetId: String

    /// Loads `url` and waits for its load event.
    /// - Throws: `BrowserError` with the browser's reason (such as `net::ERR_CONNECTION_REFUSED`)
    ///   when the page cannot be loaded, or when it has not loaded within `timeout`.
    public func goto(_ url: String, timeout: Duration = .seconds(10)) async throws {
        let loadsBefore = pipe.eventCount("Page.loadEventFired", session: session)
        let navigated = try await pipe.call("Page.navigate", ["url": .string(url)], session: session, timeout: timeout)
        if let reason = navigated["errorText"]?.stringValue, !reason.isEmpty {
            throw BrowserError("cannot load \(url): \(reason)")
        }
        let deadline = ContinuousClock.now + timeout
        while pipe.eventCount("Page.loadEventFired", session: session) == loadsBefore {
            guard ContinuousClock.now < deadline else {
                throw BrowserError("\(url) did not finish loading within \(timeout)\(logSuffix())")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Evaluates `expression` in the page (a promise is awaited) and returns its value as JSON
    /// (`null` for `undefined`, DOM nodes and functions).
    /// - Throws: `BrowserError` with the exception's text when the expression throws.
    @discardableResult
    public func evaluate(_ expression: String, timeout: Duration = .seconds(10)) async throws -> JSONValue {
        let answer = try await pipe.call(
            "Runtime.evaluate",
            ["expression": .string(expression), "returnByValue": true, "awaitPromise": true],
            session: session, timeout: timeout)
        if let details = answer["exceptionDetails"] {
            let text = details["exception"]?["description"]?.stringValue ?? details["text"]?.stringValue ?? details.serialized()
            throw BrowserError("the page threw evaluating `\(expression)`: \(text)")
        }
        return answer["result"]?["value"] ?? .null
    }

    /// Evaluates `expression` every 25 ms until it is truthy, and returns that value.
    /// - Throws: `BrowserError` naming the expression, its last value (or exception) and what the
    ///   page logged, when it is still falsy after `timeout`.
    @discardableResult
    public func waitFor(_ expression: String, timeout: Duration = .seconds(5)) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        var last = "never evaluated"
        while true {
            do {
                let value = try await evaluate(expression)
                if value.isTruthy { return value }
                last = "last value \(value.serialized())"
            } catch let error as BrowserError {
                last = error.description
            }
            guard ContinuousClock.now < deadline else {
                throw BrowserError("`\(expression)` still not true after \(timeout) (\(last))\(logSuffix())")
            }
            try await Task.sleep(for: .milliseconds(25))
        }
    }

    /// Clicks the first element matching the CSS `selector` (its `click()`: the page's own
    /// handlers run, as for a person's click).
    /// - Throws: `BrowserError` when nothing matches.
    public func click(_ selector: String) async throws {
        let literal = JSONValue.string(selector).serialized()
        let found = try await evaluate(
            "(() => { const e = document.querySelector(\(literal)); if (!e) return false; e.click(); return true })()")
        guard found == .bool(true) else { throw BrowserError("nothing to click: no element matches \(selector)\(logSuffix())") }
    }

    /// The trimmed text of the first element matching `selector`, or nil when nothing matches.
    public func text(_ selector: String) async throws -> String? {
        let literal = JSONValue.string(selector).serialized()
        return try await evaluate("document.querySelector(\(literal))?.textContent.trim() ?? null").stringValue
    }

    /// Writes a PNG of the page to `path`: the whole page when `fullPage` (up to 8,000 CSS pixels
    /// tall), else the window.
    public func screenshot(to path: String, fullPage: Bool = true) async throws {
        var params: [(String, JSONValue)] = [("format", "png")]
        if fullPage {
            try await evaluate("window.scrollTo(0, 0)")  // a sticky header is drawn where the window is
            let metrics = try await pipe.call("Page.getLayoutMetrics", session: session)
            let size = metrics["cssContentSize"] ?? metrics["contentSize"] ?? [:]
            let width = size["width"]?.doubleValue ?? 1280, height = min(size["height"]?.doubleValue ?? 900, 8000)
            params += [
                ("captureBeyondViewport", true),
                ("clip", ["x": 0, "y": 0, "width": .number(width.rounded(.up)), "height": .number(height.rounded(.up)), "scale": 1])
            ]
        }
        let shot = try await pipe.call("Page.captureScreenshot", .object(params), session: session, timeout: .seconds(20))
        guard let base64 = shot["data"]?.stringValue, let png = Data(base64Encoded: base64),
            png.starts(with: [0x89, 0x50, 0x4E, 0x47])
        else {
            throw BrowserError("Page.captureScreenshot: no PNG in the answer")
        }
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try png.write(to: url, options: .atomic)
    }

    /// The last lines the page logged (console calls, uncaught exceptions, failed loads).
    public var log: [String] { pipe.pageLog(session: session) }

    func logSuffix() -> String {
        let lines = log
        return lines.isEmpty ? "" : "; the page logged:\n" + lines.joined(separator: "\n")
    }
}

extension JSONValue {
    /// JavaScript's truthiness for the values `Runtime.evaluate` returns by value.
    var isTruthy: Bool {
        switch self {
        case .null: return false
        case .bool(let b): return b
        case .number(let n): return n != 0 && !n.isNaN
        case .string(let s): return !s.isEmpty
        default: return true
        }
    }
}
