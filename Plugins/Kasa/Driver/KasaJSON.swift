import Foundation

/// Small JSON helpers over Foundation's `JSONSerialization` (numbers arrive as `NSNumber`).
/// Public so the simulator (a separate target) reads and writes JSON exactly as the driver does.
public enum KasaJSON {
    /// Serializes a JSON object to UTF-8 bytes.
    public static func encode(_ object: [String: Any]) -> [UInt8] {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return Array("{}".utf8)
        }
        return Array(data)
    }

    /// Parses a payload that must be a JSON object.
    public static func parseObject(_ bytes: [UInt8]) throws(KasaProtocolError) -> [String: Any] {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            throw .notJSON(excerpt: excerpt(bytes))
        }
        guard let object = parsed as? [String: Any] else { throw .notAnObject }
        return object
    }

    /// A printable excerpt of arbitrary bytes (at most 40 characters).
    public static func excerpt(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "(empty)" }
        var text = String(decoding: bytes.prefix(40), as: UTF8.self)
        text = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F || $0 == "\u{FFFD}" ? "." : Character($0) })
        return bytes.count > 40 ? text + "..." : text
    }

    /// True when the value is a JSON true/false (Foundation gives an `NSNumber` of type char).
    public static func isBool(_ value: Any?) -> Bool {
        guard let n = value as? NSNumber else { return value is Bool }
        return String(cString: n.objCType) == "c"
    }

    /// A JSON number (not a boolean) as a Double.
    public static func double(_ value: Any?) -> Double? {
        if let n = value as? NSNumber { return isBool(n) ? nil : n.doubleValue }
        if let d = value as? Double { return d }
        if let i = value as? Int { return Double(i) }
        return nil
    }

    /// A JSON whole number (or a boolean, as 0/1, which some clients send) as an Int.
    public static func int(_ value: Any?) -> Int? {
        if let n = value as? NSNumber {
            if isBool(n) { return n.boolValue ? 1 : 0 }
            let d = n.doubleValue
            return d == d.rounded() && abs(d) < 1e15 ? Int(d) : nil
        }
        if let b = value as? Bool { return b ? 1 : 0 }
        if let i = value as? Int { return i }
        return nil
    }
}
