import Crypto
import HubDomain
import HubLog

/// A signed tree head: the size and root of the tree over the log's first `size` records at a
/// time, signed with the hub's Ed25519 key (``AuditKey``).
///
/// The signature covers these bytes (ASCII, single spaces, no newline):
///
///     hub-tree-head/1 <size in decimal> <root in 64 lowercase hex digits> <time>
///
/// where `<time>` is the head's `time` exactly as written (ISO-8601 UTC, whole seconds, `Z`).
/// A head is written as one JSON line, keys in this order:
///
///     {"size":40,"root":"<hex>","time":"2026-11-27T12:00:00Z","signature":"<128 hex digits>"}
public struct SignedHead: Sendable, Equatable {
    /// Records (leaves) in the tree.
    public var size: UInt64
    /// The tree's root hash (32 bytes).
    public var root: [UInt8]
    /// When it was signed: ISO-8601 UTC, whole seconds, e.g. `2026-11-27T12:00:00Z`.
    public var time: String
    /// The Ed25519 signature (64 bytes) over ``signedBytes``.
    public var signature: [UInt8]

    /// The bytes the signature covers.
    public static func signedBytes(size: UInt64, root: [UInt8], time: String) -> [UInt8] {
        Array("hub-tree-head/1 \(size) \(LogVerifier.hex(root)) \(time)".utf8)
    }

    /// The bytes the signature covers, for this head.
    public var signedBytes: [UInt8] { Self.signedBytes(size: size, root: root, time: time) }

    /// Signs a head with `key`.
    public static func sign(size: UInt64, root: [UInt8], time: String, key: Curve25519.Signing.PrivateKey) throws -> SignedHead {
        let signature = try key.signature(for: signedBytes(size: size, root: root, time: time))
        return SignedHead(size: size, root: root, time: time, signature: Array(signature))
    }

    /// Whether the signature is `publicKey`'s over this head.
    public func isSigned(by publicKey: Curve25519.Signing.PublicKey) -> Bool {
        publicKey.isValidSignature(signature, for: signedBytes)
    }

    /// The head as one JSON line (no newline).
    public var line: String {
        JSONValue.object([
            ("size", .number(Double(size))), ("root", .string(LogVerifier.hex(root))),
            ("time", .string(time)), ("signature", .string(LogVerifier.hex(signature)))
        ]).serialized()
    }

    /// Reads a head's JSON line.
    ///
    /// - Throws: ``AuditError/rejected(_:)`` naming the key that is missing or malformed.
    public init(line: String) throws {
        guard let value = try? JSONValue.parse(line), value.objectValue != nil else {
            throw AuditError.rejected("a tree head is a JSON object: {\"size\":..,\"root\":..,\"time\":..,\"signature\":..}")
        }
        guard let size = value["size"]?.doubleValue, size >= 0, size.rounded() == size, size < 9e15 else {
            throw AuditError.rejected("the head's \"size\" must be a whole number")
        }
        guard let root = value["root"]?.stringValue.flatMap({ Hex.bytes($0, count: 32) }) else {
            throw AuditError.rejected("the head's \"root\" must be 64 hex digits")
        }
        guard let time = value["time"]?.stringValue else { throw AuditError.rejected("the head's \"time\" must be a string") }
        guard let signature = value["signature"]?.stringValue.flatMap({ Hex.bytes($0, count: 64) }) else {
            throw AuditError.rejected("the head's \"signature\" must be 128 hex digits")
        }
        self.init(size: UInt64(size), root: root, time: time, signature: signature)
    }

    /// A head from its parts (the signature is not checked).
    public init(size: UInt64, root: [UInt8], time: String, signature: [UInt8]) {
        self.size = size
        self.root = root
        self.time = time
        self.signature = signature
    }
}

/// Hex digits to bytes and back.
public enum Hex {
    /// The bytes of `text` (hex digits, either case), or nil when it is not `count` bytes of hex.
    public static func bytes(_ text: String, count: Int? = nil) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, count.map({ $0 * 2 == digits.count }) ?? true else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var i = 0
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    /// Lowercase hex of `bytes`.
    public static func string(_ bytes: [UInt8]) -> String { LogVerifier.hex(bytes) }
}

/// The time a head is signed at, as it is written: ISO-8601 UTC, whole seconds.
public enum HeadTime {
    /// `seconds` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
    public static func format(unixSeconds seconds: Int64) -> String {
        // The domain's civil calendar, so no C library time zone is involved.
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = Civil.civilFromDays(days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }
}
