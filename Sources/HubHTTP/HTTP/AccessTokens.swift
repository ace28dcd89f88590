import Crypto
import Foundation
import HubDomain
import HubEngine
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The credentials of the HTTP listener off loopback: named tokens in `<data>/http/tokens.json`
/// (mode 0600, in a 0700 directory), each stored only as the SHA-256 of the token, so a copy of
/// the data directory does not give the tokens away. A token is shown once, when it is made
/// (`hub run`'s first start off loopback, `hub token rotate`); `hub token list` names them.
///
/// ```json
/// {"tokens": [{"name": "admin", "sha256": "9f86d0…", "created": "2026-11-23T16:30:00Z"}]}
/// ```
///
/// The file is read again whenever it changed, so a token rotated by `hub token rotate` while the
/// hub runs is refused from the next request on.
public final class AccessTokens: Sendable {
    /// One stored token: its name and digest, never the token.
    public struct Entry: Sendable, Equatable {
        /// The token's name (`admin`, or as given to `hub token`).
        public var name: String
        /// Lowercase hex SHA-256 of the token's UTF-8 bytes.
        public var sha256: String
        /// When it was made, ISO 8601 UTC.
        public var created: String
    }

    /// The token file.
    public let path: String
    /// The token file's modification time and size when last read, and what it held.
    private let cache = Mutex<(stamp: [Int], entries: [Entry])?>(nil)

    /// - Parameter dataDirectory: the hub's data directory; the file is `http/tokens.json` under it.
    public init(dataDirectory: String) {
        path = dataDirectory + "/http/tokens.json"
    }

    /// The tokens' names, in the file's order (empty when there is no file yet).
    ///
    /// - Throws: ``HubError/failed(_:)`` when the file cannot be read or is not a token file.
    public func entries() throws -> [Entry] {
        guard let stamp = Self.stamp(path) else { return [] }
        if let cached = cache.withLock({ $0 }), cached.stamp == stamp { return cached.entries }
        let entries = try Self.read(path)
        cache.withLock { $0 = (stamp, entries) }
        return entries
    }

    /// Makes the `name` token if the file has no token at all (the first start off loopback).
    ///
    /// - Returns: the new token, to be shown once; nil when tokens exist already.
    public func ensureOne(name: String = "admin") throws -> String? {
        guard try entries().isEmpty else { return nil }
        return try rotate(name: name)
    }

    /// Replaces the token called `name` (or adds it) with a new random one; the old one is refused
    /// from now on, with the browser sessions opened with it.
    ///
    /// - Returns: the new token (`hub_` and 43 characters), to be shown once.
    /// - Throws: ``HubError/usage(_:)`` for a bad name; ``HubError/failed(_:)`` when the file cannot be written.
    public func rotate(name: String) throws -> String {
        guard Identifier.isValid(name) else {
            throw HubError.usage("token name \"\(name)\": 1 to \(Identifier.maxLength) characters of A-Z, a-z, 0-9, _ and -")
        }
        let token = Self.newToken()
        var entries = try entries().filter { $0.name != name }
        entries.append(Entry(name: name, sha256: Self.digest(token), created: ISO8601.format(micros: currentMicros())))
        try write(entries)
        return token
    }

    /// The name of the token `token`, nil when it is no token of this hub.
    public func name(of token: String) -> String? {
        guard !token.isEmpty, let entries = try? entries() else { return nil }
        let digest = Self.digest(token)
        return entries.first { Self.same($0.sha256, digest) }?.name
    }

    /// The stored digest of the token called `name` (a session keeps it, so rotating ends the session).
    func digest(named name: String) -> String? {
        (try? entries())?.first { $0.name == name }?.sha256
    }

    // MARK: File

    private func write(_ entries: [Entry]) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw HubError.failed("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        let json = JSONValue.object([
            (
                "tokens",
                .array(
                    entries.map { e in
                        .object([("name", .string(e.name)), ("sha256", .string(e.sha256)), ("created", .string(e.created))])
                    })
            )
        ])
        let bytes = Array((json.serialized() + "\n").utf8)
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw HubError.failed("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == bytes.count, synced == 0, rename(temporary, path) == 0 else {
            throw HubError.failed("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        cache.withLock { $0 = nil }
    }

    static func read(_ path: String) throws -> [Entry] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HubError.failed("cannot read \(path)")
        }
        do {
            let root = try JSONObjectReader(try JSONValue.parse(Array(data)))
            try root.allow(["tokens"])
            return try (root.objects("tokens") ?? []).map { item in
                try item.allow(["name", "sha256", "created"])
                return Entry(
                    name: try item.require("name", item.string), sha256: try item.require("sha256", item.string),
                    created: try item.string("created") ?? "")
            }
        } catch {
            throw HubError.failed("\(path): not a token file: \(error)")
        }
    }

    /// Modification time (ns) and size, or nil when there is no file.
    static func stamp(_ path: String) -> [Int]? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return [info.st_mtim.tv_sec, info.st_mtim.tv_nsec, Int(info.st_size), Int(info.st_ino)]
    }

    // MARK: Tokens

    static func newToken() -> String {
        "hub_" + randomText(bytes: 32)
    }

    /// `bytes` random bytes as unpadded base64url.
    static func randomText(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let raw = (0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(raw).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func digest(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Compares without stopping at the first difference.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
