import HubEngine

/// Where `hub run` serves HTTP (`--http ADDRESS:PORT`, or `"http": {"listen": ...}` in the
/// configuration file; ``standard`` unless `--no-http` or `"http": false`): the JSON API, the
/// console, `/metrics`, `/healthz` and `/readyz`.
public struct HTTPSettings: Sendable, Equatable {
    /// `127.0.0.1:8080`: this machine only, where no credential is asked for.
    public static let standard = HTTPSettings(host: "127.0.0.1", port: 8080)

    /// An IPv4 or IPv6 address (or a host name) to bind.
    public var host: String
    /// 0 picks a free port (tests); ``HubService/httpPort()`` says which.
    public var port: Int
    /// Names a request's `Host` may carry besides the ones always accepted (``HostCheck``):
    /// `http.allowed_hosts`, such as `["hub.home.arpa"]`. Lowercase, without a port.
    public var allowedHosts: [String] = []
    /// A connection that sends no complete request head for this long is closed (an idle
    /// keep-alive connection, or one sending its head a byte at a time): `http.idle_timeout_seconds`.
    public var idleTimeout: Duration = .seconds(30)
    /// A request's body must arrive in full within this long of its head: `http.body_timeout_seconds`.
    public var bodyTimeout: Duration = .seconds(30)
    /// Connections served at once; more wait in the listen backlog until one closes:
    /// `http.max_connections`.
    public var maxConnections = 256

    /// Listen on `host:port`, with the default limits.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `ADDRESS:PORT` (`127.0.0.1:9480`, `[::1]:9480`, `0.0.0.0:9480`).
    ///
    /// - Throws: ``HubError/usage(_:)`` naming what is wrong (no port, a port out of range, an empty address).
    public init(parsing text: String) throws {
        guard let colon = text.lastIndex(of: ":") else {
            throw HubError.usage("HTTP address \"\(text)\": expected ADDRESS:PORT, such as 127.0.0.1:9480")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else {
            throw HubError.usage("HTTP address \"\(text)\": the address before the port is empty (use 127.0.0.1 for this machine only)")
        }
        guard host.contains(":") == text.hasPrefix("[") else {
            throw HubError.usage("HTTP address \"\(text)\": write an IPv6 address in brackets, such as [::1]:9480")
        }
        guard let port = Int(portText), (0...65535).contains(port) else {
            throw HubError.usage("HTTP address \"\(text)\": the port must be a number from 0 to 65535, not \"\(portText)\"")
        }
        self.init(host: host, port: port)
    }

    /// Bound to this machine only (127.0.0.0/8, ::1, `localhost`): requests need no credential
    /// (``HTTPAccess``). Any other address, `0.0.0.0` and `::` included, requires one.
    public var isLoopback: Bool {
        let h = host.lowercased()
        if h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// `host:port` as it was given (IPv6 in brackets).
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
