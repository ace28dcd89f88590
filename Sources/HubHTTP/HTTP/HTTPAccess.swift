import Foundation
import HTTPTypes
import HubEngine
import Hummingbird

/// Who may use the HTTP listener, as a middleware on the whole router (every route, and the 404s):
///
/// - Bound to loopback, no credential is needed: the actor is `http:local`.
/// - Any other bind needs a credential: `Authorization: Bearer <token>` (``AccessTokens``) or the
///   `hub_session` cookie `/login` sets (``HTTPSessions``). Without one a browser's page request is
///   sent to `/login`; anything else gets 401 with a JSON error. `/healthz`, `/readyz`, `/login`
///   and `/logout` are always open.
/// - Against cross-site requests, every request other than GET and HEAD is refused (403) when its
///   `Origin` is not this host or `Sec-Fetch-Site` says `cross-site`; and one authenticated by the
///   session cookie must carry `X-CSRF-Token` equal to the `hub_csrf` cookie (double submit).
///
/// A credential sets the actor to `http:<token name>`, recorded on every command the request runs.
struct HTTPAccess: RouterMiddleware {
    typealias Context = HubRequestContext

    /// False on loopback.
    let requireCredential: Bool
    let tokens: AccessTokens
    let sessions: HTTPSessions

    static let openPaths: Set<String> = ["/healthz", "/readyz", "/login", "/logout"]
    static let sessionCookie = "hub_session"
    static let csrfCookie = "hub_csrf"
    static let csrfHeader = HTTPField.Name("X-CSRF-Token")!
    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    static let hostHeader = HTTPField.Name("Host")!

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let unsafe = request.method != .get && request.method != .head
        if unsafe, let problem = Self.crossSiteProblem(request) {
            return Self.refusal(.forbidden, problem, code: "cross_site")
        }
        if Self.openPaths.contains(request.uri.path) { return try await next(request, context) }
        var context = context
        switch identify(request) {
        case .bearer(let name):
            context.actor = "http:" + name
        case .badBearer:
            return Self.refusal(
                .unauthorized,
                "the bearer token is not one of this hub's tokens (hub token list names them; hub token rotate makes a new one)",
                code: "unauthorized")
        case .session(let session, let cookies):
            if unsafe {
                let header = request.headers[Self.csrfHeader] ?? ""
                guard !header.isEmpty, header == cookies[Self.csrfCookie], AccessTokens.same(header, session.csrf) else {
                    return Self.refusal(
                        .forbidden,
                        "a request signed in with the session cookie must carry the header X-CSRF-Token "
                            + "equal to the hub_csrf cookie", code: "csrf")
                }
            }
            context.actor = "http:" + session.name
        case .none:
            guard requireCredential else { break }
            if Self.wantsPage(request) {
                return Self.redirect(
                    to: "/login?next=" + LoginResponders.encode(request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")))
            }
            return Self.refusal(
                .unauthorized,
                "this hub serves \(request.uri.path) only with a credential: send Authorization: Bearer <token> "
                    + "(hub token rotate prints one) or sign in at /login", code: "unauthorized")
        }
        return try await next(request, context)
    }

    enum Credential {
        case bearer(String)
        case badBearer
        case session(HTTPSessions.Session, cookies: [String: String])
        case none
    }

    func identify(_ request: Request) -> Credential {
        if let authorization = request.headers[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer",
                let name = tokens.name(of: parts[1].trimmingCharacters(in: .whitespaces))
            else { return .badBearer }
            return .bearer(name)
        }
        let cookies = Self.cookies(request)
        if let id = cookies[Self.sessionCookie], let session = sessions.session(id),
            tokens.digest(named: session.name).map({ AccessTokens.same($0, session.tokenDigest) }) == true
        {
            return .session(session, cookies: cookies)
        }
        return .none
    }

    /// Why an unsafe request looks cross-site; nil when it does not.
    static func crossSiteProblem(_ request: Request) -> String? {
        if request.headers[secFetchSite]?.lowercased() == "cross-site" {
            return "cross-site request refused: Sec-Fetch-Site is cross-site"
        }
        guard let origin = request.headers[.origin] else { return nil }
        // HTTP/1.1's Host header arrives as the request's authority.
        let host = request.head.authority ?? request.headers[hostHeader] ?? ""
        let originHost = origin.range(of: "://").map { String(origin[$0.upperBound...]) }
        guard let originHost, !host.isEmpty, originHost.lowercased() == host.lowercased() else {
            return "cross-site request refused: Origin \(origin) is not this hub (\(host.isEmpty ? "no Host header" : host))"
        }
        return nil
    }

    /// A browser asking for a page (not the API): sent to `/login` rather than answered 401.
    static func wantsPage(_ request: Request) -> Bool {
        (request.method == .get || request.method == .head) && !request.uri.path.hasPrefix("/api/")
            && (request.headers[.accept] ?? "").contains("text/html")
    }

    /// Every cookie of the request (`Cookie: a=1; b=2`), the first of each name.
    static func cookies(_ request: Request) -> [String: String] {
        var found: [String: String] = [:]
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                guard kv.count == 2 else { continue }
                let name = kv[0].trimmingCharacters(in: .whitespaces)
                if found[name] == nil { found[name] = kv[1].trimmingCharacters(in: .whitespaces) }
            }
        }
        return found
    }

    /// The answer to a refused request: the same JSON shape as every API answer.
    static func refusal(_ status: HTTPResponse.Status, _ message: String, code: String) -> Response {
        var response = ObservabilityResponders.json(status, AnswerJSON.error(message, code: code))
        if status == .unauthorized { response.headers[.wwwAuthenticate] = #"Bearer realm="hub""# }
        return response
    }

    static func redirect(to location: String, cookies: [String] = []) -> Response {
        var headers: HTTPFields = [.location: location, .cacheControl: "no-store"]
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie)) }
        return Response(status: .seeOther, headers: headers)
    }
}
