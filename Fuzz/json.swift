// libFuzzer entry for HubJSON's strict parser (built by scripts/fuzz, not by SwiftPM).
// Any bytes: parse must return or throw, never trap. What parses must survive a round trip:
// parse → serialized() → parse gives an equal value.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let value = try? JSONValue.parse(bytes) else { return 0 }
    let text = value.serialized()
    let again: JSONValue
    do { again = try JSONValue.parse(text) } catch {
        fatalError("serialized() output does not parse: \(error) in \(text)")
    }
    precondition(again == value, "round trip changed the value: \(text)")
    precondition(again.serialized() == text, "serialized() is not stable: \(text)")
    return 0
}
