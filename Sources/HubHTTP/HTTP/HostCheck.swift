import HTTPTypes
import HubEngine
import Hummingbird

/// The names this listener answers to, as a middleware before every route (DNS rebinding): a page
/// of another site that points its own name at 127.0.0.1 reaches the hub with that name in `Host`,
/// and is refused (421, `unknown_host`) before any route runs.
///
/// Accepted `Host` values (the port is not looked at):
/// - always: `localhost` and names under `.localhost`, `127.0.0.0/8` and `[::1]`;
/// - the names in `http.allowed_hosts` (``HTTPSettings/allowedHosts``), and the address the
///   listener is bound to;
/// - off loopback, also any IPv4 or IPv6 address: an address cannot be rebound to another
///   machine, and those requests need a credential anyway (``HTTPAccess``).
///
/// A request without `Host` (HTTP/1.0) is let through: a browser always sends one.
package struct HostCheck: RouterMiddleware {
    package typealias Context = HubRequestContext

    /// The configured names and the bound host, lowercased.
    let names: Set<String>
    /// `http.allowed_hosts`, as the refusal lists them.
    let configured: [String]
    /// Bound to loopback: IP addresses other than loopback ones are refused too.
    let loopback: Bool

    package init(settings: HTTPSettings) {
        names = Set(settings.allowedHosts + [settings.host.lowercased()])
        configured = settings.allowedHosts
        loopback = settings.isLoopback
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // HTTP/1.1's Host header arrives as the request's authority.
        guard let host = request.head.authority ?? request.headers[HTTPAccess.hostHeader] else { return try await next(request, context) }
        if accepts(host) { return try await next(request, context) }
        var refusal = HTTPAccess.refusal(
            HTTPResponse.Status(code: 421, reasonPhrase: "Misdirected Request"),
            "this hub does not answer to the name \"\(Shown.text(host))\": a page of another site may be "
                + "using its own name to reach the hub (DNS rebinding). It answers to localhost, its loopback "
                + "addresses\(loopback ? "" : ", any IP address") and the names in http.allowed_hosts ("
                + (configured.isEmpty ? "none" : configured.joined(separator: ", "))
                + "); add the name there to use it", code: "unknown_host")
        refusal.headers[.connection] = "close"
        return refusal
    }

    /// Whether `Host: value` names this hub.
    func accepts(_ value: String) -> Bool {
        guard let name = Self.name(ofHost: value) else { return false }
        if names.contains(name) || Self.isLoopbackName(name) { return true }
        return !loopback && (Self.isIPv4(name) || name.contains(":"))
    }

    /// The host of a `Host` header without its port, lowercased, without a final dot; nil when
    /// it is not one (`[::1]:8080` -> `::1`, `Hub.Local.:80` -> `hub.local`).
    static func name(ofHost value: String) -> String? {
        var host = Substring(value.lowercased())
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let rest = host[host.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && rest.dropFirst().allSatisfy(\.isNumber)) else { return nil }
            host = host[host.index(after: host.startIndex)..<close]
            return host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) && !host.isEmpty ? String(host) : nil
        }
        if let colon = host.lastIndex(of: ":") {
            guard host.dropFirst(host.distance(from: host.startIndex, to: colon) + 1).allSatisfy(\.isNumber) else { return nil }
            host = host[..<colon]
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        guard !host.isEmpty, host.count <= 253,
            host.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "." || $0 == "_" })
        else { return nil }
        return String(host)
    }

    /// A name for `http.allowed_hosts`: a host name or address without scheme, port or path,
    /// lowercased; nil when it is not one.
    package static func configuredName(_ text: String) -> String? {
        let bracketed = text.contains(":") && !text.hasPrefix("[") ? "[\(text)]" : text
        guard let name = name(ofHost: bracketed), !text.hasSuffix(":") else { return nil }
        if !name.contains(":"), text.contains(":") { return nil }  // a port was given
        return name
    }

    static func isLoopbackName(_ name: String) -> Bool {
        name == "localhost" || name.hasSuffix(".localhost") || name == "::1" || name == "0:0:0:0:0:0:0:1"
            || (isIPv4(name) && name.hasPrefix("127."))
    }

    static func isIPv4(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && UInt8($0) != nil }
    }
}
