// libFuzzer entry for the Kasa wire format: the frame decoder, the XOR cipher and the JSON reply
// reader (built by scripts/fuzz, not by SwiftPM). Byte 0 is the segment size 1...256 in which the
// rest of the input arrives as a TCP stream. Bad bytes must throw, never trap; the cipher must
// round-trip every decrypted payload.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzKasa(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let segment = Int(bytes[0]) + 1
    var decoder = KasaFrameDecoder(maxFrameSize: 4096)
    var rest = bytes[1...]
    while !rest.isEmpty {
        let piece = rest.prefix(segment)
        rest = rest.dropFirst(piece.count)
        decoder.append(piece)
        do {
            while let payload = try decoder.next() {
                precondition(KasaCipher.decrypt(KasaCipher.encrypt(payload)) == payload, "cipher does not round-trip")
                _ = try? KasaJSON.parseObject(payload)
            }
        } catch {
            return 0
        }
    }
    return 0
}
