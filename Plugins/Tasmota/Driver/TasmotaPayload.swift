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

    /// A relay state in the device's words (`StateText1`/`StateText2`, any case), else `ON`/`OFF`,
    /// `1`/`0` or `true`/`false`; nil for anything else (e.g. `TOGGLE`, `HOLD`, garbage).
    static func power(_ value: JSONValue?, words: TasmotaStateText = .standard) -> Bool? {
        switch value {
        case .string(let s)?: return power(s, words: words)
        case .bool(let b)?: return b
        case .number(let d)?: return d == 1 ? power("1", words: words) : d == 0 ? power("0", words: words) : nil
        default: return nil
        }
    }

    /// A relay state written as text (a payload such as `stat/<t>/POWER`), in the device's words first.
    static func power(_ text: String, words: TasmotaStateText = .standard) -> Bool? {
        words.read(text)
    }

    /// A JSON object, or nil for malformed, oversized, too deeply nested or non-object payloads.
    static func object(_ payload: [UInt8]) -> JSONValue? {
        guard !payload.isEmpty, payload.count <= maxJSONBytes, nestingIsShallow(payload) else { return nil }
        guard let parsed = try? JSONValue.parse(payload), case .object = parsed else { return nil }
        return parsed
    }

    /// The relay state under one of `names` in a JSON object (`{"POWER":"ON"}`, `{"POWER1":"off"}`).
    /// Key case is ignored (`Power`), as some firmwares and bridges rewrite it.
    static func power(in object: JSONValue, names: [String], words: TasmotaStateText = .standard) -> Bool? {
        for name in names {
            if let v = object[name] { return power(v, words: words) }
        }
        let upper = Set(names.map { $0.uppercased() })
        for (key, value) in object.objectValue ?? [] where upper.contains(key.uppercased()) { return power(value, words: words) }
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

    /// A field of a meter for `channel`: arrays are indexed; a scalar is the whole device's value,
    /// given only to a driver that is not `split` per outlet or channel (and then for channel 0),
    /// unless `shared` (the line voltage, which all channels share).
    static func channelValue(_ value: JSONValue?, channel: Int, split: Bool = false, shared: Bool = false) -> Double? {
        if let array = value?.arrayValue {
            guard channel >= 0, channel < array.count else { return nil }
            return number(array[channel])
        }
        guard shared || (!split && channel == 0) else { return nil }
        return number(value)
    }

    /// Readings (catalogue name, value in the catalogue's unit) from a `tele/<t>/SENSOR` object's
    /// `ENERGY` part, for meter channel `channel`. Absurd values are dropped.
    ///
    /// A multi-channel meter sends arrays (one element per channel) for what it measures per
    /// channel; with `SetOption129 0` (the default) `Total`, `Yesterday` and `Today` stay single
    /// numbers, the sum of the channels. So a scalar is the whole device's: a driver `split` per
    /// outlet or channel (one relay of several, or `energy_channel` above 0) never books it to its
    /// channel; only the line `Voltage` is shared by every channel.
    static func energyReadings(_ object: JSONValue, channel: Int, split: Bool = false) -> [(Quantity, Double)] {
        guard let energy = field(object, "ENERGY"), case .object = energy else { return [] }
        let split = split || channel > 0
        var readings: [(Quantity, Double)] = []
        if let w = channelValue(field(energy, "Power"), channel: channel, split: split), w >= 0, w <= 100_000 {
            readings.append((.power, w))
        }
        if let v = channelValue(field(energy, "Voltage"), channel: channel, shared: true), v >= 0, v <= 1_000 {
            readings.append((.voltage, v))
        }
        if let a = channelValue(field(energy, "Current"), channel: channel, split: split), a >= 0, a <= 1_000 {
            readings.append((.current, a))
        }
        // Total is kWh; the catalogue's energy is the device's own counter in Wh. Cap: 10 GWh.
        if let kWh = channelValue(field(energy, "Total"), channel: channel, split: split), kWh >= 0, kWh <= 10_000_000 {
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

/// A device's `StateText1`...`StateText4` (off, on, toggle, hold): the words it writes for relay
/// states. States are read in these words first (any case), then as `ON`/`OFF`, `1`/`0`,
/// `true`/`false`, so a device whose words are `["1","0"]` (inverted) reads `1` as off.
struct TasmotaStateText: Sendable, Equatable {
    /// The firmware's defaults.
    static let defaultWords = ["OFF", "ON", "TOGGLE", "HOLD"]
    /// The firmware's defaults.
    static let standard = TasmotaStateText(defaultWords)!

    /// All the words as given (2 to 4).
    let words: [String]
    private let off: String
    private let on: String

    /// The words, or nil unless 2 to 4 words of 1 to 32 characters with off and on different.
    init?(_ words: [String]) {
        let trimmed = words.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard (2...4).contains(trimmed.count), trimmed.allSatisfy({ !$0.isEmpty && $0.count <= 32 }) else { return nil }
        off = trimmed[0].lowercased()
        on = trimmed[1].lowercased()
        guard off != on else { return nil }
        self.words = trimmed
    }

    /// Whether these are the firmware's default words.
    var isStandard: Bool { words == Self.defaultWords }

    /// The state `text` says, nil when it says none.
    func read(_ text: String) -> Bool? {
        guard text.utf8.count <= 64 else { return nil }
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        if t == on { return true }
        if t == off { return false }
        switch t {
        case "on", "1", "true": return true
        case "off", "0", "false": return false
        default: return nil
        }
    }
}
