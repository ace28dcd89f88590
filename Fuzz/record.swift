// libFuzzer entry for the segment record reader: RecordFormat.checkFrame and RecordView, what
// recovery, the cursor and verification run over bytes read back from disk (built by scripts/fuzz,
// not by SwiftPM). The input after byte 0 is a segment's frames; the reader walks it as recovery
// scans damage: a valid frame is read whole (every field copied out), a damaged byte is skipped.
// Byte 0, low bit set: before each frame the harness writes a matching length complement and CRC
// into the header so the fuzzer gets past the checksum to the body layout.
//
// swift-crypto is not compiled in: the reader does not hash, so `SHA256` below is a stub that only
// satisfies the writer's code (appendFrame, chainHash), which this harness never calls.

struct SHA256 {
    mutating func update(data: [UInt8]) {}
    mutating func update(bufferPointer: UnsafeRawBufferPointer) {}
    func finalize() -> [UInt8] { fatalError("SHA256 is not part of the fuzz build") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRecord(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let fixHeaders = data[0] & 1 == 1
    var bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var offset = 0
    while offset < bytes.count {
        if fixHeaders && bytes.count - offset >= RecordFormat.frameHeaderSize {
            let length = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian) }
            if length <= bytes.count - offset - RecordFormat.frameHeaderSize {
                let start = offset + RecordFormat.frameHeaderSize
                let crc = CRC32C.checksum(Array(bytes[start..<(start + length)]))
                put(&bytes, offset + 4, ~UInt32(length))
                put(&bytes, offset + 8, crc)
            }
        }
        let check = bytes.withUnsafeBytes { RecordFormat.checkFrame($0, at: offset) }
        switch check {
        case .valid(let bodyLength):
            bytes.withUnsafeBytes { raw in
                let start = offset + RecordFormat.frameHeaderSize
                guard let view = RecordView(body: UnsafeRawBufferPointer(rebasing: raw[start..<(start + bodyLength)])) else {
                    fatalError("checkFrame said valid, RecordView disagrees")
                }
                let record = view.record
                precondition(record.payload.count == view.payload.count && view.hash.count == RecordFormat.hashSize)
                _ = view.typeEquals(Array(record.type.utf8))
            }
            offset += RecordFormat.frameHeaderSize + bodyLength
        case .incomplete:
            return 0
        case .damaged:
            offset += 1
        }
    }
    return 0
}

private func put(_ bytes: inout [UInt8], _ at: Int, _ value: UInt32) {
    for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
}
