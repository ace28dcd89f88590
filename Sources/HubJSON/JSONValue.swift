// A small JSON value with ordered object keys, a deterministic compact serializer and helpers.
// The hub's one way to read and write JSON (the domain, the runtime, the driver API and the drivers);
// `JSONSink` writes a document straight into bytes without building a value.

/// A JSON value; object members keep their order, so serialising is deterministic.
public enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false` (never a number).
    case bool(Bool)
    /// A finite number (the parser refuses what a `Double` cannot hold).
    case number(Double)
    /// A string, valid Unicode.
    case string(String)
    /// A list.
    case array([JSONValue])
    /// Keys in insertion order (a repeated key is kept; reading it gives the last value).
    case object([(String, JSONValue)])

    /// Structural equality; objects compare their members in order.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.string(let a), .string(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for i in a.indices where a[i].0 != b[i].0 || a[i].1 != b[i].1 { return false }
            return true
        default: return false
        }
    }

    /// The value under `key` of an object; nil for other values or a missing key. `parse` refuses
    /// a key given twice; an object built in code with one reads as its last value.
    ///
    /// Setting replaces the value under `key` (its last occurrence), or appends the key; setting nil
    /// removes that occurrence. Setting on a value that is not an object changes nothing.
    public subscript(key: String) -> JSONValue? {
        get {
            guard case .object(let members) = self else { return nil }
            for (k, v) in members.reversed() where k == key { return v }
            return nil
        }
        set {
            guard case .object(var members) = self else { return }
            if let i = members.lastIndex(where: { $0.0 == key }) {
                if let newValue { members[i].1 = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append((key, newValue))
            }
            self = .object(members)
        }
    }

    /// The string, nil for other values.
    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    /// The number, nil for other values.
    public var doubleValue: Double? { if case .number(let d) = self { return d }; return nil }
    /// The Boolean, nil for other values.
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    /// True for `null`.
    public var isNull: Bool { if case .null = self { return true }; return false }
    /// The members of an object, in order; nil for other values.
    public var objectValue: [(String, JSONValue)]? { if case .object(let m) = self { return m }; return nil }
    /// The items of an array; nil for other values.
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }

    /// This value with the keys of every object (at any depth) sorted by their UTF-8 bytes, for
    /// peers and tests that expect sorted keys (`JSONSerialization`'s `.sortedKeys`).
    public func sortingKeys() -> JSONValue {
        switch self {
        case .array(let items): return .array(items.map { $0.sortingKeys() })
        case .object(let members):
            return .object(
                members.map { ($0.0, $0.1.sortingKeys()) }.sorted { Array($0.0.utf8).lexicographicallyPrecedes(Array($1.0.utf8)) })
        default: return self
        }
    }

    /// Compact, deterministic JSON text: keys in insertion order, integral numbers without ".0",
    /// control characters escaped as \u00XX. Non-finite numbers (not representable) become null.
    public func serialized() -> String {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the compact text of `serialized()` to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .number(let d): JSONValue.writeNumber(d, to: &out)
        case .string(let s): JSONValue.writeString(s, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (k, v)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(k, to: &out)
                out.append(UInt8(ascii: ":"))
                v.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Numbers: integral values within ±2^53 print as integers; others use Swift's
    /// shortest round-trip representation (always valid JSON for finite values).
    static func writeNumber(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite else { out.append(contentsOf: "null".utf8); return }
        if d == 0 {
            out.append(contentsOf: (d.sign == .minus ? "-0" : "0").utf8)
        } else if abs(d) <= 9_007_199_254_740_992 && Double(Int64(d)) == d {
            out.append(contentsOf: String(Int64(d)).utf8)
        } else {
            out.append(contentsOf: d.description.utf8)
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `s` as a JSON string literal (quotes, backslash and control characters escaped;
    /// everything else, `/` included, as is).
    public static func writeString(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        // Runs of bytes that need no escape are copied whole (most strings are one run).
        s.withUTF8 { bytes in
            var run = 0
            for i in bytes.indices {
                let c = bytes[i]
                guard c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") else { continue }
                if run < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i])) }
                writeEscaped(c, to: &out)
                run = i + 1
            }
            if run < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run...])) }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// The escape of one byte that JSON does not allow bare in a string: `"`, `\\` or a control character.
    private static func writeEscaped(_ c: UInt8, to out: inout [UInt8]) {
        switch c {
        case UInt8(ascii: "\""): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "\\"))
        case 0x0A: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "t"))
        case 0x08: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(UInt8(ascii: "\\")); out.append(UInt8(ascii: "f"))
        default:
            out.append(contentsOf: "\\u00".utf8)
            out.append(hexDigits[Int(c >> 4)])
            out.append(hexDigits[Int(c & 0xF)])
        }
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact serialised text.
    public var description: String { serialized() }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// A JSON string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A JSON number.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    /// A JSON number.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// A JSON Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// JSON `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A JSON array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// A JSON object, members in the order written.
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }
}
