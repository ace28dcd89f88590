import Foundation

/// A driver's settings object, read with clear errors: every problem names the device, the key and
/// what was expected. Keys the driver does not know are errors too (a typo must not pass silently).
public struct DriverSettings: Sendable {
    public let deviceId: String
    public let driver: String
    private let values: [String: SettingValue]

    enum SettingValue: Sendable {
        case string(String), number(Double), bool(Bool), other(String)
    }

    /// Parses `configuration.settingsJSON` (empty text = no settings) and rejects keys outside `allowed`.
    public init(_ configuration: DriverConfiguration, allowed: Set<String>) throws {
        deviceId = configuration.deviceId
        driver = configuration.driver
        let text = configuration.settingsJSON.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { values = [:]; return }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            throw DriverError("\(configuration.driver) settings of device \"\(configuration.deviceId)\" are not valid JSON")
        }
        guard let object = parsed as? [String: Any] else {
            throw DriverError("\(configuration.driver) settings of device \"\(configuration.deviceId)\" must be a JSON object")
        }
        var values: [String: SettingValue] = [:]
        for (key, value) in object {
            guard allowed.contains(key) else {
                throw DriverError("\(configuration.driver) settings of device \"\(configuration.deviceId)\" have an unknown key \"\(key)\" (known: \(allowed.sorted().joined(separator: ", ")))")
            }
            if let n = value as? NSNumber, String(cString: n.objCType) == "c" {  // JSON true/false
                values[key] = .bool(n.boolValue)
            } else if let n = value as? NSNumber {
                values[key] = .number(n.doubleValue)
            } else if let s = value as? String {
                values[key] = .string(s)
            } else {
                values[key] = .other(String(describing: type(of: value)))
            }
        }
        self.values = values
    }

    private func fail(_ key: String, _ expected: String) -> DriverError {
        DriverError("\(driver) setting \"\(key)\" of device \"\(deviceId)\" must be \(expected)")
    }

    public func has(_ key: String) -> Bool { values[key] != nil }

    /// A non-empty string; `nil` default = required.
    public func string(_ key: String, default defaultValue: String? = nil) throws -> String {
        switch values[key] {
        case .string(let s) where !s.trimmingCharacters(in: .whitespaces).isEmpty:
            return s.trimmingCharacters(in: .whitespaces)
        case nil:
            if let defaultValue { return defaultValue }
            throw DriverError("\(driver) settings of device \"\(deviceId)\" need \"\(key)\"")
        default:
            throw fail(key, "a non-empty string")
        }
    }

    /// A whole number in `range`.
    public func int(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        switch values[key] {
        case nil: return defaultValue
        case .number(let d) where d == d.rounded() && d >= Double(range.lowerBound) && d <= Double(range.upperBound):
            return Int(d)
        default: throw fail(key, "a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
    }

    /// A number in `range`.
    public func double(_ key: String, default defaultValue: Double, in range: ClosedRange<Double>) throws -> Double {
        switch values[key] {
        case nil: return defaultValue
        case .number(let d) where d >= range.lowerBound && d <= range.upperBound: return d
        default: throw fail(key, "a number from \(range.lowerBound) to \(range.upperBound)")
        }
    }

    public func bool(_ key: String, default defaultValue: Bool) throws -> Bool {
        switch values[key] {
        case nil: return defaultValue
        case .bool(let b): return b
        default: throw fail(key, "true or false")
        }
    }
}
