// A strict RFC 8259 JSON parser over bytes.

/// Why a text is not valid JSON: the byte offset and what the parser expected there.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset of the problem in the input.
    public var offset: Int
    /// What was expected (or what was wrong) at that offset.
    public var expected: String
    /// Creates an error.
    public init(offset: Int, expected: String) { self.offset = offset; self.expected = expected }
    /// "invalid JSON at byte <offset>: expected <expected>".
    public var description: String { "invalid JSON at byte \(offset): expected \(expected)" }
}

extension JSONValue {
    /// The deepest nesting of arrays and objects `parse` accepts; deeper input is refused, not recursed into.
    public static let maxDepth = 64

    /// Parses exactly one JSON text (surrounding whitespace allowed, nothing else). An object that
    /// names a key twice is refused (RFC 8259 leaves its meaning open; the hub never guesses it).
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        var p = JSONParser(bytes: bytes)
        p.skipWhitespace()
        let v = try p.parseValue(depth: 0)
        p.skipWhitespace()
        if p.i != bytes.count { throw JSONParseError(offset: p.i, expected: "end of input") }
        return v
    }

    /// Parses the string's UTF-8 bytes, as `parse(_:)` on bytes.
    public static func parse(_ string: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(string.utf8))
    }
}

struct JSONParser {
    let b: [UInt8]
    var i = 0

    init(bytes: [UInt8]) { b = bytes }

    mutating func skipWhitespace() {
        while i < b.count {
            switch b[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    func fail(_ expected: String) -> JSONParseError { JSONParseError(offset: i, expected: expected) }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard i < b.count else { throw fail("a value") }
        switch b[i] {
        case UInt8(ascii: "{"):
            guard depth < JSONValue.maxDepth else { throw fail("nesting depth at most \(JSONValue.maxDepth)") }
            return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["):
            guard depth < JSONValue.maxDepth else { throw fail("nesting depth at most \(JSONValue.maxDepth)") }
            return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw fail("a value")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let start = i
        let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        for c in w {
            guard i < b.count, b[i] == c else {
                throw JSONParseError(offset: start, expected: "\"\(word)\"")
            }
            i += 1
        }
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        i += 1  // {
        var members: [(String, JSONValue)] = []
        skipWhitespace()
        if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
        // Keys seen, once the object is large enough that a set beats a scan of `members`.
        var seen: Set<String>? = nil
        while true {
            skipWhitespace()
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail("a string key") }
            let keyStart = i
            let key = try parseString()
            if seen == nil, members.count >= 16 { seen = Set(members.map(\.0)) }
            let repeated = if seen != nil { !seen!.insert(key).inserted } else { members.contains { $0.0 == key } }
            if repeated {
                // `{"state":"ON","state":"OFF"}` is a question, not a command: never "the last one wins".
                let shown = JSONValue.string(key.count > 40 ? String(key.prefix(40)) + "..." : key).serialized()
                throw JSONParseError(offset: keyStart, expected: "each key once in an object (\(shown) is given twice)")
            }
            skipWhitespace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail("':'") }
            i += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append((key, value))
            skipWhitespace()
            guard i < b.count else { throw fail("',' or '}'") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            throw fail("',' or '}'")
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        i += 1  // [
        var items: [JSONValue] = []
        skipWhitespace()
        if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            guard i < b.count else { throw fail("',' or ']'") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            throw fail("',' or ']'")
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> Double {
        let start = i
        if b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count, isDigit(b[i]) else { throw fail("a digit") }
        if b[i] == UInt8(ascii: "0") {
            i += 1
            if i < b.count, isDigit(b[i]) { throw fail("no leading zeros") }
        } else {
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard i < b.count, isDigit(b[i]) else { throw fail("a digit after '.'") }
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard i < b.count, isDigit(b[i]) else { throw fail("a digit in the exponent") }
            while i < b.count, isDigit(b[i]) { i += 1 }
        }
        let text = String(decoding: b[start..<i], as: UTF8.self)
        guard let d = Double(text), d.isFinite else {
            throw JSONParseError(offset: start, expected: "a number within the range of a double")
        }
        return d
    }

    @inline(__always) func isDigit(_ c: UInt8) -> Bool { c >= 0x30 && c <= 0x39 }

    func hexValue(_ c: UInt8) -> UInt32? {
        switch c {
        case 0x30...0x39: return UInt32(c - 0x30)
        case 0x41...0x46: return UInt32(c - 0x41 + 10)
        case 0x61...0x66: return UInt32(c - 0x61 + 10)
        default: return nil
        }
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard b.count - i >= 4 else { throw fail("4 hex digits") }
        var v: UInt32 = 0
        for k in 0..<4 {
            guard let h = hexValue(b[i + k]) else {
                throw JSONParseError(offset: i + k, expected: "a hex digit")
            }
            v = v << 4 | h
        }
        i += 4
        return v
    }

    /// Parses a string starting at the opening quote; validates UTF-8 and escapes.
    mutating func parseString() throws(JSONParseError) -> String {
        i += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard i < b.count else { throw fail("'\"' to close the string") }
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return String(decoding: out, as: UTF8.self)
            }
            if c == UInt8(ascii: "\\") {
                i += 1
                guard i < b.count else { throw fail("an escape character") }
                let e = b[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    let escStart = i - 2
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar <= 0xDBFF {
                        guard b.count - i >= 6, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                            throw JSONParseError(offset: escStart, expected: "a low surrogate escape after a high surrogate")
                        }
                        i += 2
                        let low = try hex4()
                        guard low >= 0xDC00 && low <= 0xDFFF else {
                            throw JSONParseError(offset: i - 6, expected: "a low surrogate (\\uDC00-\\uDFFF)")
                        }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                        throw JSONParseError(offset: escStart, expected: "no lone low surrogate")
                    }
                    appendUTF8(scalar, to: &out)
                default:
                    throw JSONParseError(offset: i - 1, expected: "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)")
                }
                continue
            }
            if c < 0x20 { throw fail("no unescaped control character in a string") }
            if c < 0x80 { out.append(c); i += 1; continue }
            // Multi-byte UTF-8: validate strictly (no overlongs, no surrogates, <= U+10FFFF).
            let n: Int
            switch UTF8Check.sequence(in: b, at: i) {
            case .valid(let length): n = length
            case .invalid(let at): throw JSONParseError(offset: at, expected: "valid UTF-8")
            }
            out.append(contentsOf: b[i..<(i + n)])
            i += n
        }
    }

    func appendUTF8(_ s: UInt32, to out: inout [UInt8]) {
        switch s {
        case 0..<0x80: out.append(UInt8(s))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | (s >> 6))); out.append(UInt8(0x80 | (s & 0x3F)))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | (s >> 12))); out.append(UInt8(0x80 | ((s >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (s & 0x3F)))
        default:
            out.append(UInt8(0xF0 | (s >> 18))); out.append(UInt8(0x80 | ((s >> 12) & 0x3F)))
            out.append(UInt8(0x80 | ((s >> 6) & 0x3F))); out.append(UInt8(0x80 | (s & 0x3F)))
        }
    }
}
