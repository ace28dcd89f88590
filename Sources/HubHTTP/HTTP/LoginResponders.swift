import Foundation
import HubEngine
import Hummingbird

/// `/login` and `/logout`: how a browser gets the session cookie ``HTTPAccess`` accepts. A plain
/// form asks for a token (`hub token rotate` prints one); a valid one opens a session
/// (``HTTPSessions``) and sets two cookies: `hub_session` (HttpOnly, SameSite=Strict) and
/// `hub_csrf` (readable by the page's script, which sends it back as `X-CSRF-Token`).
struct LoginResponders: Sendable {
    let tokens: AccessTokens
    let sessions: HTTPSessions

    /// The largest login form read.
    static let maxFormBytes = 8192

    func form(_ request: Request) -> Response {
        page(.ok, next: Self.safeNext(request.uri.queryParameters["next"].map(String.init)), problem: nil)
    }

    func login(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: Self.maxFormBytes)
        let fields = Self.formFields(String(buffer: body))
        let next = Self.safeNext(fields["next"])
        guard let token = fields["token"], let name = tokens.name(of: token), let digest = tokens.digest(named: name) else {
            return page(.unauthorized, next: next, problem: "That is not a token of this hub. `hub token rotate` prints a new one.")
        }
        let (id, csrf) = sessions.open(name: name, tokenDigest: digest)
        let age = HTTPSessions.lifetime
        return HTTPAccess.redirect(
            to: next,
            cookies: [
                "\(HTTPAccess.sessionCookie)=\(id); Path=/; Max-Age=\(age); HttpOnly; SameSite=Strict",
                "\(HTTPAccess.csrfCookie)=\(csrf); Path=/; Max-Age=\(age); SameSite=Strict"
            ])
    }

    func logout(_ request: Request) -> Response {
        if let id = HTTPAccess.cookies(request)[HTTPAccess.sessionCookie] { sessions.close(id) }
        return HTTPAccess.redirect(
            to: "/login",
            cookies: [
                "\(HTTPAccess.sessionCookie)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict",
                "\(HTTPAccess.csrfCookie)=; Path=/; Max-Age=0; SameSite=Strict"
            ])
    }

    private func page(_ status: HTTPResponse.Status, next: String, problem: String?) -> Response {
        let html = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Sign in: hub</title>
            <meta name="viewport" content="width=device-width, initial-scale=1"></head>
            <body><main>
            <h1>Sign in to the hub</h1>
            \(problem.map { "<p role=\"alert\">\(Self.escape($0))</p>" } ?? "")
            <form method="post" action="/login">
            <label>Token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
            <input type="hidden" name="next" value="\(Self.escape(next))">
            <button type="submit">Sign in</button>
            </form>
            <p>The hub printed its admin token when it first started on this address; <code>hub token rotate</code> makes a new one.</p>
            </main></body></html>

            """
        return ObservabilityResponders.text(status, html, contentType: "text/html; charset=utf-8")
    }

    /// Where to go after signing in: a path on this hub only (never another site: `//host`, `https:`).
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/"), !next.hasPrefix("//"), !next.contains("\\"),
            !next.unicodeScalars.contains(where: { $0.value < 0x20 })
        else { return "/" }
        return next
    }

    /// `application/x-www-form-urlencoded` fields, the first of each name.
    static func formFields(_ body: String) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (s: Substring) in s.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            let name = decode(kv[0])
            if fields[name] == nil { fields[name] = kv.count == 2 ? decode(kv[1]) : "" }
        }
        return fields
    }

    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~/")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "/"
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
