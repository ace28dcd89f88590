/// The Kasa "smart home protocol" cipher: an XOR autokey cipher whose key starts at 171, and the
/// 4-byte big-endian length framing used on TCP port 9999. Pure functions, no I/O.
public enum KasaCipher {
    /// The initial key of the autokey cipher.
    public static let initialKey: UInt8 = 171

    /// Encrypts plain bytes: each output byte is the previous output byte (initially 171) XOR the input byte.
    public static func encrypt<S: Sequence<UInt8>>(_ plain: S) -> [UInt8] {
        var key = initialKey
        var out: [UInt8] = []
        out.reserveCapacity(plain.underestimatedCount)
        for byte in plain {
            key ^= byte
            out.append(key)
        }
        return out
    }

    /// Decrypts cipher bytes: each plain byte is the previous cipher byte (initially 171) XOR the cipher byte.
    public static func decrypt<S: Sequence<UInt8>>(_ cipher: S) -> [UInt8] {
        var key = initialKey
        var out: [UInt8] = []
        out.reserveCapacity(cipher.underestimatedCount)
        for byte in cipher {
            out.append(key ^ byte)
            key = byte
        }
        return out
    }

    /// One TCP frame: the 4-byte big-endian payload length, then the encrypted payload.
    public static func frame<S: Sequence<UInt8>>(_ plain: S) -> [UInt8] {
        let payload = encrypt(plain)
        let n = UInt32(truncatingIfNeeded: payload.count)
        return [UInt8(n >> 24), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)] + payload
    }

    /// The frame of a UTF-8 text (usually JSON).
    public static func frame(_ text: String) -> [UInt8] { frame(Array(text.utf8)) }
}
