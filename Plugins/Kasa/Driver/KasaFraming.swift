/// Errors of the Kasa wire protocol (framing and payload), with texts a person can read.
public enum KasaProtocolError: Error, Equatable, CustomStringConvertible {
    /// A length header announced more bytes than the limit; nothing was allocated for it.
    case frameTooLarge(size: UInt32, limit: Int)
    /// The payload is not JSON (a printable excerpt of it).
    case notJSON(excerpt: String)
    /// The payload is JSON, but not an object as the protocol requires.
    case notAnObject
    /// A KLAP exchange broke the protocol (an HTTP status, a body of the wrong size, a reply that
    /// does not decrypt): what was received.
    case klap(String)

    /// What went wrong, as a person reads it.
    public var description: String {
        switch self {
        case .frameTooLarge(let size, let limit): "frame of \(size) bytes (limit \(limit))"
        case .notJSON(let excerpt): "reply is not JSON: \(excerpt)"
        case .notAnObject: "reply is not a JSON object"
        case .klap(let what): "KLAP: the plug sent \(what)"
        }
    }
}

/// Splits a TCP byte stream into decrypted Kasa payloads, whatever the segmenting (split or merged
/// frames). Memory is bounded: a header announcing more than `maxFrameSize` bytes is an error at once.
public struct KasaFrameDecoder: Sendable {
    /// The default maximum payload size: 64 KiB.
    public static let defaultMaxFrameSize = 64 * 1024

    /// The largest payload accepted, in bytes.
    public let maxFrameSize: Int
    private var buffer: [UInt8] = []
    private var readIndex = 0

    /// A decoder accepting payloads up to `maxFrameSize` bytes (64 KiB unless given).
    public init(maxFrameSize: Int = KasaFrameDecoder.defaultMaxFrameSize) {
        self.maxFrameSize = maxFrameSize
    }

    /// Bytes received but not yet returned as a frame.
    public var bufferedCount: Int { buffer.count - readIndex }

    /// Appends received bytes. Call `next()` until it returns nil after each append.
    public mutating func append<S: Sequence<UInt8>>(_ bytes: S) {
        if readIndex > 0 && readIndex * 2 >= buffer.count {
            buffer.removeSubrange(0..<readIndex)
            readIndex = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame's decrypted payload, nil if more bytes are needed.
    /// Throws `KasaProtocolError.frameTooLarge` as soon as a header announces too much.
    public mutating func next() throws(KasaProtocolError) -> [UInt8]? {
        guard bufferedCount >= 4 else { return nil }
        let b = readIndex
        let size = UInt32(buffer[b]) << 24 | UInt32(buffer[b + 1]) << 16 | UInt32(buffer[b + 2]) << 8 | UInt32(buffer[b + 3])
        guard size <= UInt32(maxFrameSize) else { throw .frameTooLarge(size: size, limit: maxFrameSize) }
        let total = 4 + Int(size)
        guard bufferedCount >= total else { return nil }
        let payload = KasaCipher.decrypt(buffer[(b + 4)..<(b + total)])
        readIndex += total
        if readIndex == buffer.count {
            // Drained: the buffer goes (a plug answers a poll every few seconds; between answers
            // an idle connection holds no receive buffer of its own).
            buffer = []
            readIndex = 0
        }
        return payload
    }
}
