// libFuzzer entry for the event codec (built by scripts/fuzz, not by SwiftPM).
// Byte 0 picks the event type (low 5 bits, modulo the number of types) and the form (high bit:
// 0 = binary payload for HubEvent.decode, 1 = JSON body for HubEvent.fromJSON, the export format);
// byte 1 (low 2 bits) picks the schema version 0...3 around the current one; the rest is the payload.
// Decoding must return or throw, never trap; whatever decodes must re-encode to a fixed point.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEvent(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let names = HubEvent.allTypeNames
    let type = names[Int(bytes[0] & 0x1F) % names.count]
    let json = bytes[0] & 0x80 != 0
    let version = UInt16(bytes[1] & 0x03)
    let payload = Array(bytes[2...])
    if json {
        guard let body = try? JSONValue.parse(payload),
            let event = try? HubEvent.fromJSON(type: type, schemaVersion: version, body: body)
        else { return 0 }
        let out = event.jsonBody()
        guard let again = try? HubEvent.fromJSON(type: type, schemaVersion: HubEvent.currentSchemaVersion(of: type), body: out) else {
            fatalError("jsonBody() of a decoded \(type) does not decode: \(out.serialized())")
        }
        precondition(again.jsonBody().serialized() == out.serialized(), "JSON round trip of \(type) is not stable")
    } else {
        guard let event = try? HubEvent.decode(type: type, schemaVersion: version, payload: payload) else { return 0 }
        let encoded = event.encodePayload()
        guard let again = try? HubEvent.decode(type: type, schemaVersion: HubEvent.currentSchemaVersion(of: type), payload: encoded) else {
            fatalError("encodePayload() of a decoded \(type) does not decode")
        }
        precondition(again.encodePayload() == encoded, "binary round trip of \(type) is not stable")
    }
    return 0
}
