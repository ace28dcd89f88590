import Foundation
import Testing

@testable import Kasa

@Suite struct ProtocolTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test func referenceTestVector() {
        let frame = KasaCipher.frame(#"{"system":{"get_sysinfo":{}}}"#)
        #expect(Self.hex(frame) == "0000001dd0f281f88bff9af7d5ef94b6d1b4c09fec95e68fe187e8caf08bf68bf6")
        #expect(KasaCipher.decrypt(frame.dropFirst(4)) == Array(#"{"system":{"get_sysinfo":{}}}"#.utf8))
    }

    @Test func roundTrips() {
        var rng = SystemRandomNumberGenerator()
        for length in [0, 1, 2, 17, 255, 4096] {
            let plain = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let cipher = KasaCipher.encrypt(plain)
            #expect(cipher.count == plain.count)
            #expect(KasaCipher.decrypt(cipher) == plain)
        }
        let text = #"{"emeter":{"get_realtime":{}},"alias":"Küche ☕"}"#
        #expect(KasaCipher.decrypt(KasaCipher.frame(text).dropFirst(4)) == Array(text.utf8))
    }

    @Test func decoderSplitAndMerged() throws {
        let a = #"{"system":{"get_sysinfo":{}}}"#, b = #"{"time":{"get_time":null}}"#
        let stream = KasaCipher.frame(a) + KasaCipher.frame(b) + KasaCipher.frame("")
        // Byte by byte.
        var decoder = KasaFrameDecoder()
        var frames: [String] = []
        for byte in stream {
            decoder.append([byte])
            while let frame = try decoder.next() { frames.append(String(decoding: frame, as: UTF8.self)) }
        }
        #expect(frames == [a, b, ""])
        #expect(decoder.bufferedCount == 0)
        // All at once.
        var merged = KasaFrameDecoder()
        merged.append(stream)
        #expect(try merged.next().map { String(decoding: $0, as: UTF8.self) } == a)
        #expect(try merged.next().map { String(decoding: $0, as: UTF8.self) } == b)
        #expect(try merged.next() == [])
        #expect(try merged.next() == nil)
        // Split inside the header and inside the payload.
        var split = KasaFrameDecoder()
        split.append(stream[0..<2])
        #expect(try split.next() == nil)
        split.append(stream[2..<10])
        #expect(try split.next() == nil)
        split.append(stream[10...])
        #expect(try split.next().map { String(decoding: $0, as: UTF8.self) } == a)
    }

    @Test func oversizedHeaderIsAnErrorNamingTheSize() {
        var decoder = KasaFrameDecoder()
        decoder.append([0x80, 0, 0, 0, 1, 2, 3])
        #expect(throws: KasaProtocolError.frameTooLarge(size: 2_147_483_648, limit: 65_536)) { try decoder.next() }
        #expect(
            KasaClientError.protocolError(.frameTooLarge(size: 2_147_483_648, limit: 65_536)).description
                == "plug sent a frame of 2147483648 bytes (limit 65536)")
        var small = KasaFrameDecoder(maxFrameSize: 10)
        small.append(KasaCipher.frame("12345678901"))
        #expect(throws: KasaProtocolError.frameTooLarge(size: 11, limit: 10)) { try small.next() }
        var exact = KasaFrameDecoder(maxFrameSize: 10)
        exact.append(KasaCipher.frame("1234567890"))
        #expect(throws: Never.self) { try exact.next() }
    }

    @Test func replyParsingBothFirmwares() throws {
        let new = KasaEmeterSample(realtime: [
            "current_ma": 451, "voltage_mv": 230_837, "power_mw": 61_753, "total_wh": 16_323, "err_code": 0
        ])
        #expect(new.power == 61.753 && new.voltage == 230.837 && new.current == 0.451 && new.energyWh == 16_323)
        #expect(new.readings.map(\.0) == [.power, .voltage, .current, .energy])
        let old = KasaEmeterSample(realtime: ["current": 0.128037, "voltage": 118.917389, "power": 7.677094, "total": 30.404, "err_code": 0]
        )
        #expect(old.power == 7.677094 && old.voltage == 118.917389 && old.current == 0.128037)
        #expect(abs(old.energyWh! - 30_404) < 1e-6)
        #expect(throws: KasaClientError.device(path: "system.get_sysinfo", code: -2, message: "member not support")) {
            try KasaReply.method(["system": ["get_sysinfo": ["err_code": -2, "err_msg": "member not support"]]], "system", "get_sysinfo")
        }
        #expect(throws: KasaClientError.device(path: "emeter", code: -1, message: "module not support")) {
            try KasaReply.method(["emeter": ["err_code": -1, "err_msg": "module not support"]], "emeter", "get_realtime")
        }
        #expect(throws: KasaProtocolError.notJSON(excerpt: "hello.")) { try KasaJSON.parseObject(Array("hello\u{1}".utf8)) }
    }

    @Test func errorTexts() {
        #expect(KasaClientError.noAnswer(seconds: 5, retries: 3).description == "no answer within 5 s (3 retries)")
        #expect(KasaClientError.refused(endpoint: "10.0.0.5:9999").description == "connection refused by 10.0.0.5:9999")
        #expect(KasaClientError.protocolError(.notJSON(excerpt: "xyz")).description == "reply is not JSON: xyz")
    }
}
