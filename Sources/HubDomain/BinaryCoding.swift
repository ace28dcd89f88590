// Little-endian binary primitives for event payloads.
// Strings: u32 length + UTF-8. Double: bit pattern as u64. Optionals: presence byte (0/1).
// Enums and Bool: u8.

/// Why a payload (binary or JSON) could not be turned into an event.
public struct DecodingFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The event type's name.
    public var type: String
    /// The schema version being decoded.
    public var schemaVersion: UInt16
    /// The field being read, or "" when the failure is about the whole payload.
    public var field: String
    /// What was wrong (human-readable).
    public var reason: String

    /// Creates a failure.
    public init(type: String, schemaVersion: UInt16, field: String, reason: String) {
        self.type = type; self.schemaVersion = schemaVersion; self.field = field; self.reason = reason
    }

    /// "cannot decode <type> v<version>[, field '<field>']: <reason>".
    public var description: String {
        if field.isEmpty {
            return "cannot decode \(type) v\(schemaVersion): \(reason)"
        }
        return "cannot decode \(type) v\(schemaVersion), field '\(field)': \(reason)"
    }
}

/// Appends little-endian values to a byte array.
public struct ByteWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// An empty writer, with room for `capacity` bytes.
    public init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends one byte.
    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    /// Appends a Bool as one byte, 0 or 1.
    public mutating func bool(_ v: Bool) { bytes.append(v ? 1 : 0) }

    /// Appends 2 bytes, little-endian.
    public mutating func u16(_ v: UInt16) {
        bytes.append(UInt8(truncatingIfNeeded: v))
        bytes.append(UInt8(truncatingIfNeeded: v >> 8))
    }

    /// Appends 4 bytes, little-endian.
    public mutating func u32(_ v: UInt32) {
        var x = v
        for _ in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: x)); x >>= 8 }
    }

    /// Appends 8 bytes, little-endian.
    public mutating func u64(_ v: UInt64) {
        var x = v
        for _ in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: x)); x >>= 8 }
    }

    /// Appends a signed 64-bit value as its two's-complement u64.
    public mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    /// Appends a Double as its IEEE 754 bit pattern (u64).
    public mutating func f64(_ v: Double) { u64(v.bitPattern) }

    /// Appends a u32 byte count, then the UTF-8 bytes.
    public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            u32(UInt32(buf.count))
            bytes.append(contentsOf: buf)
        }
    }

    /// Appends a presence byte (0 or 1), then the string when present.
    public mutating func optionalString(_ s: String?) {
        if let s { u8(1); string(s) } else { u8(0) }
    }
}

/// Reads little-endian values from a raw buffer; every read names its field for errors.
public struct ByteReader {
    /// The payload being read (borrowed: valid only while the caller holds it).
    public let buffer: UnsafeRawBufferPointer
    /// The position of the next read.
    public private(set) var offset: Int
    /// The event type's name, for errors.
    public let type: String
    /// The schema version, for errors.
    public let schemaVersion: UInt16

    /// A reader at the start of `buffer`; `type` and `schemaVersion` name the payload in errors.
    public init(_ buffer: UnsafeRawBufferPointer, type: String, schemaVersion: UInt16) {
        self.buffer = buffer; self.offset = 0; self.type = type; self.schemaVersion = schemaVersion
    }

    /// A failure naming this payload and `field`.
    public func failure(_ field: StaticString, _ reason: String) -> DecodingFailure {
        DecodingFailure(type: type, schemaVersion: schemaVersion, field: "\(field)", reason: reason)
    }

    @inline(__always)
    private mutating func need(_ n: Int, _ field: StaticString) throws(DecodingFailure) {
        if buffer.count - offset < n {
            throw failure(field, "truncated: need \(n) byte(s) at offset \(offset), have \(buffer.count - offset)")
        }
    }

    /// Reads one byte; throws when the payload is truncated.
    @inline(__always)
    public mutating func u8(_ field: StaticString) throws(DecodingFailure) -> UInt8 {
        try need(1, field)
        let v = buffer[offset]
        offset += 1
        return v
    }

    /// Reads a Bool byte; throws unless it is 0 or 1.
    public mutating func bool(_ field: StaticString) throws(DecodingFailure) -> Bool {
        let v = try u8(field)
        switch v {
        case 0: return false
        case 1: return true
        default: throw failure(field, "invalid boolean byte \(v)")
        }
    }

    /// Reads 2 bytes, little-endian; throws when truncated.
    @inline(__always)
    public mutating func u16(_ field: StaticString) throws(DecodingFailure) -> UInt16 {
        try need(2, field)
        let v = UInt16(buffer[offset]) | UInt16(buffer[offset + 1]) << 8
        offset += 2
        return v
    }

    /// Reads 4 bytes, little-endian; throws when truncated.
    @inline(__always)
    public mutating func u32(_ field: StaticString) throws(DecodingFailure) -> UInt32 {
        try need(4, field)
        let v = buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        offset += 4
        return UInt32(littleEndian: v)
    }

    /// Reads 8 bytes, little-endian; throws when truncated.
    @inline(__always)
    public mutating func u64(_ field: StaticString) throws(DecodingFailure) -> UInt64 {
        try need(8, field)
        let v = buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        offset += 8
        return UInt64(littleEndian: v)
    }

    /// Reads a two's-complement 64-bit value; throws when truncated.
    @inline(__always)
    public mutating func i64(_ field: StaticString) throws(DecodingFailure) -> Int64 {
        Int64(bitPattern: try u64(field))
    }

    /// Reads a Double from its bit pattern; throws when truncated.
    @inline(__always)
    public mutating func f64(_ field: StaticString) throws(DecodingFailure) -> Double {
        Double(bitPattern: try u64(field))
    }

    /// Reads a u32 byte count and that many bytes; throws when truncated or not valid UTF-8 (the offset stays before the bytes).
    public mutating func string(_ field: StaticString) throws(DecodingFailure) -> String {
        let n = Int(try u32(field))
        try need(n, field)
        let bytes = UnsafeBufferPointer(
            start: buffer.baseAddress.map { ($0 + offset).assumingMemoryBound(to: UInt8.self) },
            count: n)
        offset += n
        // Fast path: pure ASCII needs no validation beyond the high-bit check.
        var ascii = true
        for b in bytes where b & 0x80 != 0 { ascii = false; break }
        if ascii { return String(decoding: bytes, as: UTF8.self) }
        guard let s = String(validating: bytes, as: UTF8.self) else {
            offset -= n
            throw failure(field, "invalid UTF-8")
        }
        return s
    }

    /// Reads a presence byte then the string; throws on a presence byte other than 0 or 1.
    public mutating func optionalString(_ field: StaticString) throws(DecodingFailure) -> String? {
        let present = try u8(field)
        switch present {
        case 0: return nil
        case 1: return try string(field)
        default: throw failure(field, "invalid presence byte \(present)")
        }
    }

    /// Reads one byte and maps it with `make`; throws when `make` returns nil.
    public mutating func enumByte<E>(_ field: StaticString, _ make: (UInt8) -> E?) throws(DecodingFailure) -> E {
        let raw = try u8(field)
        guard let v = make(raw) else { throw failure(field, "invalid enum raw value \(raw)") }
        return v
    }

    /// Throws when bytes are left over.
    public func finish() throws(DecodingFailure) {
        if offset != buffer.count {
            throw DecodingFailure(
                type: type, schemaVersion: schemaVersion, field: "",
                reason: "\(buffer.count - offset) trailing byte(s) at offset \(offset)")
        }
    }
}
