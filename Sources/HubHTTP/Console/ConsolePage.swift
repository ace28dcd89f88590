import Foundation
import HubDomain
import HubEngine
import Hummingbird

/// The frame every console page shares: title, navigation, the answer box and the embedded assets.
struct ConsolePage {
    enum Section: String, CaseIterable {
        case devices = "Devices", animals = "Animals", audit = "Audit", discovered = "Discovered"

        var path: String {
            switch self {
            case .devices: return "/"
            case .animals: return "/animals"
            case .audit: return "/audit"
            case .discovered: return "/discovered"
            }
        }
    }

    var title: String
    var section: Section
    /// Stream prefixes whose changes make the page offer a reload (`animal/`); devices update in place.
    var live: [String] = []
    var body: HTML

    var html: HTML {
        let nav = Section.allCases.map { s -> HTML in
            s == section ? "<a href=\"\(s.path)\" aria-current=\"page\">\(s.rawValue)</a>" : "<a href=\"\(s.path)\">\(s.rawValue)</a>"
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · hub</title>
            <link rel="stylesheet" href="/console/console.css">
            </head>
            <body data-live="\(live.joined(separator: " "))" data-zone="\(LocalTime.current.name)">
            <header><span class="brand">hub</span><nav>\(nav)</nav></header>
            <main>
            <h1>\(title)</h1>
            <div id="live-note" role="status">New events were logged here: <a href="">reload</a> to see them.</div>
            \(body)
            <p class="muted zone-note">Times are in \(LocalTime.current.name).</p>
            </main>
            <div id="answer" role="status" aria-live="polite"></div>
            <script src="/console/console.js"></script>
            </body></html>
            """
    }

    var response: Response { ConsoleResponse.html(html) }
}

/// Responses the console sends.
enum ConsoleResponse {
    static func html(_ page: HTML, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: page.text)))
    }

    static func text(_ status: HTTPResponse.Status, _ body: String, contentType: String = "text/plain; charset=utf-8") -> Response {
        Response(
            status: status, headers: [.contentType: contentType, .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    static func json(_ status: HTTPResponse.Status, _ value: JSONValue) -> Response {
        text(status, value.serialized() + "\n", contentType: "application/json")
    }

    /// `{"status":"error","code":...,"error":...}`: what the page shows for a refusal.
    static func error(_ status: HTTPResponse.Status, code: String, _ message: String) -> Response {
        json(status, .object([("status", "error"), ("code", .string(code)), ("error", .string(message))]))
    }

    static func asset(_ text: String, contentType: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: contentType, .cacheControl: "max-age=300"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// A page saying what was not found, with the navigation.
    static func notFound(_ section: ConsolePage.Section, _ message: String) -> Response {
        var page = ConsolePage(title: "Not found", section: section, body: "<p class=\"error-box\">\(message)</p>")
        page.title = "Not found"
        return html(page.html, status: .notFound)
    }
}

/// Formatting shared by the pages.
enum ConsoleFormat {
    /// `2026-11-23 16:30:12` in the household's time zone (``LocalTime/current``), `–` for nil.
    static func time(_ micros: Int64?) -> String { LocalTime.current.text(micros) }

    static func number(_ value: Double?, decimals: Int) -> String {
        guard let value else { return "–" }
        guard case .number(let rounded) = StateJSON.rounded(value, decimals) else { return "–" }
        return JSONValue.number(rounded).serialized()
    }

    static func switchText(_ status: SwitchStatus) -> String { status.rawValue }

    /// What the state topics and the live updates say of a pending command (`switching on`).
    static func pending(_ p: PendingSwitch?) -> String { p.map { "switching \($0.state.name)" } ?? "" }

    static func power(_ r: ReadingValue?) -> String { r.map { number($0.value, decimals: 1) + " W" } ?? "–" }

    static func kWh(_ wh: Double?) -> String { wh.map { number($0 / 1000, decimals: 3) + " kWh" } ?? "–" }

    static func failure(_ f: SwitchFailure?) -> String { f.map { "failed to switch \($0.state.name): \($0.reason)" } ?? "" }

    /// A JSON command for a `data-command` attribute.
    static func command(_ fields: [(String, JSONValue)]) -> String { JSONValue.object(fields).serialized() }
}
