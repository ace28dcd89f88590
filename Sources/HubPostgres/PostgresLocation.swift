import Foundation
import HubLog

/// Where a PostgreSQL event log lives: host (or socket directory), port, user, password and database,
/// from a `postgres://user:password@host:port/database` URL with the usual `PG*` environment variables
/// (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`) filling what the URL leaves out; and
/// how the connection uses TLS, with libpq's names: `?sslmode=...&sslrootcert=...` in the URL, or
/// `PGSSLMODE` and `PGSSLROOTCERT`.
///
/// The password is never part of ``description``: every message names the log by it, masked.
public struct PostgresLocation: Sendable, Equatable, CustomStringConvertible {
    /// A host name or address, or a directory holding the server's Unix socket (starts with `/`).
    public var host: String
    /// The server's TCP port (5432 by default).
    public var port: Int
    /// The database user.
    public var user: String
    /// The password; nil for none (trust or peer authentication). Never printed.
    public var password: String?
    /// The database holding the log's tables.
    public var database: String
    /// Whether and how the connection is encrypted and the server checked (TCP only: a Unix socket
    /// stays on this machine, and libpq ignores `sslmode` there too).
    public var tls: TLSMode
    /// A PEM file of the certificate authorities to trust for `verify-ca` and `verify-full`
    /// (`sslrootcert`); nil: the system's trusted authorities.
    public var rootCertificate: String?

    /// libpq's `sslmode`, with its meanings.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Never TLS.
        case disable
        /// TLS when the server offers it, plain otherwise; the certificate is not checked (libpq's default).
        case prefer
        /// TLS or no connection; the certificate is not checked.
        case require
        /// TLS, and the server's certificate must be signed by a trusted authority.
        case verifyCA = "verify-ca"
        /// As `verify-ca`, and the certificate must name the host connected to.
        case verifyFull = "verify-full"
    }

    /// A location given part by part.
    public init(
        host: String, port: Int = 5432, user: String, password: String? = nil, database: String,
        tls: TLSMode = .prefer, rootCertificate: String? = nil
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.tls = tls
        self.rootCertificate = rootCertificate
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
        var parameters: [String: String] = [:]
        if let query = rest.firstIndex(of: "?") {
            parameters = try Self.parameters(rest[rest.index(after: query)...], url: url)
            rest = rest[..<query]
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
        if let port {
            self.port = port
        } else if let text = env("PGPORT") {
            guard let value = Int(text), (1...65535).contains(value) else {
                throw EventLogError.invalid("PGPORT \(text) is not a number from 1 to 65535")
            }
            self.port = value
        } else {
            self.port = 5432
        }
        self.user = (user.flatMap { $0.isEmpty ? nil : $0 }) ?? env("PGUSER") ?? "postgres"
        self.password = password ?? env("PGPASSWORD")
        self.database = path.removingPercentEncoding.flatMap { $0.isEmpty ? nil : $0 } ?? env("PGDATABASE") ?? self.user
        let mode = parameters["sslmode"] ?? env("PGSSLMODE") ?? TLSMode.prefer.rawValue
        guard let tls = TLSMode(rawValue: mode) else {
            let from = parameters["sslmode"] != nil ? "--log \(Self.masked(url)): sslmode" : "PGSSLMODE"
            throw EventLogError.invalid("\(from) \(mode) is not one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        self.tls = tls
        self.rootCertificate = parameters["sslrootcert"] ?? env("PGSSLROOTCERT")
    }

    /// The URL's `?name=value&...` part: only `sslmode` and `sslrootcert` are understood.
    static func parameters(_ query: Substring, url: String) throws -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0]), value = parts.count == 2 ? String(parts[1]).removingPercentEncoding ?? "" : ""
            guard name == "sslmode" || name == "sslrootcert" else {
                throw EventLogError.invalid(
                    "--log \(Self.masked(url)): URL parameter \(name) is not supported (only sslmode and sslrootcert; the PG* environment variables give the rest)"
                )
            }
            guard !value.isEmpty else { throw EventLogError.invalid("--log \(Self.masked(url)): \(name) has no value") }
            parameters[name] = value
        }
        return parameters
    }

    /// `postgres://user@host:port/database`, with `:***` where a password is set,
    /// and `?sslmode=` when it is not the default `prefer`.
    public var description: String {
        "postgres://\(user)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)"
            + (tls == .prefer ? "" : "?sslmode=\(tls.rawValue)")
    }

    /// `text` with the password part of a URL replaced by `***` (for messages about a URL that did not parse).
    public static func masked(_ text: String) -> String {
        guard let schemeEnd = text.range(of: "://"), let at = text[schemeEnd.upperBound...].lastIndex(of: "@") else { return text }
        let userInfo = text[schemeEnd.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }
}
