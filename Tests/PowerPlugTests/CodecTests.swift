import DriverAPI
import PowerPlug
import Testing

/// "lawn" from 2024-06-01 18:00 UTC (1717264800 = 0x665B61A0), 30 min, daily (1440 = 0x05A0).
let lawn = DeviceActivation(name: "lawn", start: 1_717_264_800, lengthMinutes: 30, periodMinutes: 1440)
let lawnBytes: [UInt8] =
    [0x6C, 0x61, 0x77, 0x6E] + Array(repeating: 0, count: 17)
    + [0xA0, 0x61, 0x5B, 0x66, 0x1E, 0x00, 0xA0, 0x05]

@Suite struct RecordCodecTests {
    @Test func encodesFieldByFieldLittleEndian() throws {
        #expect(try ActivationRecord.encode(lawn) == lawnBytes)
        #expect(lawnBytes.count == 29)
    }

    @Test func decodesAndRoundTrips() throws {
        #expect(ActivationRecord.decode(lawnBytes) == lawn)
        let full = DeviceActivation(
            name: String(repeating: "x", count: 20), start: Int64(UInt32.max), lengthMinutes: 65535, periodMinutes: 1)
        #expect(ActivationRecord.decode(try ActivationRecord.encode(full)) == full)
    }

    @Test func emptySlotIsFirstByteZero() throws {
        #expect(try ActivationRecord.encode(nil) == Array(repeating: 0, count: 29))
        var bytes = lawnBytes
        bytes[0] = 0
        #expect(ActivationRecord.decode(bytes) == nil)
    }

    @Test func rejectsWhatThePlugCannotStore() {
        let bad = [
            DeviceActivation(name: "", start: 0, lengthMinutes: 1, periodMinutes: 0),
            DeviceActivation(name: String(repeating: "y", count: 21), start: 0, lengthMinutes: 1, periodMinutes: 0),
            DeviceActivation(name: "café", start: 0, lengthMinutes: 1, periodMinutes: 0),
            DeviceActivation(name: "neg", start: -1, lengthMinutes: 1, periodMinutes: 0),
            DeviceActivation(name: "far", start: Int64(UInt32.max) + 1, lengthMinutes: 1, periodMinutes: 0)
        ]
        for activation in bad {
            #expect(throws: DriverError.self) { try ActivationRecord.encode(activation) }
        }
    }

    @Test func commandBytes() throws {
        #expect(try PlugCommand.list.encoded() == [0x41])
        #expect(try PlugCommand.delete(index: 3).encoded() == [0x44, 3])
        #expect(try PlugCommand.setSwitch(on: true).encoded() == [0x53, 1])
        #expect(try PlugCommand.setSwitch(on: false).encoded() == [0x53, 0])
        #expect(try PlugCommand.update(index: 2, lawn).encoded() == [0x55, 2] + lawnBytes)
        #expect(try PlugMessage.status(manual: true, on: false).encoded() == [0x53, 1, 0])
    }

    @Test func rollForwardMatchesTheLoop() {
        let now: Int64 = 1_717_264_800 + 3 * 86_400 + 3600  // three days and an hour later
        var expected = lawn
        while expected.periodMinutes > 0 && now > expected.start + 60 * Int64(expected.lengthMinutes) {
            expected.start += 60 * Int64(expected.periodMinutes)
        }
        #expect(PowerPlugProtocol.rolledForward(lawn, now: now) == expected)
        #expect(expected.start == 1_717_264_800 + 4 * 86_400)
        let oneShot = DeviceActivation(name: "once", start: 100, lengthMinutes: 1, periodMinutes: 0)
        #expect(PowerPlugProtocol.rolledForward(oneShot, now: 10_000) == oneShot)
        // inside the window: unchanged
        #expect(PowerPlugProtocol.rolledForward(lawn, now: lawn.start + 60) == lawn)
    }
}

@Suite struct FramerTests {
    static let slots = 3
    static let list: [DeviceActivation?] = [lawn, nil, DeviceActivation(name: "b", start: 7, lengthMinutes: 1, periodMinutes: 0)]

    static func stream() throws -> (bytes: [UInt8], messages: [PlugMessage]) {
        let messages: [PlugMessage] = [.status(manual: false, on: true), .activations(list), .status(manual: true, on: true)]
        return (try messages.flatMap { try $0.encoded() }, messages)
    }

    static func parse(_ chunks: [ArraySlice<UInt8>], slots: Int = slots) throws -> [PlugMessage] {
        var framer = PowerPlugFramer(format: PlugMessageFormat(slots: slots))
        var out: [PlugMessage] = []
        for chunk in chunks {
            try framer.append(chunk)
            while let message = try framer.next() { out.append(message) }
        }
        return out
    }

    @Test func activationsMessageIsByteExact() throws {
        let bytes = try PlugMessage.activations(Self.list).encoded()
        #expect(bytes.count == 1 + 3 * 29)
        #expect(bytes[0] == 0x41)
        #expect(Array(bytes[1..<30]) == lawnBytes)
        #expect(bytes[30..<59].allSatisfy { $0 == 0 })
    }

    @Test func everySplitPoint() throws {
        let (bytes, messages) = try Self.stream()
        for split in 0...bytes.count {
            #expect(try Self.parse([bytes[..<split], bytes[split...]]) == messages, "split at \(split)")
        }
        // and every two split points, on the status + start of the list
        for a in 0..<10 {
            for b in a..<bytes.count {
                #expect(try Self.parse([bytes[..<a], bytes[a..<b], bytes[b...]]) == messages)
            }
        }
    }

    @Test func byteByByteAndMerged() throws {
        let (bytes, messages) = try Self.stream()
        #expect(try Self.parse(bytes.map { [$0][...] }) == messages)
        let twice = bytes + bytes
        #expect(try Self.parse([twice[...]]) == messages + messages)
    }

    @Test func defaultSlotsListIs291Bytes() throws {
        let list = [DeviceActivation?](repeating: nil, count: 10)
        let bytes = try PlugMessage.activations(list).encoded()
        #expect(bytes.count == 291)
        #expect(try Self.parse([bytes[...]], slots: 10) == [.activations(list)])
    }

    @Test func unknownTypeNamesByteAndOffset() throws {
        var framer = PowerPlugFramer(format: PlugMessageFormat(slots: 3))
        try framer.append([0x53, 0, 1, 0x53, 1, 1, 0x7A, 0x53])
        #expect(try framer.next() == .status(manual: false, on: true))
        #expect(try framer.next() == .status(manual: true, on: true))
        #expect(throws: PowerPlugProtocolError.unknownMessageType(0x7A, offset: 6)) { try framer.next() }
        // stays failed
        #expect(throws: PowerPlugProtocolError.self) { try framer.next() }
        let text = PowerPlugProtocolError.unknownMessageType(0x7A, offset: 6).description
        #expect(text.contains("0x7A") && text.contains("6"))
    }

    @Test func badStatusFlagIsAnError() throws {
        var framer = PowerPlugFramer(format: PlugMessageFormat())
        try framer.append([0x53, 0, 2])
        #expect(throws: PowerPlugProtocolError.invalidFlag(2, offset: 2)) { try framer.next() }
    }

    @Test func bufferIsBounded() throws {
        var framer = PowerPlugFramer(format: PlugMessageFormat(slots: 10), capacity: 600)
        #expect(framer.capacity == 600)
        try framer.append([UInt8](repeating: 0x41, count: 500))
        #expect(throws: PowerPlugProtocolError.bufferOverflow(limit: 600)) {
            try framer.append([UInt8](repeating: 0x41, count: 200))
        }
        // feed() takes any amount of valid input within the bound
        var feeder = PowerPlugFramer(format: PlugMessageFormat(slots: 10))
        let many = [UInt8]((0..<50_000).flatMap { _ in [0x53, 0, 1] as [UInt8] })
        var count = 0
        try feeder.feed(many) { _ in count += 1 }
        #expect(count == 50_000)
        #expect(feeder.bufferedCount == 0)
    }

    @Test func randomGarbageNeverCrashes() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var framer = PowerPlugFramer(format: PlugMessageFormat())
            let garbage = (0..<Int.random(in: 1...2000, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            do { try framer.feed(garbage) { _ in } } catch {}
            #expect(framer.bufferedCount <= framer.capacity)
        }
    }

    @Test func commandFramerEverySplitPoint() throws {
        let commands: [PlugCommand] = [
            .list, .update(index: 1, lawn), .delete(index: 0), .setSwitch(on: true), .setSwitch(on: false), .update(index: 9, nil)
        ]
        let bytes = try commands.flatMap { try $0.encoded() }
        #expect(bytes.count == 1 + 31 + 2 + 2 + 2 + 31)
        for split in 0...bytes.count {
            var framer = PowerPlugFramer(format: PlugCommandFormat())
            var out: [PlugCommand] = []
            for chunk in [bytes[..<split], bytes[split...]] {
                try framer.append(chunk)
                while let c = try framer.next() { out.append(c) }
            }
            #expect(out == commands, "split at \(split)")
        }
        var framer = PowerPlugFramer(format: PlugCommandFormat())
        try framer.append([0x41, 0x00])
        #expect(try framer.next() == .list)
        #expect(throws: PowerPlugProtocolError.unknownMessageType(0, offset: 1)) { try framer.next() }
    }
}
