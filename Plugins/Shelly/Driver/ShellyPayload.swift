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

/// One Gen2+ component status as the hub reads it, or a part of it (NotifyStatus carries only what
/// changed): a `switch:<n>` or `pm1:<n>` status, or an `em1:<n>` / `em:<n>` status with its energy
/// from `em1data:<n>` / `emdata:<n>`. Fields are nil when absent or not plausible.
struct ShellySwitchStatus: Sendable, Equatable {
    /// The relay (`switch` only).
    var output: Bool?
    /// W (`apower`; `act_power` of `em1`, `total_act_power` of `em`).
    var apower: Double?
    /// V (none for `em`, which has three phases).
    var voltage: Double?
    /// A (`total_current` of `em`).
    var current: Double?
    /// Wh: `aenergy.total`; `total_act_energy` of `em1data`, `total_act` of `emdata`.
    var energyTotal: Double?
    /// Wh returned to the grid: `ret_aenergy.total`; `total_act_ret_energy` of `em1data`,
    /// `total_act_ret` of `emdata` (kept, not reported: the hub has no quantity for it).
    var returnedEnergyTotal: Double?
    /// temperature.tC, °C (the device's own temperature; kept, not reported).
    var temperatureC: Double?

    init() {}

    /// Reads the fields a `switch:<n>` or `pm1:<n>` object carries.
    init(json: JSONValue) {
        self.init(json: json, component: .switch)
    }

    /// Reads the fields of a `component` status object.
    /// - Parameters:
    ///   - json: The status object (or a NotifyStatus part of it).
    ///   - component: Which component it is the status of.
    init(json: JSONValue, component: ShellyComponent) {
        func number(_ key: String, _ range: ClosedRange<Double>) -> Double? {
            Plausible.check(ShellyPayload.number(json[key]), range)
        }
        func total(_ key: String) -> Double? {
            guard let object = json[key], case .object = object else { return nil }
            return Plausible.check(ShellyPayload.number(object["total"]), Plausible.energyWh)
        }
        switch component {
        case .switch, .pm1:
            if component == .switch { output = ShellyPayload.bool(json["output"]) }
            apower = number("apower", Plausible.power)
            voltage = number("voltage", Plausible.voltage)
            current = number("current", Plausible.current)
            energyTotal = total("aenergy")
            returnedEnergyTotal = total("ret_aenergy")
        case .em1:
            apower = number("act_power", Plausible.power)
            voltage = number("voltage", Plausible.voltage)
            current = number("current", Plausible.current)
        case .em:
            apower = number("total_act_power", Plausible.power)
            current = number("total_current", Plausible.current)
        }
        if let temperature = json["temperature"], case .object = temperature {
            temperatureC = Plausible.check(ShellyPayload.number(temperature["tC"]), -100...300)
        }
    }

    /// Reads the energy counters of an `em1data:<n>` or `emdata:<n>` object.
    /// - Parameters:
    ///   - energyData: The data component's status object.
    ///   - component: `.em1` (`em1data`) or `.em` (`emdata`).
    init(energyData json: JSONValue, of component: ShellyComponent) {
        let (total, returned) = component == .em ? ("total_act", "total_act_ret") : ("total_act_energy", "total_act_ret_energy")
        energyTotal = Plausible.check(ShellyPayload.number(json[total]), Plausible.energyWh)
        returnedEnergyTotal = Plausible.check(ShellyPayload.number(json[returned]), Plausible.energyWh)
    }

    /// This status with the fields `update` carries laid over it.
    func merging(_ update: ShellySwitchStatus) -> ShellySwitchStatus {
        var merged = self
        if let v = update.output { merged.output = v }
        if let v = update.apower { merged.apower = v }
        if let v = update.voltage { merged.voltage = v }
        if let v = update.current { merged.current = v }
        if let v = update.energyTotal { merged.energyTotal = v }
        if let v = update.returnedEnergyTotal { merged.returnedEnergyTotal = v }
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
