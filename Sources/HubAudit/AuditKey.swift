import Crypto
import HubLog

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The hub's Ed25519 signing key for tree heads: `<data-dir>/audit/key`, the 32-byte private key,
/// mode 0600, made on first use. Only its public half leaves the hub (``publicKeyHex``, ``publicKeyPEM``).
public enum AuditKey {
    /// Reads the key at `path`, making it (random, mode 0600) when missing and `create` is true.
    ///
    /// - Throws: ``AuditError/badFile(_:)`` when the file is not 32 bytes, or missing and not made.
    public static func load(path: String, create: Bool) throws -> Curve25519.Signing.PrivateKey {
        if !FileIO.exists(path) {
            guard create else { throw AuditError.badFile("no audit key at \(path) (the hub makes it on its first start)") }
            let key = Curve25519.Signing.PrivateKey()
            let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
            try FileIO.writeAtomically(Array(key.rawRepresentation), to: path, directory: directory.isEmpty ? "." : directory, mode: 0o600)
            return key
        }
        let bytes = try FileIO.readAll(path: path)
        guard bytes.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: bytes) else {
            throw AuditError.badFile("\(path) is not an Ed25519 key (32 bytes expected, found \(bytes.count))")
        }
        return key
    }

    /// The public key as 64 hex digits (its 32 raw bytes, RFC 8032).
    public static func publicKeyHex(_ key: Curve25519.Signing.PublicKey) -> String { Hex.string(Array(key.rawRepresentation)) }

    /// The public key as a PEM `PUBLIC KEY` (SubjectPublicKeyInfo), as `openssl pkeyutl -verify -pubin` reads it.
    public static func publicKeyPEM(_ key: Curve25519.Signing.PublicKey) -> String {
        let der: [UInt8] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00] + Array(key.rawRepresentation)
        return "-----BEGIN PUBLIC KEY-----\n" + Base64.encode(der) + "\n-----END PUBLIC KEY-----\n"
    }

    /// A public key from 64 hex digits, or from a PEM `PUBLIC KEY` of an Ed25519 key.
    ///
    /// - Throws: ``AuditError/rejected(_:)`` when it is neither.
    public static func publicKey(parsing text: String) throws -> Curve25519.Signing.PublicKey {
        let trimmed = text.trimmingWhitespace
        if let raw = Hex.bytes(trimmed, count: 32), let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) { return key }
        let body = trimmed.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        if let der = Base64.decode(body), der.count == 44,
            der.prefix(12) == [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00],
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: der.suffix(32))
        {
            return key
        }
        throw AuditError.rejected("not an Ed25519 public key (64 hex digits, or a PEM PUBLIC KEY as `hub audit key --pem` prints)")
    }
}

extension String {
    var trimmingWhitespace: String {
        let bytes = Array(utf8)
        let isSpace: (UInt8) -> Bool = { $0 == 32 || $0 == 9 || $0 == 10 || $0 == 13 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}

/// Standard base64 (RFC 4648, with padding), for the PEM form of the public key.
enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let chunk = Array(bytes[i..<min(i + 3, bytes.count)])
            let n = (UInt32(chunk[0]) << 16) | (UInt32(chunk.count > 1 ? chunk[1] : 0) << 8) | UInt32(chunk.count > 2 ? chunk[2] : 0)
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            out.append(chunk.count > 1 ? alphabet[Int(n >> 6 & 63)] : 61)
            out.append(chunk.count > 2 ? alphabet[Int(n & 63)] : 61)
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for c in text.utf8 where c != 61 {
            guard let v = alphabet.firstIndex(of: c) else { return nil }
            values.append(UInt8(v))
        }
        var out: [UInt8] = []
        var i = 0
        while i + 1 < values.count {
            let a = UInt32(values[i]), b = UInt32(values[i + 1])
            let c = i + 2 < values.count ? UInt32(values[i + 2]) : 0, d = i + 3 < values.count ? UInt32(values[i + 3]) : 0
            let n = a << 18 | b << 12 | c << 6 | d
            out.append(UInt8(n >> 16 & 255))
            if i + 2 < values.count { out.append(UInt8(n >> 8 & 255)) }
            if i + 3 < values.count { out.append(UInt8(n & 255)) }
            i += 4
        }
        return out
    }
}
