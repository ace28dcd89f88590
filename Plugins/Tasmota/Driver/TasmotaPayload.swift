import DriverAPI
import Foundation

/// Reading Tasmota payloads as devices really send them: capitalisation varies with firmware and
/// `StateText`, numbers may be strings, fields may be missing, multi-channel meters send arrays.
/// Nothing here throws or traps on hostile input; what cannot be read is nil.
enum TasmotaPayload {
    /// Largest JSON payload the driver parses (real STATE/SENSOR payloads are well under 4 KiB).
    static let maxJSONBytes = 32 * 1024
    /// Deepest JSON nesting the driver parses (real payloads nest 3 deep).
    static let maxJSONDepth = 32

    /// `Online` / `Offline` in any case (and surrounding whitespace); nil for anything else.
    static func availability(_ text: String) -> Bool? {
        switch text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() {
        case "online": return true
        case "offline": return false
        default: return nil
        }
    }

    /// A relay state: `ON`/`OFF` (any case), also `1`/`0` and `true`/`false`; nil for anything else
    /// (e.g. `TOGGLE`, `HOLD`, garbage).
    static func power(_ value: JSONValue?) -> Bool? {
        switch value {
        case .string(let s)?: return power(s)
        case .bool(let b)?: return b
        case .number(let d)?: return d == 1 ? true : d == 0 ? false : nil
        default: return nil
        }
    }

    /// A relay state written as text (a payload such as `stat/<t>/POWER`).
    static func power(_ text: String) -> Bool? {
        switch text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() {
        case "on", "1", "true": return true
        case "off", "0", "false": return false
        default: return nil
        }
    }

    /// A JSON object, or nil for malformed, oversized, too deeply nested or non-object payloads.
    static func object(_ payload: [UInt8]) -> JSONValue? {
        guard !payload.isEmpty, payload.count <= maxJSONBytes, nestingIsShallow(payload) else { return nil }
        guard let parsed = try? JSONValue.parse(payload), case .object = parsed else { return nil }
        return parsed
    }

    /// The relay state under one of `names` in a JSON object (`{"POWER":"ON"}`, `{"POWER1":"off"}`).
    /// Key case is ignored (`Power`), as some firmwares and bridges rewrite it.
    static func power(in object: JSONValue, names: [String]) -> Bool? {
        for name in names {
            if let v = object[name] { return power(v) }
        }
        let upper = Set(names.map { $0.uppercased() })
        for (key, value) in object.objectValue ?? [] where upper.contains(key.uppercased()) { return power(value) }
        return nil
    }

    /// A finite number from a JSON number or a numeric string (`"227"`, `" 0.5 "`); nil otherwise.
    static func number(_ value: JSONValue?) -> Double? {
        let d: Double?
        switch value {
        case .number(let n)?:
            d = n
        case .string(let s)?:
            let t = s.trimmingCharacters(in: .whitespacesAndNewlines)
            // Plain decimal only: Double("0x10"), "inf" and "nan" are not numbers a device sends.
            let plain =
                t.utf8.count <= 40
                && t.utf8.allSatisfy {
                    ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
                        || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
                }
            d = plain ? Double(t) : nil
        default:
            d = nil
        }
        guard let d, d.isFinite else { return nil }
        return d
    }

    /// A field of a meter for `channel`: arrays are indexed; a scalar applies to channel 0 only,
    /// unless `shared` (e.g. the line voltage, which all channels share).
    static func channelValue(_ value: JSONValue?, channel: Int, shared: Bool = false) -> Double? {
        if let array = value?.arrayValue {
            guard channel >= 0, channel < array.count else { return nil }
            return number(array[channel])
        }
        guard channel == 0 || shared else { return nil }
        return number(value)
    }

    /// Readings (catalogue name, value in the catalogue's unit) from a `tele/<t>/SENSOR` object's
    /// `ENERGY` part. Absurd values are dropped.
    static func energyReadings(_ object: JSONValue, channel: Int) -> [(Quantity, Double)] {
        guard let energy = field(object, "ENERGY"), case .object = energy else { return [] }
        var readings: [(Quantity, Double)] = []
        if let w = channelValue(field(energy, "Power"), channel: channel), w >= 0, w <= 100_000 {
            readings.append((.power, w))
        }
        if let v = channelValue(field(energy, "Voltage"), channel: channel, shared: true), v >= 0, v <= 1_000 {
            readings.append((.voltage, v))
        }
        if let a = channelValue(field(energy, "Current"), channel: channel), a >= 0, a <= 1_000 {
            readings.append((.current, a))
        }
        // Total is kWh; the catalogue's energy is the device's own counter in Wh. Cap: 10 GWh.
        if let kWh = channelValue(field(energy, "Total"), channel: channel), kWh >= 0, kWh <= 10_000_000 {
            readings.append((.energy, kWh * 1000))
        }
        return readings
    }

    /// `object[key]`, else the value of a key equal to it ignoring case.
    static func field(_ object: JSONValue, _ key: String) -> JSONValue? {
        if let v = object[key] { return v }
        let upper = key.uppercased()
        return object.objectValue?.first(where: { $0.0.uppercased() == upper })?.1
    }

    /// Bracket depth outside strings stays within `maxJSONDepth` (protects the parser's stack).
    private static func nestingIsShallow(_ payload: [UInt8]) -> Bool {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in payload {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                if depth > maxJSONDepth { return false }
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
        }
        return true
    }
}
