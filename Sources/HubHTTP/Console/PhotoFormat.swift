import HubEngine

/// Whether a photo's bytes are an image of the kind they claim, read through their structure
/// rather than their first bytes: `GIF89a<html><script>...` is not a GIF. Pure; no decoding of
/// pixels. Each check walks the format's blocks to its end marker and says what is wrong.
enum PhotoFormat {
    /// Nil when `bytes` is a well-formed `type` image; otherwise what is wrong with it.
    static func problem(_ bytes: [UInt8], type: String) -> String? {
        switch type {
        case "image/jpeg": return jpeg(bytes)
        case "image/png": return png(bytes)
        case "image/gif": return gif(bytes)
        case "image/webp": return webp(bytes)
        default: return "\(type) is not an image kind the hub takes"
        }
    }

    static func be16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) << 8 | Int(b[i + 1]) }
    static func be32(_ b: [UInt8], _ i: Int) -> Int { be16(b, i) << 16 | be16(b, i + 2) }
    static func le16(_ b: [UInt8], _ i: Int) -> Int { Int(b[i]) | Int(b[i + 1]) << 8 }
    static func le32(_ b: [UInt8], _ i: Int) -> Int { le16(b, i) | le16(b, i + 2) << 16 }

    /// SOI, then marker segments up to a frame header (SOF) and a scan (SOS), then entropy-coded
    /// data up to EOI. Bytes after EOI are let be (phones append a second, smaller picture there).
    static func jpeg(_ b: [UInt8]) -> String? {
        guard b.count >= 4, b[0] == 0xFF, b[1] == 0xD8 else { return "it does not start with a JPEG start-of-image marker" }
        var i = 2, frame = false
        while true {
            guard i + 1 < b.count, b[i] == 0xFF else { return "it has no JPEG marker at byte \(i)" }
            var marker = b[i + 1]
            while marker == 0xFF, i + 2 < b.count { i += 1; marker = b[i + 1] }  // fill bytes
            i += 2
            switch marker {
            case 0xD9: return "it ends before any image data"
            case 0x01, 0xD0...0xD7: continue
            default: break
            }
            guard i + 1 < b.count else { return "it is cut short in a JPEG segment" }
            let length = be16(b, i)
            guard length >= 2, i + length <= b.count else { return "a JPEG segment at byte \(i - 2) runs past the end" }
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC { frame = true }
            i += length
            guard marker == 0xDA else { continue }
            guard frame else { return "its image data comes before a JPEG frame header" }
            // Entropy-coded data: 0xFF is followed by 0x00 (a stuffed byte), a restart marker or the next marker.
            while i + 1 < b.count {
                if b[i] == 0xFF, b[i + 1] != 0x00, !(0xD0...0xD7).contains(b[i + 1]), b[i + 1] != 0xFF { break }
                i += 1
            }
            guard i + 1 < b.count else { return "it has no JPEG end-of-image marker" }
            if b[i + 1] == 0xD9 { return nil }
        }
    }

    /// The signature, IHDR first (13 bytes, a size above zero), chunks with letter names walked by
    /// their lengths, IDAT present, IEND last.
    static func png(_ b: [UInt8]) -> String? {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard b.starts(with: signature) else { return "it does not start with the PNG signature" }
        var i = 8, first = true, data = false
        while i + 12 <= b.count {
            let length = be32(b, i)
            let name = b[(i + 4)..<(i + 8)]
            guard name.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
                return "a PNG chunk at byte \(i) has no name"
            }
            guard length <= b.count - i - 12 else { return "a PNG chunk at byte \(i) runs past the end" }
            let kind = String(decoding: name, as: UTF8.self)
            if first {
                guard kind == "IHDR", length == 13, be32(b, i + 8) > 0, be32(b, i + 12) > 0 else {
                    return "its first PNG chunk is not a valid IHDR"
                }
                first = false
            }
            if kind == "IDAT" { data = true }
            i += 12 + length
            if kind == "IEND" {
                guard data else { return "it has no PNG image data (IDAT)" }
                return i == b.count ? nil : "it goes on after the PNG end (IEND)"
            }
        }
        return "it has no PNG end (IEND)"
    }

    /// The header and screen descriptor, the colour table, then image descriptors and extensions
    /// with their sub-blocks, up to the trailer, which must be the last byte.
    static func gif(_ b: [UInt8]) -> String? {
        guard b.count >= 14, b.starts(with: Array("GIF87a".utf8)) || b.starts(with: Array("GIF89a".utf8)) else {
            return "it does not start with a GIF header"
        }
        guard le16(b, 6) > 0, le16(b, 8) > 0 else { return "its GIF screen has no size" }
        var i = 13
        if b[10] & 0x80 != 0 { i += 3 << (Int(b[10] & 0x07) + 1) }
        var image = false
        func subBlocks(_ i: inout Int) -> Bool {
            while i < b.count {
                let size = Int(b[i])
                i += 1 + size
                if size == 0 { return i <= b.count }
            }
            return false
        }
        while i < b.count {
            switch b[i] {
            case 0x3B:
                guard image else { return "it has no GIF image" }
                return i + 1 == b.count ? nil : "it goes on after the GIF trailer"
            case 0x2C:
                guard i + 10 <= b.count else { return "a GIF image descriptor is cut short" }
                let flags = b[i + 9]
                i += 10
                if flags & 0x80 != 0 { i += 3 << (Int(flags & 0x07) + 1) }
                i += 1  // LZW minimum code size
                guard subBlocks(&i) else { return "GIF image data runs past the end" }
                image = true
            case 0x21:
                i += 2
                guard subBlocks(&i) else { return "a GIF extension runs past the end" }
            default:
                return "byte \(i) is not a GIF block"
            }
        }
        return "it has no GIF trailer"
    }

    /// RIFF with its size equal to the file's, `WEBP`, chunks walked by their sizes, the first a
    /// VP8, VP8L or VP8X one.
    static func webp(_ b: [UInt8]) -> String? {
        guard b.count >= 20, b.starts(with: Array("RIFF".utf8)), b[8..<12].elementsEqual("WEBP".utf8) else {
            return "it does not start with a RIFF WEBP header"
        }
        guard le32(b, 4) + 8 == b.count else { return "its RIFF size does not match its length" }
        guard ["VP8 ", "VP8L", "VP8X"].contains(String(decoding: b[12..<16], as: UTF8.self)) else {
            return "its first WebP chunk is not an image"
        }
        var i = 12
        while i + 8 <= b.count {
            let size = le32(b, i + 4)
            guard size <= b.count - i - 8 else { return "a WebP chunk at byte \(i) runs past the end" }
            i += 8 + size + (size & 1)
        }
        return i == b.count ? nil : "it ends inside a WebP chunk"
    }
}
