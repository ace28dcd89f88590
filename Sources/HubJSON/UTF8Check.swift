/// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), one sequence
/// at a time, so callers can name the offset of the first bad byte.
public enum UTF8Check {
    /// The verdict on the sequence starting at one offset.
    public enum Sequence: Equatable {
        /// A well-formed sequence of this many bytes.
        case valid(length: Int)
        /// The byte at this offset breaks the sequence (the count of `bytes` when it is cut short).
        case invalid(at: Int)
    }

    /// Checks the sequence that starts at `bytes[i]` (`i` must be a valid index).
    public static func sequence(in bytes: [UInt8], at i: Int) -> Sequence {
        let c = bytes[i]
        if c < 0x80 { return .valid(length: 1) }
        let length: Int
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
        switch c {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; hi = 0x9F
        case 0xF0: length = 4; lo = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; hi = 0x8F
        default: return .invalid(at: i)
        }
        for k in 1..<length {
            guard i + k < bytes.count else { return .invalid(at: i + k) }
            let (low, high) = k == 1 ? (lo, hi) : (UInt8(0x80), UInt8(0xBF))
            guard bytes[i + k] >= low, bytes[i + k] <= high else { return .invalid(at: i + k) }
        }
        return .valid(length: length)
    }

    /// The offset of the first byte that is not part of a well-formed sequence, or nil.
    public static func firstInvalid(_ bytes: [UInt8]) -> Int? {
        var i = 0
        while i < bytes.count {
            switch sequence(in: bytes, at: i) {
            case .valid(let length): i += length
            case .invalid(let at): return at
            }
        }
        return nil
    }
}
