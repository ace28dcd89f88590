import DriverAPI

/// Small JSON helpers over `JSONValue` for the Kasa protocol (driver and simulator).
/// Public so the simulator (a separate target) reads and writes JSON exactly as the driver does.
public enum KasaJSON {
    /// Serializes a JSON value to UTF-8 bytes, keys sorted (as the plug's own clients send them).
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        value.sortingKeys().write(to: &out)
        return out
    }

    /// Parses a payload that must be a JSON object.
    public static func parseObject(_ bytes: [UInt8]) throws(KasaProtocolError) -> JSONValue {
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(bytes)
        } catch {
            throw .notJSON(excerpt: excerpt(bytes))
        }
        guard case .object = parsed else { throw .notAnObject }
        return parsed
    }

    /// A printable excerpt of arbitrary bytes (at most 40 characters).
    public static func excerpt(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "(empty)" }
        var text = String(decoding: bytes.prefix(40), as: UTF8.self)
        text = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F || $0 == "\u{FFFD}" ? "." : Character($0) })
        return bytes.count > 40 ? text + "..." : text
    }

    /// A JSON number (not a boolean) as a Double.
    public static func double(_ value: JSONValue?) -> Double? {
        value?.doubleValue
    }

    /// A JSON whole number (or a boolean, as 0/1, which some clients send) as an Int.
    public static func int(_ value: JSONValue?) -> Int? {
        switch value {
        case .bool(let b)?: return b ? 1 : 0
        case .number(let d)?: return d == d.rounded() && abs(d) < 1e15 ? Int(d) : nil
        default: return nil
        }
    }
}

extension JSONValue {
    /// A whole number.
    public static func int(_ i: Int) -> JSONValue { .number(Double(i)) }
}
