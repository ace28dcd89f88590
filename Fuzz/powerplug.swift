// libFuzzer entry for the TCP power plug's framer and message/command decoders (built by
// scripts/fuzz, not by SwiftPM). Byte 0: low bit picks the direction (plug messages, as the driver
// reads them, or commands, as the simulator reads them), the other bits the segment size 1...128 in
// which the rest of the input arrives. Bad bytes must throw, never trap.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPowerPlug(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let segment = Int(bytes[0] >> 1) + 1
    let stream = bytes[1...]
    if bytes[0] & 1 == 0 {
        var framer = PowerPlugFramer(format: PlugMessageFormat())
        feed(&framer, stream, segment)
    } else {
        var framer = PowerPlugFramer(format: PlugCommandFormat())
        feed(&framer, stream, segment)
    }
    return 0
}

private func feed<F>(_ framer: inout PowerPlugFramer<F>, _ stream: ArraySlice<UInt8>, _ segment: Int) {
    var rest = stream
    while !rest.isEmpty {
        let piece = rest.prefix(segment)
        rest = rest.dropFirst(piece.count)
        do {
            try framer.append(piece)
            while let message = try framer.next() { _ = message }
        } catch {
            return
        }
    }
}
