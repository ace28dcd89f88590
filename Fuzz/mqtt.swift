// libFuzzer entry for the MQTT command surface: topic routing (MQTTTopics.route) and the payload
// parser (RequestParser.parse, with CommandJSON behind it) — what any broker client can send
// (built by scripts/fuzz, not by SwiftPM). Byte 0 picks a command topic (or, for the last choices,
// the fuzzer's own topic text up to the first newline); the rest is the message. Must never trap.

private let topics = MQTTTopics()
private let fixedTopics: [String] =
    [
        "hub/device/lamp/switch/set", "hub/device/lamp/activations/set", "hub/group/g1/switch/set",
        "hub/animal/admit", "hub/animal/rex/discharge", "hub/animal/rex/vitals"
    ] + RequestParser.requestNames.map { "hub/request/\($0)" }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMQTT(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var payload = Array(bytes[1...])
    let choice = Int(bytes[0]) % (fixedTopics.count + 4)
    let topic: String
    if choice < fixedTopics.count {
        topic = fixedTopics[choice]
    } else {
        let cut = payload.firstIndex(of: 0x0A) ?? payload.count
        topic = String(decoding: payload[..<cut], as: UTF8.self)
        payload = cut < payload.count ? Array(payload[(cut + 1)...]) : []
    }
    guard let request = topics.route(topic: topic).request else { return 0 }
    _ = try? RequestParser.parse(route: request, message: payload, now: 1_700_000_000_000_000)
    return 0
}
