import DriverAPI

/// The seed plug's wire format (see the project's tcp-powerplug reference): no delimiters, the first
/// byte is the message type and the type fixes the length. All multi-byte numbers are little-endian.
public enum PowerPlugProtocol {
    /// The port the chapter shows.
    public static let defaultPort = 230
    /// How many activation slots the plug has unless configured otherwise.
    public static let defaultSlots = 10
    /// Size of one activation record on the wire.
    public static let recordSize = 29
    /// Bytes of the NUL-padded name field.
    public static let nameFieldSize = 21
    /// Longest name that fits (one byte stays NUL).
    public static let maxNameLength = 20

    static let typeStatus: UInt8 = 0x53  // 'S'
    static let typeActivations: UInt8 = 0x41  // 'A'
    static let typeUpdate: UInt8 = 0x55  // 'U'
    static let typeDelete: UInt8 = 0x44  // 'D'

    /// Length of a whole activations message for `slots` slots.
    public static func activationsMessageLength(slots: Int) -> Int { 1 + slots * recordSize }

    /// Rolls a repeating activation whose window already passed forward to its next window:
    /// `while period > 0 && now > start + 60*length { start += 60*period }`.
    public static func rolledForward(_ activation: DeviceActivation, now: Int64) -> DeviceActivation {
        var a = activation
        let period = Int64(a.periodMinutes) * 60
        guard period > 0 else { return a }
        let end = a.start + Int64(a.lengthMinutes) * 60
        if now > end {
            // Same result as adding one period at a time, without looping for years of periods.
            let steps = (now - end + period - 1) / period
            a.start += steps * period
        }
        return a
    }
}

/// A violation of the wire format, naming what was wrong and where (offset in the byte stream).
public enum PowerPlugProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The first byte of a message is no known type.
    case unknownMessageType(UInt8, offset: Int)
    /// A status flag was neither 0 nor 1.
    case invalidFlag(UInt8, offset: Int)
    /// More bytes were buffered than the framer may hold.
    case bufferOverflow(limit: Int)

    /// The fault and its stream offset, as a person reads it.
    public var description: String {
        switch self {
        case .unknownMessageType(let byte, let offset):
            return "unknown message type \(hex(byte)) at stream byte \(offset)"
        case .invalidFlag(let byte, let offset):
            return "status flag \(hex(byte)) at stream byte \(offset) is neither 0 nor 1"
        case .bufferOverflow(let limit):
            return "more than \(limit) bytes buffered without a whole message"
        }
    }
}

func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return "0x" + (digits.count < 2 ? "0" + digits : digits)
}

/// Encoding and decoding of the 29-byte activation record, field by field.
public enum ActivationRecord {
    /// Appends the record for `activation` (or an empty slot for nil) to `bytes`.
    /// Throws a `DriverError` when the activation cannot be stored: the name must be 1 to 20 ASCII
    /// characters without NUL, the start must fit an unsigned 32-bit Unix time.
    public static func encode(_ activation: DeviceActivation?, into bytes: inout [UInt8]) throws {
        guard let activation else {
            bytes.append(contentsOf: repeatElement(0, count: PowerPlugProtocol.recordSize))
            return
        }
        let name = Array(activation.name.utf8)
        guard !name.isEmpty else { throw DriverError("an activation name must not be empty") }
        guard name.count <= PowerPlugProtocol.maxNameLength else {
            throw DriverError("activation name \"\(activation.name)\" is longer than \(PowerPlugProtocol.maxNameLength) characters")
        }
        guard name.allSatisfy({ $0 > 0 && $0 < 0x80 }) else {
            throw DriverError("activation name \"\(activation.name)\" must be plain ASCII")
        }
        guard activation.start >= 0 && activation.start <= Int64(UInt32.max) else {
            throw DriverError("activation \"\(activation.name)\" starts at \(activation.start), outside the plug's 32-bit clock")
        }
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: repeatElement(0, count: PowerPlugProtocol.nameFieldSize - name.count))
        appendLE(UInt32(activation.start), to: &bytes)
        appendLE(activation.lengthMinutes, to: &bytes)
        appendLE(activation.periodMinutes, to: &bytes)
    }

    /// The record's bytes (see `encode(_:into:)`).
    public static func encode(_ activation: DeviceActivation?) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(PowerPlugProtocol.recordSize)
        try encode(activation, into: &bytes)
        return bytes
    }

    /// Decodes the record at the start of `bytes` (at least 29 bytes); nil = empty slot.
    public static func decode<C: RandomAccessCollection>(_ bytes: C) -> DeviceActivation? where C.Element == UInt8, C.Index == Int {
        precondition(bytes.count >= PowerPlugProtocol.recordSize, "short activation record")
        let base = bytes.startIndex
        guard bytes[base] != 0 else { return nil }
        var nameBytes: [UInt8] = []
        for i in 0..<PowerPlugProtocol.nameFieldSize {
            let b = bytes[base + i]
            if b == 0 { break }
            nameBytes.append(b)
        }
        let start = readLE(bytes, at: base + 21, count: 4)
        let length = readLE(bytes, at: base + 25, count: 2)
        let period = readLE(bytes, at: base + 27, count: 2)
        return DeviceActivation(
            name: String(decoding: nameBytes, as: UTF8.self),
            start: Int64(start), lengthMinutes: UInt16(length), periodMinutes: UInt16(period))
    }

    static func appendLE<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        for i in 0..<(T.bitWidth / 8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> (8 * i)))
        }
    }

    static func readLE<C: RandomAccessCollection>(_ bytes: C, at index: Int, count: Int) -> UInt64
    where C.Element == UInt8, C.Index == Int {
        var value: UInt64 = 0
        for i in 0..<count {
            value |= UInt64(bytes[index + i]) << (8 * UInt64(i))
        }
        return value
    }
}

/// A message from the plug to its client.
public enum PlugMessage: Equatable, Sendable {
    /// `manual`: the load was forced by hand; `on`: the load's state.
    case status(manual: Bool, on: Bool)
    /// Every slot, used (non-nil) or empty (nil), in slot order.
    case activations([DeviceActivation?])

    /// The message's bytes. Throws when an activation cannot be encoded.
    public func encoded() throws -> [UInt8] {
        switch self {
        case .status(let manual, let on):
            return [PowerPlugProtocol.typeStatus, manual ? 1 : 0, on ? 1 : 0]
        case .activations(let slots):
            var bytes: [UInt8] = [PowerPlugProtocol.typeActivations]
            bytes.reserveCapacity(1 + slots.count * PowerPlugProtocol.recordSize)
            for slot in slots { try ActivationRecord.encode(slot, into: &bytes) }
            return bytes
        }
    }
}

/// A command from a client to the plug.
public enum PlugCommand: Equatable, Sendable {
    /// 'A': send the activations message.
    case list
    /// 'U' index record: store the record (nil = an empty record) in slot `index`.
    case update(index: UInt8, DeviceActivation?)
    /// 'D' index: clear slot `index`; later slots shift down.
    case delete(index: UInt8)
    /// 'S' state: 1 = manual mode with the load on, 0 = load off and automatic mode.
    case setSwitch(on: Bool)

    /// The command's bytes. Throws when the record cannot be encoded.
    public func encoded() throws -> [UInt8] {
        switch self {
        case .list:
            return [PowerPlugProtocol.typeActivations]
        case .update(let index, let activation):
            var bytes: [UInt8] = [PowerPlugProtocol.typeUpdate, index]
            try ActivationRecord.encode(activation, into: &bytes)
            return bytes
        case .delete(let index):
            return [PowerPlugProtocol.typeDelete, index]
        case .setSwitch(let on):
            return [PowerPlugProtocol.typeStatus, on ? 1 : 0]
        }
    }
}
