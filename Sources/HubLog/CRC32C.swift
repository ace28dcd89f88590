import CCRC32C

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the CPU's instructions where it has them
/// (x86-64 SSE4.2, ARMv8 CRC), else a portable slicing-by-8 table.
public enum CRC32C {
    /// True when the CPU's CRC-32C instructions are used (decided once, at first use).
    public static let hardware = hub_crc32c_hardware_available() != 0

    static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var crc = UInt32(i)
            for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][i] = crc
        }
        for i in 0..<256 {
            for t in 1..<8 {
                let previous = tables[t - 1][i]
                tables[t][i] = (previous >> 8) ^ tables[0][Int(previous & 0xFF)]
            }
        }
        return tables
    }()

    /// Flat copy of the eight tables for the hot loop.
    static let flat: [UInt32] = tables.flatMap { $0 }

    /// The CRC-32C of `buffer`, continuing from `seed` (the CRC of the bytes before; 0 to start).
    public static func checksum(_ buffer: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        if hardware {
            guard let base = buffer.baseAddress, buffer.count > 0 else { return seed }
            return ~hub_crc32c_hardware_update(~seed, base, buffer.count)
        }
        return software(buffer, seed: seed)
    }

    /// The portable table version (also used to cross-check the hardware one in tests).
    public static func software(_ buffer: UnsafeRawBufferPointer, seed: UInt32 = 0) -> UInt32 {
        var crc = ~seed
        let count = buffer.count
        guard count > 0, let base = buffer.baseAddress else { return seed }
        flat.withUnsafeBufferPointer { t in
            var i = 0
            while i + 8 <= count {
                let lo = base.loadUnaligned(fromByteOffset: i, as: UInt32.self).littleEndian ^ crc
                let hi = base.loadUnaligned(fromByteOffset: i + 4, as: UInt32.self).littleEndian
                crc =
                    t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                i += 8
            }
            while i < count {
                crc = t[Int((crc ^ UInt32(base.load(fromByteOffset: i, as: UInt8.self))) & 0xFF)] ^ (crc >> 8)
                i += 1
            }
        }
        return ~crc
    }

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }
}
