import DriverAPI

/// Reading Zigbee2MQTT's payloads as it publishes them: a device's state is one JSON object of
/// every attribute it knows (`{"state":"ON","power":12.5,"energy":1.25,"linkquality":87,...}`), with
/// `null` for what it has not read yet; availability is `{"state":"online"}` or, with its
/// `legacy_availability_payload` option, the bare word `online`.
enum Zigbee2MQTTPayload {
    /// A state message larger than this is not parsed (a plug's is a few hundred bytes).
    static let maxStateBytes = 64 * 1024
    /// The device list of a large network is several megabytes at most.
    static let maxDeviceListBytes = 16 * 1024 * 1024

    /// A JSON object, or why not (empty, too large, malformed, not an object).
    static func object(_ bytes: [UInt8]) -> Result<JSONValue, Problem> {
        guard !bytes.isEmpty else { return .failure(Problem("an empty payload")) }
        guard bytes.count <= maxStateBytes else { return .failure(Problem("\(bytes.count) bytes (limit \(maxStateBytes))")) }
        guard let value = try? JSONValue.parse(bytes) else { return .failure(Problem("not JSON: \(preview(bytes))")) }
        guard case .object = value else { return .failure(Problem("not a JSON object: \(preview(bytes))")) }
        return .success(value)
    }

    /// Availability: `{"state":"online"}` / `{"state":"offline"}`, or the legacy `online` / `offline`
    /// (any case, surrounding white space ignored).
    static func availability(_ bytes: [UInt8]) -> Result<Bool, Problem> {
        guard bytes.count <= 1024 else { return .failure(Problem("\(bytes.count) bytes, not an availability")) }
        let text = trimmed(String(decoding: bytes, as: UTF8.self))
        var word = text
        if text.hasPrefix("{") {
            guard let json = try? JSONValue.parse(bytes), let state = json["state"]?.stringValue else {
                return .failure(Problem("expected {\"state\":\"online\"} or {\"state\":\"offline\"}, got \(preview(bytes))"))
            }
            word = trimmed(state)
        }
        switch word.lowercased() {
        case "online": return .success(true)
        case "offline": return .success(false)
        default: return .failure(Problem("expected online or offline, got \(preview(bytes))"))
        }
    }

    /// A relay state: `"ON"` / `"OFF"` in any case; nil for `null`, `"TOGGLE"` or anything else.
    static func relay(_ value: JSONValue?) -> Bool? {
        guard let s = value?.stringValue else { return nil }
        switch trimmed(s).uppercased() {
        case "ON": return true
        case "OFF": return false
        default: return nil
        }
    }

    /// A finite number: a JSON number or a decimal number as text; nil for `null` and anything else.
    static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .number(let d)?: return d.isFinite ? d : nil
        case .string(let s)?:
            let t = trimmed(s)
            guard !t.isEmpty, t.count <= 40, t.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }),
                let d = Double(t), d.isFinite
            else { return nil }
            return d
        default: return nil
        }
    }

    /// The readings a state message carries for `endpoint` (keys `power`, or `power_<endpoint>`),
    /// in the hub's units: energy kWh -> Wh. Implausible values are dropped.
    static func readings(_ state: JSONValue, endpoint: String?) -> [(Quantity, Double)] {
        let suffix = endpoint.map { "_\($0)" } ?? ""
        var out: [(Quantity, Double)] = []
        for quantity in Zigbee2MQTTDriverFactory.meterQuantities {
            guard let raw = number(state[quantity.rawValue + suffix]) else { continue }
            let value = quantity == .energy ? raw * 1000 : raw
            guard let range = plausible[quantity], range.contains(value) else { continue }
            out.append((quantity, value == 0 ? 0 : value))
        }
        return out
    }

    /// What a plug can really report, in the hub's units (W, V, A, Wh); beyond is garbage.
    static let plausible: [Quantity: ClosedRange<Double>] = [
        .power: -100_000...100_000, .voltage: 0...1_000, .current: -500...500, .energy: 0...1e10
    ]

    /// Why a payload was not read, for the driver's diagnostics.
    struct Problem: Error, Equatable {
        var text: String
        init(_ text: String) { self.text = text }
    }

    /// At most 60 characters of the payload, quoted, for messages.
    static func preview(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes.prefix(60), as: UTF8.self)
        let shown = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return "\"\(shown)\"" + (bytes.count > 60 ? "..." : "")
    }

    static func trimmed(_ s: String) -> String {
        let scalars = s.unicodeScalars
        let isSpace = { (c: Unicode.Scalar) in c == " " || c == "\t" || c == "\n" || c == "\r" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(scalars[first...last])
    }
}
