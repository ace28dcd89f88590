import Foundation
import HubLog

/// Where a PostgreSQL event log lives: host (or socket directory), port, user, password and database,
/// from a `postgres://user:password@host:port/database` URL with the usual `PG*` environment variables
/// (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`) filling what the URL leaves out.
///
/// The password is never part of ``description``: every message names the log by it, masked.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    /// A host name or address, or a directory holding the server's Unix socket (starts with `/`).
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String

    /// A location given part by part.
    public init(host: String, port: Int = 5432, user: String, password: String? = nil, database: String) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
    }

    /// Whether `text` names a PostgreSQL log (`postgres://` or `postgresql://`).
    public static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// Parses a URL, filling the parts it leaves out from `environment` (`PG*`), then from defaults
    /// (host `localhost`, port 5432, user `postgres`, database named like the user).
    ///
    /// - Throws: ``EventLogError/invalid(_:)`` naming what is wrong (never the password).
    public init(url: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        guard let schemeEnd = url.range(of: "://"), Self.isURL(url) else {
            throw EventLogError.invalid("--log \(Self.masked(url)): not a postgres:// URL (postgres://user@host:5432/database)")
        }
        var rest = Substring(url[schemeEnd.upperBound...])
        if let query = rest.firstIndex(of: "?") {
            throw EventLogError.invalid("--log \(Self.masked(url)): URL parameters (\(rest[query...])) are not supported; use the PG* environment variables")
        }
        var path = ""
        if let slash = rest.firstIndex(of: "/") {
            path = String(rest[rest.index(after: slash)...])
            rest = rest[..<slash]
        }
        var userInfo: Substring? = nil
        if let at = rest.lastIndex(of: "@") {
            userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
        }
        var user: String? = nil, password: String? = nil
        if let userInfo {
            if let colon = userInfo.firstIndex(of: ":") {
                user = String(userInfo[..<colon]).removingPercentEncoding
                password = String(userInfo[userInfo.index(after: colon)...]).removingPercentEncoding
            } else {
                user = String(userInfo).removingPercentEncoding
            }
        }
        var host: String? = nil, port: Int? = nil
        if let colon = rest.lastIndex(of: ":"), !rest.hasSuffix("]") {
            let portText = rest[rest.index(after: colon)...]
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw EventLogError.invalid("--log \(Self.masked(url)): port \(portText) is not a number from 1 to 65535")
            }
            port = value
            rest = rest[..<colon]
        }
        if !rest.isEmpty { host = String(rest).removingPercentEncoding }
        let env = { (name: String) -> String? in environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        self.host = host ?? env("PGHOST") ?? "localhost"
        if let port { self.port = port } else if let text = env("PGPORT") {
            guard let value = Int(text), (1...65535).contains(value) else {
                throw EventLogError.invalid("PGPORT \(text) is not a number from 1 to 65535")
            }
            self.port = value
        } else { self.port = 5432 }
        self.user = (user.flatMap { $0.isEmpty ? nil : $0 }) ?? env("PGUSER") ?? "postgres"
        self.password = password ?? env("PGPASSWORD")
        self.database = path.removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 } ?? env("PGDATABASE") ?? self.user
    }

    /// `postgres://user@host:port/database`, with `:***` where a password is set.
    public var description: String {
        "postgres://\(user)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)"
    }

    /// `text` with the password part of a URL replaced by `***` (for messages about a URL that did not parse).
    public static func masked(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"), let at = text[schemeEnd.upperBound...].lastIndex(of: "@") else { return text }
        let userInfo = text[schemeEnd.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
