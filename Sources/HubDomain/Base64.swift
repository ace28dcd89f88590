/// RFC 4648 base64 (standard alphabet, padded), for binary parts of snapshots. The domain imports
/// nothing, so it has its own.
enum Base64 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in alphabet.enumerated() { table[Int(c)] = UInt8(i) }
        return table
    }()

    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out.append(alphabet[Int(n >> 18)]); out.append(alphabet[Int(n >> 12 & 63)])
            out.append(alphabet[Int(n >> 6 & 63)]); out.append(alphabet[Int(n & 63)])
            i += 3
        }
        let rest = bytes.count - i
        if rest > 0 {
            let n = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
            out.append(alphabet[Int(n >> 18)]); out.append(alphabet[Int(n >> 12 & 63)])
            out.append(rest == 2 ? alphabet[Int(n >> 6 & 63)] : UInt8(ascii: "="))
            out.append(UInt8(ascii: "="))
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Nil for anything that is not padded standard base64.
    static func decode(_ text: String) -> [UInt8]? {
        let b = Array(text.utf8)
        guard b.count % 4 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(b.count / 4 * 3)
        var i = 0
        while i < b.count {
            let pad = i + 4 == b.count ? (b[i + 3] == UInt8(ascii: "=") ? (b[i + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var n: UInt32 = 0
            for k in 0..<4 {
                let c = b[i + k]
                let v: UInt8
                if k >= 4 - pad { v = 0 } else { v = values[Int(c)]; if v == 0xFF { return nil } }
                n = n << 6 | UInt32(v)
            }
            out.append(UInt8(n >> 16))
            if pad < 2 { out.append(UInt8(n >> 8 & 0xFF)) }
            if pad < 1 { out.append(UInt8(n & 0xFF)) }
            i += 4
        }
        return out
    }
}
