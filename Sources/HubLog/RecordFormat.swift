import Crypto

/// The on-disk record format of the segment store.
///
/// Segment file: a 16-byte header (`HUBLOG02` + u64 first sequence), then frames.
/// Frame: `u32 bodyLength | u32 ~bodyLength ^ mix(k) | u32 crc32c(body) ^ mix(k) | body`, where `k`
/// is the frame's place in its sync group, the frames written to the segment since its last sync
/// (0 for the first record after a sync, 1 for the next..., at most 4095), and
/// `mix(k) = k &* 0xD3A2646D`. Any two values of `mix` differ in at least 6 bits, so damage to up
/// to 5 bits of the first two words still fails the length check, and a flipped bit in the second
/// word fails the CRC. Segments written before `k` counted from the last sync count it from the
/// start of each write, which is never more: recovery reads both with one rule (a record's group
/// began at or before its sequence minus `k`). A segment with the older magic `HUBLOG01`
/// holds frames with `k = 0` throughout (`u32 ~bodyLength | u32 crc32c(body)`): it is read as
/// before, and the writer goes on appending to it with `k = 0`; new segments are `HUBLOG02`.
/// Body (little-endian): u64 sequence, u64 streamVersion, i64 timestamp µs, u16 schemaVersion,
/// u16 stream length, u16 type length, u16 command-id length (0xFFFF = none), u16 actor length,
/// u32 payload length, then the stream, type, command id, actor and payload bytes, and finally the
/// 32-byte chain hash = SHA-256(previous record's chain hash || body without the hash).
/// The first record of the log chains from 32 zero bytes.
public enum RecordFormat {
    /// The first 8 bytes of every segment file.
    public static let segmentMagic: [UInt8] = Array("HUBLOG02".utf8)
    /// The magic of segments written before frames carried their place in their sync group: still read.
    public static let segmentMagicV1: [UInt8] = Array("HUBLOG01".utf8)
    /// A frame's place in its sync group is below this: later frames of a longer group say 4095
    /// (their group then seems to begin later than it did, which only makes recovery refuse, never cut).
    static let maxWriteIndex: UInt32 = 4096

    /// What the second and the CRC word of a frame at place `k` of its sync group are XORed with
    /// (odd, so invertible: ``writeUnmix(_:)``; its values for `k` below ``maxWriteIndex`` differ
    /// pairwise in at least 6 bits).
    static func writeMix(_ k: UInt32) -> UInt32 { k &* 0xD3A2_646D }
    static func writeUnmix(_ x: UInt32) -> UInt32 { x &* 0xAF31_4565 }
    /// Bytes of a segment header: the magic and the u64 first sequence.
    public static let segmentHeaderSize = 16
    /// Bytes before a body in a frame: length, its complement, CRC32C.
    public static let frameHeaderSize = 12
    /// Bytes of a body's fixed-size fields (before the variable-length names and payload).
    public static let fixedBodySize = 8 + 8 + 8 + 2 + 2 + 2 + 2 + 2 + 4
    /// Bytes of a chain hash (SHA-256).
    public static let hashSize = 32
    /// Upper bound on one record's body; anything larger is treated as damage, not data.
    public static let maxBodySize = 16 * 1024 * 1024
    static let noCommandId: UInt16 = 0xFFFF
    /// The chain hash "before" the first record: 32 zero bytes.
    public static let genesisHash = [UInt8](repeating: 0, count: 32)

    /// A segment file's header.
    ///
    /// - Parameter firstSequence: The sequence of the segment's first record.
    /// - Returns: The magic followed by the sequence (little-endian).
    public static func segmentHeader(firstSequence: UInt64) -> [UInt8] {
        var bytes = segmentMagic
        appendLE(&bytes, firstSequence)
        return bytes
    }

    /// Why an append cannot be stored (names or payload too large), or nil when it can.
    ///
    /// - Parameter request: The append to check.
    /// - Returns: A sentence naming the problem, or nil.
    public static func problem(with request: AppendRequest) -> String? {
        let fixed = request.stream.utf8.count
        let actor = request.causation.actor.utf8.count, command = request.causation.commandId?.utf8.count ?? 0
        if fixed >= 0xFFFF || actor >= 0xFFFF || command >= 0xFFFF {
            return "stream, actor and command id must each be shorter than 65535 bytes"
        }
        for event in request.events {
            if event.type.utf8.count >= 0xFFFF { return "event type must be shorter than 65535 bytes" }
            let body = fixedBodySize + fixed + event.type.utf8.count + command + actor + event.payload.count + hashSize
            if body > maxBodySize { return "event of \(body) bytes exceeds the \(maxBodySize)-byte record limit" }
        }
        return nil
    }

    /// Appends one framed record (frame header, canonical body, chain hash) to `out`.
    ///
    /// - Parameters:
    ///   - out: The buffer to append to.
    ///   - record: The record to encode.
    ///   - previousHash: The previous record's chain hash (``genesisHash`` for sequence 1).
    ///   - writeIndex: The frame's place in its sync group, the frames written to its segment since
    ///     the segment's last sync (0: the first; always 0 for a frame that is not written to a
    ///     `HUBLOG02` segment). The body and hash do not depend on it.
    /// - Returns: The record's chain hash.
    /// - Throws: ``EventLogError/invalid(_:)`` when a name or the whole body is too large.
    @discardableResult
    public static func appendFrame(
        to out: inout [UInt8], record: EventRecord, previousHash: [UInt8], writeIndex: UInt32 = 0
    ) throws -> [UInt8] {
        let stream = Array(record.stream.utf8), type = Array(record.type.utf8), actor = Array(record.causation.actor.utf8)
        let commandId = record.causation.commandId.map { Array($0.utf8) }
        guard stream.count < 0xFFFF, type.count < 0xFFFF, actor.count < 0xFFFF, (commandId?.count ?? 0) < 0xFFFF else {
            throw EventLogError.invalid("stream, type, actor and command id must each be shorter than 65535 bytes")
        }
        let bodyLength =
            fixedBodySize + stream.count + type.count + (commandId?.count ?? 0) + actor.count
            + record.payload.count + hashSize
        guard bodyLength <= maxBodySize else {
            throw EventLogError.invalid("event of \(bodyLength) bytes exceeds the \(maxBodySize)-byte record limit")
        }
        let frameStart = out.count
        appendLE(&out, UInt32(bodyLength))
        appendLE(&out, ~UInt32(bodyLength) ^ writeMix(min(writeIndex, maxWriteIndex - 1)))
        appendLE(&out, UInt32(0))  // CRC placeholder
        let bodyStart = out.count
        out.reserveCapacity(out.count + bodyLength)
        appendLE(&out, record.sequence)
        appendLE(&out, record.streamVersion)
        appendLE(&out, UInt64(bitPattern: record.timestamp))
        appendLE(&out, record.schemaVersion)
        appendLE(&out, UInt16(stream.count))
        appendLE(&out, UInt16(type.count))
        appendLE(&out, commandId.map { UInt16($0.count) } ?? noCommandId)
        appendLE(&out, UInt16(actor.count))
        appendLE(&out, UInt32(record.payload.count))
        out += stream; out += type
        if let commandId { out += commandId }
        out += actor; out += record.payload
        let hash: [UInt8] = out.withUnsafeBytes { raw in
            var hasher = SHA256()
            hasher.update(data: previousHash)
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: raw[bodyStart..<raw.count]))
            return Array(hasher.finalize())
        }
        out += hash
        let crc =
            out.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[bodyStart..<$0.count])) }
            ^ writeMix(min(writeIndex, maxWriteIndex - 1))
        withUnsafeBytes(of: crc.littleEndian) { crcBytes in
            for i in 0..<4 { out[frameStart + 8 + i] = crcBytes[i] }
        }
        return hash
    }

    /// Recomputes a record's chain hash from the previous hash and its body.
    ///
    /// - Parameters:
    ///   - previous: The previous record's chain hash.
    ///   - body: The record's canonical body, ending in its (stored) chain hash, which is not hashed.
    /// - Returns: SHA-256 over `previous` and the body without its hash.
    public static func chainHash(previous: [UInt8], body: UnsafeRawBufferPointer) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: previous)
        hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: body[0..<(body.count - hashSize)]))
        return Array(hasher.finalize())
    }

    static func appendLE<T: FixedWidthInteger>(_ out: inout [UInt8], _ value: T) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }
}

/// The outcome of looking at the bytes at one offset of a segment.
enum FrameCheck {
    /// A sound frame: its body's length and its place in its sync group.
    case valid(bodyLength: Int, writeIndex: UInt32)
    /// Fewer bytes remain than the frame needs.
    case incomplete
    /// The bytes are not a sound frame.
    case damaged(String)
}

extension RecordFormat {
    /// Checks the frame that starts at `offset` of `buffer` (header, length, CRC, body layout).
    static func checkFrame(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> FrameCheck {
        let available = buffer.count - offset
        guard available >= frameHeaderSize else { return .incomplete }
        let length = buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian
        let check = buffer.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self).littleEndian
        guard let writeIndex = writeIndex(length: length, check: check) else { return .damaged("frame header length check failed") }
        let bodyLength = Int(length)
        guard bodyLength >= fixedBodySize + hashSize, bodyLength <= maxBodySize else {
            return .damaged("frame length \(bodyLength) out of range")
        }
        guard available >= frameHeaderSize + bodyLength else { return .incomplete }
        let crc = buffer.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self).littleEndian
        let body = UnsafeRawBufferPointer(rebasing: buffer[(offset + frameHeaderSize)..<(offset + frameHeaderSize + bodyLength)])
        guard CRC32C.checksum(body) ^ writeMix(writeIndex) == crc else { return .damaged("CRC32C mismatch") }
        guard RecordView(body: body) != nil else { return .damaged("record layout inconsistent with its length") }
        return .valid(bodyLength: bodyLength, writeIndex: writeIndex)
    }

    /// The place in its sync group that a frame header's two first words give, or nil when they do not
    /// pass the length check (the second word is the length's complement XOR `mix(place)`).
    static func writeIndex(length: UInt32, check: UInt32) -> UInt32? {
        let index = writeUnmix(check ^ ~length)
        return index < maxWriteIndex ? index : nil
    }
}

/// A borrowed view of one record in its canonical encoding (the body layout of ``RecordFormat``,
/// ending in the record's chain hash), as ``EventStore/readViews(from:through:_:)`` hands it out.
///
/// Valid only during the call that hands it out: it points into the reader's buffer. Reading fields
/// from a view copies nothing until a `String` or ``record`` is asked for.
public struct RecordView {
    /// The whole canonical body, chain hash included.
    public let body: UnsafeRawBufferPointer
    /// The record's global sequence.
    public let sequence: UInt64
    /// The record's version within its stream.
    public let streamVersion: UInt64
    /// Microseconds since the Unix epoch, UTC.
    public let timestamp: Int64
    /// The payload's schema version.
    public let schemaVersion: UInt16
    let streamRange: Range<Int>, typeRange: Range<Int>, commandIdRange: Range<Int>?, actorRange: Range<Int>, payloadRange: Range<Int>

    /// A view of a canonical body (as ``RecordFormat/appendFrame(to:record:previousHash:)`` writes it
    /// after the frame header), for backends that build their views from stored rows.
    ///
    /// - Parameter body: The body, ending in its chain hash; it must outlive the view.
    /// - Returns: nil when the lengths in the body do not add up to its size.
    public init?(body: UnsafeRawBufferPointer) {
        guard body.count >= RecordFormat.fixedBodySize + RecordFormat.hashSize else { return nil }
        self.body = body
        sequence = body.loadUnaligned(fromByteOffset: 0, as: UInt64.self).littleEndian
        streamVersion = body.loadUnaligned(fromByteOffset: 8, as: UInt64.self).littleEndian
        timestamp = Int64(bitPattern: body.loadUnaligned(fromByteOffset: 16, as: UInt64.self).littleEndian)
        schemaVersion = body.loadUnaligned(fromByteOffset: 24, as: UInt16.self).littleEndian
        let streamCount = Int(body.loadUnaligned(fromByteOffset: 26, as: UInt16.self).littleEndian)
        let typeCount = Int(body.loadUnaligned(fromByteOffset: 28, as: UInt16.self).littleEndian)
        let commandRaw = body.loadUnaligned(fromByteOffset: 30, as: UInt16.self).littleEndian
        let actorCount = Int(body.loadUnaligned(fromByteOffset: 32, as: UInt16.self).littleEndian)
        let payloadCount = Int(body.loadUnaligned(fromByteOffset: 34, as: UInt32.self).littleEndian)
        var cursor = RecordFormat.fixedBodySize
        streamRange = cursor..<(cursor + streamCount); cursor += streamCount
        typeRange = cursor..<(cursor + typeCount); cursor += typeCount
        if commandRaw == RecordFormat.noCommandId {
            commandIdRange = nil
        } else {
            commandIdRange = cursor..<(cursor + Int(commandRaw)); cursor += Int(commandRaw)
        }
        actorRange = cursor..<(cursor + actorCount); cursor += actorCount
        payloadRange = cursor..<(cursor + payloadCount); cursor += payloadCount
        guard cursor + RecordFormat.hashSize == body.count else { return nil }
    }

    private func string(_ range: Range<Int>) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: body[range]), as: UTF8.self)
    }

    /// The event type's UTF-8 bytes (borrowed).
    public var typeBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: body[typeRange]) }
    /// The actor's UTF-8 bytes (borrowed).
    public var actorBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: body[actorRange]) }
    /// The stream's name.
    public var stream: String { string(streamRange) }
    /// The event type's name.
    public var type: String { string(typeRange) }
    /// The command id of the append that wrote the record, or nil.
    public var commandId: String? { commandIdRange.map(string) }
    /// Who or what caused the event.
    public var actor: String { string(actorRange) }
    /// The encoded event (borrowed).
    public var payload: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: body[payloadRange]) }
    /// The record's chain hash: SHA-256 over the previous record's chain hash and this body without
    /// the hash (see ``EventStore``).
    public var hash: [UInt8] { Array(body[(body.count - RecordFormat.hashSize)...]) }

    /// Compares the type bytes without making a String.
    ///
    /// - Parameter utf8: The UTF-8 bytes of a type name.
    /// - Returns: Whether the record's type is exactly that name.
    public func typeEquals(_ utf8: [UInt8]) -> Bool {
        guard typeRange.count == utf8.count else { return false }
        return utf8.withUnsafeBytes { memcmpEqual(UnsafeRawBufferPointer(rebasing: body[typeRange]), $0) }
    }

    /// Compares the command id bytes without making a String.
    ///
    /// - Parameter utf8: The UTF-8 bytes of a command id.
    /// - Returns: Whether the record was appended with exactly that command id.
    public func commandIdEquals(_ utf8: [UInt8]) -> Bool {
        guard let range = commandIdRange, range.count == utf8.count else { return false }
        return utf8.withUnsafeBytes { memcmpEqual(UnsafeRawBufferPointer(rebasing: body[range]), $0) }
    }

    /// A copy of the record (owning its strings and payload).
    public var record: EventRecord {
        EventRecord(
            sequence: sequence, stream: stream, streamVersion: streamVersion, type: type,
            schemaVersion: schemaVersion, timestamp: timestamp,
            causation: Causation(commandId: commandId, actor: actor), payload: Array(payload))
    }
}

@inline(__always)
func memcmpEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    for i in 0..<a.count where a[i] != b[i] { return false }
    return true
}
