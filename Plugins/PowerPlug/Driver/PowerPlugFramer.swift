import DriverAPI

/// One direction of the wire format: which type bytes exist, how long each message is, how to decode it.
public protocol PowerPlugFrameFormat: Sendable {
    /// What one message decodes to.
    associatedtype Message: Sendable
    /// Whole length (type byte included) of a message starting with `type`; nil = unknown type.
    func length(ofType type: UInt8) -> Int?
    /// Decodes one whole message; `offset` is the stream offset of its first byte (for errors).
    func decode(_ bytes: ArraySlice<UInt8>, offset: Int) throws(PowerPlugProtocolError) -> Message
}

/// Plug -> client messages: status 'S' (3 bytes) and activations 'A' (1 + slots x 29 bytes).
public struct PlugMessageFormat: PowerPlugFrameFormat {
    /// The plug's activation slots, which fix the activations message's length.
    public let slots: Int
    /// The plug side's format for a plug with `slots` slots.
    public init(slots: Int = PowerPlugProtocol.defaultSlots) { self.slots = slots }

    /// 3 for a status, the activations message's length for 'A', nil for any other type byte.
    public func length(ofType type: UInt8) -> Int? {
        switch type {
        case PowerPlugProtocol.typeStatus: return 3
        case PowerPlugProtocol.typeActivations: return PowerPlugProtocol.activationsMessageLength(slots: slots)
        default: return nil
        }
    }

    /// A status or the activations list.
    /// - Throws: `PowerPlugProtocolError` for a flag other than 0 or 1 or a record that does not decode.
    public func decode(_ bytes: ArraySlice<UInt8>, offset: Int) throws(PowerPlugProtocolError) -> PlugMessage {
        let s = bytes.startIndex
        if bytes[s] == PowerPlugProtocol.typeStatus {
            return .status(manual: try flag(bytes[s + 1], offset + 1), on: try flag(bytes[s + 2], offset + 2))
        }
        var list: [DeviceActivation?] = []
        list.reserveCapacity(slots)
        for i in 0..<slots {
            let at = s + 1 + i * PowerPlugProtocol.recordSize
            list.append(ActivationRecord.decode(bytes[at..<(at + PowerPlugProtocol.recordSize)]))
        }
        return .activations(list)
    }

    private func flag(_ byte: UInt8, _ offset: Int) throws(PowerPlugProtocolError) -> Bool {
        switch byte {
        case 0: return false
        case 1: return true
        default: throw .invalidFlag(byte, offset: offset)
        }
    }
}

/// Client -> plug commands: 'A' (1 byte), 'U' (31), 'D' (2), 'S' (2).
public struct PlugCommandFormat: PowerPlugFrameFormat {
    /// The client side's format.
    public init() {}

    /// The length of each command type, nil for any other type byte.
    public func length(ofType type: UInt8) -> Int? {
        switch type {
        case PowerPlugProtocol.typeActivations: return 1
        case PowerPlugProtocol.typeUpdate: return 2 + PowerPlugProtocol.recordSize
        case PowerPlugProtocol.typeDelete: return 2
        case PowerPlugProtocol.typeStatus: return 2
        default: return nil
        }
    }

    /// One client command.
    /// - Throws: `PowerPlugProtocolError` when its fields do not decode.
    public func decode(_ bytes: ArraySlice<UInt8>, offset: Int) throws(PowerPlugProtocolError) -> PlugCommand {
        let s = bytes.startIndex
        switch bytes[s] {
        case PowerPlugProtocol.typeActivations:
            return .list
        case PowerPlugProtocol.typeUpdate:
            return .update(index: bytes[s + 1], ActivationRecord.decode(bytes[(s + 2)...]))
        case PowerPlugProtocol.typeDelete:
            return .delete(index: bytes[s + 1])
        default:
            switch bytes[s + 1] {
            case 0: return .setSwitch(on: false)
            case 1: return .setSwitch(on: true)
            default: throw .invalidFlag(bytes[s + 1], offset: offset + 1)
            }
        }
    }
}

/// Buffers a byte stream and yields whole messages. TCP may split or merge messages freely.
///
/// Feed bytes with `append`, then call `next()` until it returns nil. At most `capacity` bytes are
/// held; `append` throws rather than grow past it. After the first error the framer stays failed.
public struct PowerPlugFramer<Format: PowerPlugFrameFormat>: Sendable {
    /// The direction being read.
    public let format: Format
    /// The most bytes held at once.
    public let capacity: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Stream offset of `buffer[readIndex]`.
    private var streamOffset = 0
    private var failure: PowerPlugProtocolError?

    /// `capacity` defaults to room for two of the format's longest messages (at least 4 KiB).
    public init(format: Format, capacity: Int? = nil) {
        self.format = format
        let longest = (0...255).compactMap { format.length(ofType: UInt8($0)) }.max() ?? 1
        self.capacity = max(capacity ?? max(4096, 2 * longest), longest)
    }

    /// Bytes buffered and not yet returned as messages.
    public var bufferedCount: Int { buffer.count - readIndex }

    /// Adds received bytes. Throws `.bufferOverflow` when more than `capacity` bytes would be held.
    public mutating func append<C: Collection>(_ bytes: C) throws(PowerPlugProtocolError) where C.Element == UInt8 {
        if let failure { throw failure }
        if bufferedCount + bytes.count > capacity {
            failure = .bufferOverflow(limit: capacity)
            throw .bufferOverflow(limit: capacity)
        }
        if readIndex > 0 && readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, or nil when more bytes are needed.
    public mutating func next() throws(PowerPlugProtocolError) -> Format.Message? {
        if let failure { throw failure }
        guard readIndex < buffer.count else { return nil }
        let type = buffer[readIndex]
        guard let length = format.length(ofType: type) else {
            failure = .unknownMessageType(type, offset: streamOffset)
            throw .unknownMessageType(type, offset: streamOffset)
        }
        guard buffer.count - readIndex >= length else { return nil }
        let message: Format.Message
        do {
            message = try format.decode(buffer[readIndex..<(readIndex + length)], offset: streamOffset)
        } catch {
            failure = error
            throw error
        }
        readIndex += length
        streamOffset += length
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            readIndex = 0
        }
        return message
    }

    /// Appends `bytes` in pieces no larger than the capacity allows, handing each whole message to
    /// `body` as soon as it is complete, so any amount of input fits the bounded buffer.
    public mutating func feed<C: Collection>(_ bytes: C, _ body: (Format.Message) throws -> Void) throws where C.Element == UInt8 {
        var rest = bytes[...]
        repeat {
            let room = capacity - bufferedCount
            let piece = rest.prefix(max(room, 0))
            rest = rest.dropFirst(piece.count)
            try append(piece)
            while let message = try next() { try body(message) }
        } while !rest.isEmpty
    }
}
