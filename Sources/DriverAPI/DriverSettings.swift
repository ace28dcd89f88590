/// A driver's settings object, read with clear errors: every problem names the driver, the device,
/// the key and what was expected. Keys the driver does not know are errors too (a typo must not pass
/// silently). A thin wording layer over HubJSON's `JSONObjectReader`, which does the type checks.
///
/// A key set to `null` reads as absent (its default applies).
public struct DriverSettings: Sendable {
    /// The device whose settings these are (named in every error).
    public let deviceId: String
    /// The driver the settings are for (named in every error).
    public let driver: String
    /// The settings object; read nested values with it (`reader.object("rooms")`) and pass its errors
    /// through `error(_:)` to get this type's wording.
    public let reader: JSONObjectReader

    /// Parses `configuration.settingsJSON` and refuses keys outside `allowed`.
    /// - Parameters:
    ///   - configuration: The device's configuration; empty settings text means "no settings".
    ///   - allowed: Every key this driver knows.
    /// - Throws: `DriverError` when the text is not valid JSON, is not an object, or has a key
    ///   outside `allowed` (the message names the key and lists the known ones).
    public init(_ configuration: DriverConfiguration, allowed: Set<String>) throws {
        deviceId = configuration.deviceId
        driver = configuration.driver
        let subject = "\(configuration.driver) settings of device \"\(configuration.deviceId)\""
        do {
            reader = try JSONObjectReader(parsing: configuration.settingsJSON)
        } catch is JSONParseError {
            throw DriverError("\(subject) are not valid JSON")
        } catch {
            throw DriverError("\(subject) must be a JSON object")
        }
        do { try reader.allow(Array(allowed)) } catch { throw self.error(error) }
    }

    /// The reader's error in the wording of driver settings.
    /// - Parameter error: An error from `reader` (or a reader nested in it).
    /// - Returns: A `DriverError` naming the driver, the device and the key.
    public func error(_ error: JSONFieldError) -> DriverError {
        let subject = "\(driver) settings of device \"\(deviceId)\""
        switch error.kind {
        case .notAnObject where error.path.isEmpty: return DriverError("\(subject) must be a JSON object")
        case .notAnObject: return DriverError("\(driver) setting \"\(error.path)\" of device \"\(deviceId)\" must be a JSON object")
        case .unknownKey(let known):
            return DriverError("\(subject) have an unknown key \"\(error.path)\" (known: \(known.joined(separator: ", ")))")
        case .missing: return DriverError("\(subject) need \"\(error.path)\"")
        case .wrongType(let expected):
            return DriverError("\(driver) setting \"\(error.path)\" of device \"\(deviceId)\" must be \(expected)")
        case .invalid(let message): return DriverError("\(driver) setting \"\(error.path)\" of device \"\(deviceId)\" \(message)")
        }
    }

    /// Whether `key` is set (present and not null).
    /// - Parameter key: A settings key.
    /// - Returns: `true` when the settings give a value for `key`.
    public func has(_ key: String) -> Bool { reader.has(key) }

    /// A non-empty string, trimmed of surrounding spaces.
    /// - Parameters:
    ///   - key: A settings key.
    ///   - defaultValue: The value when `key` is absent; `nil` makes the key required.
    /// - Returns: The trimmed string, or `defaultValue`.
    /// - Throws: `DriverError` when the key is required and absent, or its value is not a non-empty string.
    public func string(_ key: String, default defaultValue: String? = nil) throws -> String {
        let raw: String?
        do { raw = try reader.string(key) } catch { throw self.error(reader.wrongType(key, "a non-empty string")) }
        guard let raw else {
            if let defaultValue { return defaultValue }
            throw self.error(JSONFieldError(path: key, kind: .missing))
        }
        let trimmed = raw.trimmingSpaces()
        guard !trimmed.isEmpty else { throw self.error(reader.wrongType(key, "a non-empty string")) }
        return trimmed
    }

    /// A whole number in `range`.
    /// - Parameters:
    ///   - key: A settings key.
    ///   - defaultValue: The value when `key` is absent.
    ///   - range: The accepted values.
    /// - Returns: The number, or `defaultValue`.
    /// - Throws: `DriverError` when the value is not a whole number in `range`.
    public func int(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        do { return try reader.integer(key, in: range) ?? defaultValue } catch { throw self.error(error) }
    }

    /// A number in `range`.
    /// - Parameters:
    ///   - key: A settings key.
    ///   - defaultValue: The value when `key` is absent.
    ///   - range: The accepted values.
    /// - Returns: The number, or `defaultValue`.
    /// - Throws: `DriverError` when the value is not a number in `range`.
    public func double(_ key: String, default defaultValue: Double, in range: ClosedRange<Double>) throws -> Double {
        do { return try reader.number(key, in: range) ?? defaultValue } catch { throw self.error(error) }
    }

    /// `true` or `false`.
    /// - Parameters:
    ///   - key: A settings key.
    ///   - defaultValue: The value when `key` is absent.
    /// - Returns: The value, or `defaultValue`.
    /// - Throws: `DriverError` when the value is not a JSON boolean.
    public func bool(_ key: String, default defaultValue: Bool) throws -> Bool {
        do { return try reader.bool(key) ?? defaultValue } catch { throw self.error(error) }
    }

    /// An object of strings (`{"kitchen-gw":"kitchen"}`), values trimmed of surrounding spaces.
    /// - Parameter key: A settings key.
    /// - Returns: The map; empty when `key` is absent.
    /// - Throws: `DriverError` when the value is not an object, or a member is not a non-empty string
    ///   or has an empty name.
    public func stringMap(_ key: String) throws -> [String: String] {
        let pairs: [(String, String)]
        do { pairs = try reader.stringMap(key) ?? [] } catch { throw self.error(error) }
        var out: [String: String] = [:]
        for (name, value) in pairs {
            let trimmed = value.trimmingSpaces()
            guard !name.isEmpty, !trimmed.isEmpty else {
                throw self.error(reader.invalid(key, "must map names to non-empty strings (\"\(name)\" does not)"))
            }
            out[name] = trimmed
        }
        return out
    }
}

extension String {
    /// Without leading and trailing spaces (Unicode space separators) and tabs.
    func trimmingSpaces() -> String {
        let isSpace = { (c: Unicode.Scalar) in c == "\t" || c.properties.generalCategory == .spaceSeparator }
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !isSpace($0) }),
            let last = scalars.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(scalars[first...last])
    }
}
