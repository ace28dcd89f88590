import DriverAPI
import Foundation

/// Reading Shelly payloads as real devices send them: JSON with extra or missing fields, numbers
/// that may arrive as strings, odd case and whitespace. Anything that is not a plausible value is
/// dropped (nil) rather than reported.
enum ShellyPayload {
    /// Payloads larger than this are not parsed (a status is a few hundred bytes).
    static let maxJSONBytes = 64 * 1024

    /// A JSON object, or nil (malformed, not an object, too large).
    static func object(_ bytes: [UInt8]) -> JSONValue? {
        guard !bytes.isEmpty, bytes.count <= maxJSONBytes, let value = try? JSONValue.parse(bytes),
            case .object = value
        else { return nil }
        return value
    }

    /// The payload as trimmed lower-case text.
    static func word(_ bytes: [UInt8]) -> String {
        guard bytes.count <= 256 else { return "" }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
    }

    /// A finite number: a JSON number or a numeric string (never a JSON boolean).
    static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .number(let d)?:
            return d.isFinite ? d : nil
        case .string(let s)?:
            return number(text: s)
        default:
            return nil
        }
    }

    /// A finite decimal number written as text ("12.5", " 7 "); not "nan", "inf" or hex.
    static func number(text: String) -> Double? {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !t.isEmpty, t.count <= 40,
            t.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }),
            let d = Double(t), d.isFinite
        else { return nil }
        return d
    }

    /// A boolean: JSON true/false, 0/1, or the words true/false, on/off, 1/0 in any case.
    static func bool(_ value: JSONValue?) -> Bool? {
        switch value {
        case .bool(let b)?:
            return b
        case .number(let d)?:
            return d == 1 ? true : d == 0 ? false : nil
        case .string(let s)?:
            return bool(word: s.trimmingCharacters(in: .whitespacesAndNewlines).lowercased())
        default:
            return nil
        }
    }

    static func bool(word: String) -> Bool? {
        switch word {
        case "true", "on", "1": return true
        case "false", "off", "0": return false
        default: return nil
        }
    }

    /// A whole number (JSON number or numeric string).
    static func int(_ value: JSONValue?) -> Int? {
        guard let d = number(value), d == d.rounded(), abs(d) < 9e15 else { return nil }
        return Int(d)
    }
}

/// The range of values a plug can really report; anything outside is garbage, never a reading.
enum Plausible {
    /// W (negative for devices that meter returned energy).
    static let power: ClosedRange<Double> = -100_000...100_000
    /// V.
    static let voltage: ClosedRange<Double> = 0...1_000
    /// A.
    static let current: ClosedRange<Double> = -500...500
    /// Wh: a cumulative counter (10 GWh is far beyond any plug's life).
    static let energyWh: ClosedRange<Double> = 0...1e10

    static func check(_ value: Double?, _ range: ClosedRange<Double>) -> Double? {
        guard let value, value.isFinite, range.contains(value) else { return nil }
        return value == 0 ? 0 : value  // no -0
    }
}

/// One Gen2/Gen3 `switch:<n>` status, or a part of it (NotifyStatus carries only what changed).
/// Fields are nil when absent or not plausible.
struct ShellySwitchStatus: Sendable, Equatable {
    var output: Bool?
    /// W.
    var apower: Double?
    var voltage: Double?
    var current: Double?
    /// aenergy.total, Wh.
    var energyTotal: Double?
    /// temperature.tC, °C (the device's own temperature; kept, not reported).
    var temperatureC: Double?

    init() {}

    /// Reads the fields a `switch:<n>` object carries.
    init(json: JSONValue) {
        output = ShellyPayload.bool(json["output"])
        apower = Plausible.check(ShellyPayload.number(json["apower"]), Plausible.power)
        voltage = Plausible.check(ShellyPayload.number(json["voltage"]), Plausible.voltage)
        current = Plausible.check(ShellyPayload.number(json["current"]), Plausible.current)
        if let aenergy = json["aenergy"], case .object = aenergy {
            energyTotal = Plausible.check(ShellyPayload.number(aenergy["total"]), Plausible.energyWh)
        }
        if let temperature = json["temperature"], case .object = temperature {
            temperatureC = Plausible.check(ShellyPayload.number(temperature["tC"]), -100...300)
        }
    }

    /// This status with the fields `update` carries laid over it.
    func merging(_ update: ShellySwitchStatus) -> ShellySwitchStatus {
        var merged = self
        if let v = update.output { merged.output = v }
        if let v = update.apower { merged.apower = v }
        if let v = update.voltage { merged.voltage = v }
        if let v = update.current { merged.current = v }
        if let v = update.energyTotal { merged.energyTotal = v }
        if let v = update.temperatureC { merged.temperatureC = v }
        return merged
    }

    /// The readings this (partial) status carries, in the hub's quantities and units.
    var readings: [(Quantity, Double)] {
        var out: [(Quantity, Double)] = []
        if let apower { out.append((.power, apower)) }
        if let voltage { out.append((.voltage, voltage)) }
        if let current { out.append((.current, current)) }
        if let energyTotal { out.append((.energy, energyTotal)) }
        return out
    }
}
