// libFuzzer entry for the BLE beacon bridge's MQTT message parser (built by scripts/fuzz, not by SwiftPM).
// The input is "topic\npayload": byte 0 picks one of a few topic shapes (ESPresense, OpenMQTTGateway,
// or the fuzzer's own text up to the first newline); the rest is the payload. Must never trap.

private let parser = BeaconParser(
    gatewayRooms: ["gw1": "kitchen"],
    beaconIds: ["e2c56db5dffb48d2b060d0f5a71096e0-1-2": "rex", "aabbccddeeff": "tom"])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBeacon(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var payload = Array(bytes[1...])
    let topic: String
    switch bytes[0] % 4 {
    case 0: topic = "espresense/devices/iBeacon:e2c56db5-dffb-48d2-b060-d0f5a71096e0-1-2/kitchen"
    case 1: topic = "espresense/devices/aabbccddeeff/hall"
    case 2: topic = "home/gw1/BTtoMQTT/AABBCCDDEEFF"
    default:
        let cut = payload.firstIndex(of: 0x0A) ?? payload.count
        topic = String(decoding: payload[..<cut], as: UTF8.self)
        payload = cut < payload.count ? Array(payload[(cut + 1)...]) : []
    }
    _ = parser.parse(topic: topic, payload: payload)
    return 0
}
