// The hub's one strict reader of JSON objects: typed fields, paths in every error, unknown keys refused.

/// What a `JSONObjectReader` found wrong, with the path of the field it concerns.
///
/// `description` is the canonical wording (`unknown key mqtt.tls.ca (known: ca_file, cert_file)`,
/// `devices[0].id is required`, `mqtt.port must be a whole number from 1 to 65535`); readers with
/// their own wording (driver settings, command fields) map `kind` instead of parsing the text.
public struct JSONFieldError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with the field at `path`.
    public enum Kind: Sendable, Equatable {
        /// The value at `path` is not a JSON object.
        case notAnObject
        /// The key at `path` is not one of `known` (sorted).
        case unknownKey(known: [String])
        /// A required field is missing (or null).
        case missing
        /// The field is present but not what was expected (`expected` reads after "must be": "a string").
        case wrongType(expected: String)
        /// The field is well-typed but its value is not acceptable; `message` reads after the path.
        case invalid(message: String)
    }

    /// The dotted path of the field (`mqtt.tls.ca_file`, `devices[2].id`); "" for the top level.
    public var path: String
    /// What is wrong.
    public var kind: Kind

    /// Creates an error for the field at `path`.
    public init(path: String, kind: Kind) {
        self.path = path
        self.kind = kind
    }

    /// The last key of `path` ("" for the top level or an array element).
    public var key: String { JSONObjectReader.lastKey(of: path) }

    /// The canonical sentence, naming the path (see the type's comment for examples).
    public var description: String {
        switch kind {
        case .notAnObject: return path.isEmpty ? "the top level must be a JSON object" : "\(path) must be a JSON object"
        case .unknownKey(let known): return "unknown key \(path) (known: \(known.joined(separator: ", ")))"
        case .missing: return "\(path) is required"
        case .wrongType(let expected): return "\(path.isEmpty ? "the value" : path) must be \(expected)"
        case .invalid(let message): return path.isEmpty ? message : "\(path) \(message)"
        }
    }
}

/// Typed, strict access to one JSON object.
///
/// - A key given twice never reaches a reader: `JSONValue.parse` refuses it.
/// - A missing key and an explicit `null` both read as absent (`nil` from the optional accessors,
///   `.missing` from `require`).
/// - A present value of the wrong type is an error (`.wrongType`), never silently absent.
/// - `allow(_:)` refuses keys outside a known set (a typo must not pass silently); the error names
///   the key (with its path) and the known keys.
/// - Nested objects and arrays of objects get readers whose paths extend this one's
///   (`mqtt.tls`, `devices[0]`), so an error deep inside names where it is.
public struct JSONObjectReader: Sendable {
    /// The object's members, in document order.
    public let members: [(String, JSONValue)]
    /// This object's path ("" for the top level).
    public let path: String

    /// A reader over `value`.
    /// - Parameters:
    ///   - value: The value that must be an object.
    ///   - path: Where the value is, for error messages ("" for the top level).
    /// - Throws: `JSONFieldError` `.notAnObject` when `value` is not an object.
    public init(_ value: JSONValue, path: String = "") throws(JSONFieldError) {
        guard case .object(let members) = value else {
            throw JSONFieldError(path: path, kind: .notAnObject)
        }
        self.members = members
        self.path = path
    }

    private init(members: [(String, JSONValue)], path: String) {
        self.members = members
        self.path = path
    }

    /// A reader of the empty top-level object.
    public static let empty = JSONObjectReader(members: [], path: "")

    /// Parses `text` and reads it as an object.
    /// - Parameters:
    ///   - text: JSON text; empty (or only whitespace) reads as the empty object.
    ///   - path: Where the text came from, for error messages.
    /// - Throws: `JSONParseError` for invalid JSON, `JSONFieldError` when it is not an object.
    public init(parsing text: String, path: String = "") throws {
        let bytes = Array(text.utf8)
        let blank = bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        try self.init(blank ? .object([]) : JSONValue.parse(bytes), path: path)
    }

    /// The object itself.
    public var value: JSONValue { .object(members) }

    /// The keys present, in document order.
    public var keys: [String] { members.map(\.0) }

    /// The path of `key` in this object (`mqtt.port`).
    public func path(of key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Refuses every key outside `known` and `more`.
    /// - Parameters:
    ///   - known: The keys this object may have.
    ///   - more: More keys it may have (a transport's own), checked like `known`.
    /// - Throws: `JSONFieldError` `.unknownKey` for the first key (in document order) in neither.
    public func allow(_ known: [String], _ more: [String] = []) throws(JSONFieldError) {
        // A linear look: the lists are a few dozen keys at most, and a set of them made for every
        // object would cost more than it saves (commands arrive thousands of times a second).
        for (key, _) in members where !known.contains(key) && !more.contains(key) {
            throw JSONFieldError(path: path(of: key), kind: .unknownKey(known: Set(known).union(more).sorted()))
        }
    }

    /// The raw value under `key`, `nil` when missing or null. (A parsed object never names a key
    /// twice; one built in code that does reads as its last value, like `JSONValue`'s subscript.)
    public subscript(key: String) -> JSONValue? {
        for (k, v) in members.reversed() where k == key { return v.isNull ? JSONValue?.none : v }
        return nil
    }

    /// Whether `key` is present with a value other than null.
    public func has(_ key: String) -> Bool { self[key] != nil }

    /// An error about `key` whose value is unacceptable, worded like the reader's own errors.
    /// - Parameters:
    ///   - key: The field.
    ///   - message: What is wrong, read after the field's path ("is listed twice").
    /// - Returns: A `.invalid` error at `key`'s path.
    public func invalid(_ key: String, _ message: String) -> JSONFieldError {
        JSONFieldError(path: path(of: key), kind: .invalid(message: message))
    }

    /// An error about `key` whose value is not what was expected.
    /// - Parameters:
    ///   - key: The field.
    ///   - expected: What it must be, read after "must be" ("a whole number from 1 to 10").
    /// - Returns: A `.wrongType` error at `key`'s path.
    public func wrongType(_ key: String, _ expected: String) -> JSONFieldError {
        JSONFieldError(path: path(of: key), kind: .wrongType(expected: expected))
    }

    /// A required field.
    /// - Parameters:
    ///   - key: The field.
    ///   - read: One of this reader's optional accessors (`reader.string`), or a closure around one.
    /// - Returns: The value `read` found.
    /// - Throws: `JSONFieldError` `.missing` when `read` returns nil, and whatever `read` throws.
    public func require<T>(_ key: String, _ read: (String) throws(JSONFieldError) -> T?) throws(JSONFieldError) -> T {
        guard let value = try read(key) else { throw JSONFieldError(path: path(of: key), kind: .missing) }
        return value
    }

    /// A string, or nil when absent. Throws `.wrongType("a string")` for any other value.
    public func string(_ key: String) throws(JSONFieldError) -> String? {
        switch self[key] {
        case nil: return nil
        case .string(let s)?: return s
        default: throw wrongType(key, "a string")
        }
    }

    /// `true` or `false`, or nil when absent. Throws `.wrongType("true or false")` for any other value.
    public func bool(_ key: String) throws(JSONFieldError) -> Bool? {
        switch self[key] {
        case nil: return nil
        case .bool(let b)?: return b
        default: throw wrongType(key, "true or false")
        }
    }

    /// A number, or nil when absent. Throws `.wrongType("a number")` for any other value
    /// (a numeric string included).
    public func number(_ key: String) throws(JSONFieldError) -> Double? {
        switch self[key] {
        case nil: return nil
        case .number(let d)?: return d
        default: throw wrongType(key, "a number")
        }
    }

    /// A number within `range`, or nil when absent.
    /// - Throws: `.wrongType("a number from <lower> to <upper>")` for another value or one outside `range`.
    public func number(_ key: String, in range: ClosedRange<Double>) throws(JSONFieldError) -> Double? {
        let expected = "a number from \(range.lowerBound) to \(range.upperBound)"
        switch self[key] {
        case nil: return nil
        case .number(let d)? where range.contains(d): return d
        default: throw wrongType(key, expected)
        }
    }

    /// A whole number within `range`, or nil when absent.
    /// - Throws: `.wrongType("a whole number from <lower> to <upper>")` for another value, a fraction
    ///   or a number outside `range`.
    public func integer(_ key: String, in range: ClosedRange<Int>) throws(JSONFieldError) -> Int? {
        switch self[key] {
        case nil: return nil
        case .number(let d)? where d.rounded() == d && d >= Double(range.lowerBound) && d <= Double(range.upperBound):
            return Int(d)
        default: throw wrongType(key, "a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
    }

    /// A list of strings, or nil when absent. Throws `.wrongType("a list of strings")` otherwise.
    public func strings(_ key: String) throws(JSONFieldError) -> [String]? {
        switch self[key] {
        case nil: return nil
        case .array(let items)?:
            var out: [String] = []
            for item in items {
                guard case .string(let s) = item else { throw wrongType(key, "a list of strings") }
                out.append(s)
            }
            return out
        default: throw wrongType(key, "a list of strings")
        }
    }

    /// A list, or nil when absent. Throws `.wrongType("a list")` otherwise.
    public func array(_ key: String) throws(JSONFieldError) -> [JSONValue]? {
        switch self[key] {
        case nil: return nil
        case .array(let items)?: return items
        default: throw wrongType(key, "a list")
        }
    }

    /// A nested object's reader (its path extends this one's), or nil when absent.
    /// Throws `.notAnObject` at the key's path for any other value.
    public func object(_ key: String) throws(JSONFieldError) -> JSONObjectReader? {
        guard let v = self[key] else { return nil }
        return try JSONObjectReader(v, path: path(of: key))
    }

    /// Readers of a list of objects (paths `key[0]`, `key[1]`...), or nil when absent.
    /// Throws `.wrongType("a list")` when the value is not a list and `.notAnObject` for an item
    /// that is not an object.
    public func objects(_ key: String) throws(JSONFieldError) -> [JSONObjectReader]? {
        guard let items = try array(key) else { return nil }
        var readers: [JSONObjectReader] = []
        for (i, item) in items.enumerated() {
            readers.append(try JSONObjectReader(item, path: "\(path(of: key))[\(i)]"))
        }
        return readers
    }

    /// An object of strings (`{"kitchen-gw":"kitchen"}`) in document order, or nil when absent.
    /// Throws `.wrongType("an object of strings")` for another value or a member that is not a string.
    public func stringMap(_ key: String) throws(JSONFieldError) -> [(String, String)]? {
        guard let v = self[key] else { return nil }
        guard case .object(let members) = v else { throw wrongType(key, "an object of strings") }
        var out: [(String, String)] = []
        for (k, item) in members {
            guard case .string(let s) = item else { throw wrongType(key, "an object of strings") }
            out.append((k, s))
        }
        return out
    }

    static func lastKey(of path: String) -> String {
        guard !path.hasSuffix("]") else { return "" }
        return path.split(separator: ".").last.map(String.init) ?? ""
    }
}
