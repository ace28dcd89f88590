/// Where a JSON document is written a piece at a time: ``JSONText`` writes its compact text straight
/// into bytes, ``JSONBuilder`` builds the ``JSONValue``. A document written once against this
/// protocol reads the same both ways (`JSONText`'s bytes are `JSONBuilder`'s value serialised),
/// so a shape used for a hot path (the log's export lines, the audit tree's leaves) and for a
/// value (an HTTP response) is written down once.
///
/// In an object, ``key(_:)`` comes before each member's value.
public protocol JSONSink {
    /// `{`.
    mutating func beginObject()
    /// `}`.
    mutating func endObject()
    /// `[`.
    mutating func beginArray()
    /// `]`.
    mutating func endArray()
    /// The next member's key: a literal, written as it is (a key needs no escape).
    mutating func key(_ key: StaticString)
    /// A string value.
    mutating func string(_ s: String)
    /// A string value whose bytes `fill` appends, none of which needs an escape (an ISO-8601
    /// time, hex digits): no `String` of its own.
    mutating func plainString(_ fill: (inout [UInt8]) -> Void)
    /// A number (as ``JSONValue/number(_:)``: integral values without ".0", non-finite as null).
    mutating func number(_ d: Double)
    /// `true` or `false`.
    mutating func bool(_ b: Bool)
    /// `null`.
    mutating func null()
    /// A value already built.
    mutating func value(_ v: JSONValue)
}

extension JSONSink {
    /// A member: its key, then a string value, or null when `s` is nil.
    public mutating func member(_ key: StaticString, _ s: String?) {
        self.key(key)
        if let s { string(s) } else { null() }
    }

    /// A member with a number value.
    public mutating func member(_ key: StaticString, number d: Double) {
        self.key(key)
        number(d)
    }

    /// A member with a value already built.
    public mutating func member(_ key: StaticString, value v: JSONValue) {
        self.key(key)
        value(v)
    }
}

/// A JSON document's compact text, written straight into ``bytes``: what
/// ``JSONValue/write(to:)`` writes for the same document, without the value's tree.
public struct JSONText: JSONSink {
    /// The text so far, UTF-8.
    public var bytes: [UInt8]
    /// Whether the next value or key follows another in its container (a comma first).
    private var follows = false

    /// An empty text with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if follows { bytes.append(UInt8(ascii: ",")) }
    }

    /// Writes `{` (after a comma when a value precedes it).
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        follows = false
    }

    /// Writes `}`.
    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        follows = true
    }

    /// Writes `[` (after a comma when a value precedes it).
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        follows = false
    }

    /// Writes `]`.
    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        follows = true
    }

    /// Writes `"key":` (after a comma when a member precedes it).
    public mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        follows = false
    }

    /// Writes the string, escaped.
    public mutating func string(_ s: String) {
        separate()
        JSONValue.writeString(s, to: &bytes)
        follows = true
    }

    /// Writes `"`, the bytes `fill` appends, `"`.
    public mutating func plainString(_ fill: (inout [UInt8]) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        fill(&bytes)
        bytes.append(UInt8(ascii: "\""))
        follows = true
    }

    /// Writes the number as ``JSONValue/write(to:)`` does.
    public mutating func number(_ d: Double) {
        separate()
        JSONValue.writeNumber(d, to: &bytes)
        follows = true
    }

    /// Writes `true` or `false`.
    public mutating func bool(_ b: Bool) {
        separate()
        bytes.append(contentsOf: (b ? "true" : "false").utf8)
        follows = true
    }

    /// Writes `null`.
    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        follows = true
    }

    /// Writes the value's compact text.
    public mutating func value(_ v: JSONValue) {
        separate()
        v.write(to: &bytes)
        follows = true
    }
}

/// Builds the ``JSONValue`` of a document written to it; ``value`` once the outermost container is closed.
public struct JSONBuilder: JSONSink {
    /// An open object or array, with the key its next member takes.
    private enum Open {
        case object([(String, JSONValue)], key: String?)
        case array([JSONValue])
    }

    private var open: [Open] = []
    /// The document, once written (null before).
    public private(set) var value: JSONValue = .null

    /// An empty builder.
    public init() {}

    private mutating func add(_ v: JSONValue) {
        guard let top = open.popLast() else {
            value = v
            return
        }
        switch top {
        case .object(var members, let key):
            members.append((key ?? "", v))
            open.append(.object(members, key: nil))
        case .array(var items):
            items.append(v)
            open.append(.array(items))
        }
    }

    /// Opens an object.
    public mutating func beginObject() { open.append(.object([], key: nil)) }

    /// Closes the open object and adds it where it belongs.
    public mutating func endObject() {
        guard case .object(let members, _)? = open.popLast() else { preconditionFailure("endObject without an open object") }
        add(.object(members))
    }

    /// Opens an array.
    public mutating func beginArray() { open.append(.array([])) }

    /// Closes the open array and adds it where it belongs.
    public mutating func endArray() {
        guard case .array(let items)? = open.popLast() else { preconditionFailure("endArray without an open array") }
        add(.array(items))
    }

    /// Names the open object's next member.
    public mutating func key(_ key: StaticString) {
        guard case .object(let members, _)? = open.popLast() else { preconditionFailure("a key outside an object") }
        open.append(.object(members, key: key.description))
    }

    /// Adds a string.
    public mutating func string(_ s: String) { add(.string(s)) }

    /// Adds the string of the bytes `fill` appends.
    public mutating func plainString(_ fill: (inout [UInt8]) -> Void) {
        var bytes: [UInt8] = []
        fill(&bytes)
        add(.string(String(decoding: bytes, as: UTF8.self)))
    }

    /// Adds a number.
    public mutating func number(_ d: Double) { add(.number(d)) }
    /// Adds a Boolean.
    public mutating func bool(_ b: Bool) { add(.bool(b)) }
    /// Adds null.
    public mutating func null() { add(.null) }
    /// Adds the value.
    public mutating func value(_ v: JSONValue) { add(v) }
}
