import HubDomain
import HubLog

/// One bucket of one series as a history file holds it: 128 bytes at a fixed place (see
/// ``HistoryFiles``), little-endian:
///
/// | bytes | field |
/// |---|---|
/// | 0-7 | bucket number (start / width) |
/// | 8-11 | readings folded (0: none; the slot is empty when every byte is 0) |
/// | 12-15 | CRC-32C of bytes 0-11 and 16-127 |
/// | 16-47 | min, max, sum, last (binary64) |
/// | 48-55 | when the last value was measured (µs) |
/// | 56-63 | the sequence of the newest event folded into it |
/// | 64-71 | weighted: the time integral of the values held (value × µs, binary64) |
/// | 72-79 | covered: the µs a value held in the bucket |
/// | 80-127 | zero |
///
/// Sequence makes a replay after a crash exact: an event the slot already holds is not folded
/// twice. 128-byte slots at multiples of 128 never straddle a 512-byte sector.
struct HistorySlot: Equatable {
    var bucket: Int64
    var count: UInt32 = 0
    var min = 0.0, max = 0.0, sum = 0.0, last = 0.0
    var lastAt: Int64 = 0
    var through: UInt64 = 0
    var weighted = 0.0
    var covered: Int64 = 0

    static let size = 128

    /// An empty slot for bucket `b`.
    init(bucket b: Int64) { bucket = b }

    /// Whether the slot holds anything (a reading, or time a value held).
    var isEmpty: Bool { count == 0 && covered == 0 }

    /// Folds one reading, by the rule of the in-memory model (`HistoryColumn`): count, min, max,
    /// sum, and the value measured latest (on equal times, the later event's).
    mutating func add(_ value: Double, at: Int64) {
        if count == 0 {
            min = value; max = value; sum = value; last = value; lastAt = at
        } else {
            if value < min { min = value }
            if value > max { max = value }
            sum += value
            if at >= lastAt { last = value; lastAt = at }
        }
        count &+= 1
    }

    /// Adds `micros` of `value` held (by the rule of `HistoryColumn`: a bucket with no reading
    /// has that value as its min, max and last).
    mutating func weigh(_ value: Double, micros: Int64) {
        if isEmpty { min = value; max = value; last = value }
        weighted += value * Double(micros)
        covered += micros
    }

    func answer(width: Int64) -> HistoryBucket {
        HistoryBucket(
            start: bucket * width, count: Int(count), min: min, max: max, sum: sum, last: last,
            weighted: weighted, covered: covered)
    }

    func encode(into out: UnsafeMutableRawBufferPointer) {
        out.storeBytes(of: bucket.littleEndian, toByteOffset: 0, as: Int64.self)
        out.storeBytes(of: count.littleEndian, toByteOffset: 8, as: UInt32.self)
        out.storeBytes(of: min.bitPattern.littleEndian, toByteOffset: 16, as: UInt64.self)
        out.storeBytes(of: max.bitPattern.littleEndian, toByteOffset: 24, as: UInt64.self)
        out.storeBytes(of: sum.bitPattern.littleEndian, toByteOffset: 32, as: UInt64.self)
        out.storeBytes(of: last.bitPattern.littleEndian, toByteOffset: 40, as: UInt64.self)
        out.storeBytes(of: lastAt.littleEndian, toByteOffset: 48, as: Int64.self)
        out.storeBytes(of: through.littleEndian, toByteOffset: 56, as: UInt64.self)
        out.storeBytes(of: weighted.bitPattern.littleEndian, toByteOffset: 64, as: UInt64.self)
        out.storeBytes(of: covered.littleEndian, toByteOffset: 72, as: Int64.self)
        for i in 80..<Self.size { out[i] = 0 }
        out.storeBytes(of: Self.checksum(UnsafeRawBufferPointer(out)).littleEndian, toByteOffset: 12, as: UInt32.self)
    }

    /// What 64 stored bytes say: nil for an empty slot (never written: zeros); throws when the
    /// checksum does not match.
    static func decode(_ raw: UnsafeRawBufferPointer) throws(DamagedSlot) -> HistorySlot? {
        func u64(_ at: Int) -> UInt64 { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
        let count = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        let stored = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 12, as: UInt32.self))
        if count == 0, stored == 0, raw.allSatisfy({ $0 == 0 }) { return nil }
        guard stored == checksum(raw) else { throw DamagedSlot() }
        var slot = HistorySlot(bucket: Int64(bitPattern: u64(0)))
        slot.count = count
        slot.min = Double(bitPattern: u64(16)); slot.max = Double(bitPattern: u64(24))
        slot.sum = Double(bitPattern: u64(32)); slot.last = Double(bitPattern: u64(40))
        slot.lastAt = Int64(bitPattern: u64(48)); slot.through = u64(56)
        slot.weighted = Double(bitPattern: u64(64)); slot.covered = Int64(bitPattern: u64(72))
        return slot
    }

    struct DamagedSlot: Error {}

    private static func checksum(_ raw: UnsafeRawBufferPointer) -> UInt32 {
        CRC32C.checksum(
            UnsafeRawBufferPointer(rebasing: raw[16..<size]), seed: CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<12])))
    }
}

/// A history file that cannot be read as written: which file and which slot.
public struct HistoryFileError: Error, CustomStringConvertible {
    /// One line naming the file, the resolution and the slot.
    public var description: String
    init(_ description: String) { self.description = description }
}
