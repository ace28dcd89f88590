import DriverAPI
import Foundation
import PowerPlug
import PowerPlugSimulator
import Synchronization
import Testing

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let now: Mutex<Int64>
    init(_ start: Int64) { now = Mutex(start) }
    func set(_ value: Int64) { now.withLock { $0 = value } }
    var read: @Sendable () -> Int64 { { [self] in now.withLock { $0 } } }
}

@Suite struct SimulatorTests {
    let t0: Int64 = 1_800_000_000

    @Test func speaksTheProtocolByteForByte() async throws {
        let sim = PowerPlugSimulator(options: .init(port: 0, slots: 10))
        let port = try await sim.start()
        let client = try await RawClient.connect(port: port)
        #expect(try await client.received.take(3) == [0x53, 0, 0])
        try await client.send([0x55, 0] + (try ActivationRecord.encode(lawn)))
        #expect(try await client.received.take(3) == [0x53, 0, 0])
        try await client.send([0x41])
        let list = try await client.received.take(291)
        #expect(list[0] == 0x41 && Array(list[1..<30]) == lawnBytes && list[30...].allSatisfy { $0 == 0 })
        #expect(try await client.received.take(3) == [0x53, 0, 0])
        try await client.send([0x53, 1])
        #expect(try await client.received.take(3) == [0x53, 1, 1])
        #expect(sim.activations == [lawn])
        await client.close()
        await sim.stop()
    }

    @Test func updateDeleteShiftAndOutOfRange() async throws {
        let sim = PowerPlugSimulator(options: .init(port: 0, slots: 4))
        let port = try await sim.start()
        let client = try await RawClient.connect(port: port)
        let names = ["a", "b", "c"].map { DeviceActivation(name: $0, start: 2_000_000_000, lengthMinutes: 1, periodMinutes: 0) }
        var bytes: [UInt8] = []
        for (i, a) in names.enumerated() { bytes += try PlugCommand.update(index: UInt8(i), a).encoded() }
        bytes += try PlugCommand.update(index: 4, names[0]).encoded()  // out of range: ignored
        bytes += try PlugCommand.delete(index: 0).encoded()
        try await client.send(bytes)
        try await eventually("five statuses") { client.received.bytes.count >= 3 * 6 }
        #expect(sim.activations == [names[1], names[2]])
        await client.close()
        await sim.stop()
    }

    @Test func oneClientAtATime() async throws {
        let sim = PowerPlugSimulator(options: .init(port: 0, statusInterval: .seconds(60)))
        let port = try await sim.start()
        let first = try await RawClient.connect(port: port)
        _ = try await first.received.take(3)
        let second = try await RawClient.connect(port: port)
        try await second.send([0x41])
        try await eventually("second accepted") { sim.connectionCount == 2 }
        try await Task.sleep(for: .milliseconds(400))
        #expect(second.received.bytes.isEmpty)
        try await first.send([0x53, 1])
        #expect(try await first.received.take(3) == [0x53, 1, 1])  // the first is still served
        #expect(second.received.bytes.isEmpty)
        await first.close()
        #expect(try await second.received.take(3) == [0x53, 1, 1])
        #expect(try await second.received.take(291).first == 0x41)
        await second.close()
        await sim.stop()
    }

    @Test func garbageClosesTheClient() async throws {
        let sim = PowerPlugSimulator(options: .init(port: 0))
        let port = try await sim.start()
        let client = try await RawClient.connect(port: port)
        _ = try await client.received.take(3)
        try await client.send([0x7A, 1, 2, 3])
        try await eventually("closed") { client.received.closed }
        await sim.stop()
    }

    @Test func oneShotSchedule() async throws {
        let clock = TestClock(t0)
        let sim = PowerPlugSimulator(options: .init(port: 0), clock: clock.read)
        let once = DeviceActivation(name: "once", start: t0 + 120, lengthMinutes: 2, periodMinutes: 0)
        sim.replaceActivations([once])
        sim.runSchedulerCheck()
        #expect(sim.status == (manual: false, on: false))
        clock.set(t0 + 120)
        sim.runSchedulerCheck()
        #expect(sim.status == (manual: false, on: true))
        clock.set(t0 + 240)
        sim.runSchedulerCheck()
        #expect(sim.status == (manual: false, on: true))  // end is inclusive
        clock.set(t0 + 241)
        sim.runSchedulerCheck()
        #expect(sim.status == (manual: false, on: false))
        #expect(sim.activations == [once])
    }

    @Test func periodicRollsForward() async throws {
        let clock = TestClock(t0)
        let sim = PowerPlugSimulator(options: .init(port: 0), clock: clock.read)
        let hourly = DeviceActivation(name: "hourly", start: t0, lengthMinutes: 10, periodMinutes: 60)
        sim.replaceActivations([hourly])
        sim.runSchedulerCheck()
        #expect(sim.status.on)
        clock.set(t0 + 601)
        sim.runSchedulerCheck()
        #expect(!sim.status.on)
        #expect(sim.activations.first?.start == t0 + 3600)
        clock.set(t0 + 3600 + 60)
        sim.runSchedulerCheck()
        #expect(sim.status.on)
    }

    @Test func bootRollsPassedWindowsForwardAndKeepsState() async throws {
        let path = temporaryPath("boot")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = TestClock(t0)
        let daily = DeviceActivation(name: "daily", start: t0 - 3 * 86_400, lengthMinutes: 30, periodMinutes: 1440)
        let first = PowerPlugSimulator(options: .init(port: 0, stateFile: path), clock: clock.read)
        first.replaceActivations([daily])
        let again = PowerPlugSimulator(options: .init(port: 0, stateFile: path), clock: clock.read)
        _ = try await again.start()
        #expect(again.activations == [PowerPlugProtocol.rolledForward(daily, now: t0)])
        #expect(again.activations.first?.start == t0)
        await again.stop()
    }

    @Test func manualSuspendsTheSchedulerAndOffRollsForward() async throws {
        let clock = TestClock(t0)
        let sim = PowerPlugSimulator(options: .init(port: 0), clock: clock.read)
        let port = try await sim.start()
        let hourly = DeviceActivation(name: "hourly", start: t0 + 60, lengthMinutes: 10, periodMinutes: 60)
        sim.replaceActivations([hourly])
        let client = try await RawClient.connect(port: port)
        _ = try await client.received.take(3)
        try await client.send([0x53, 1])
        #expect(try await client.received.take(3) == [0x53, 1, 1])
        clock.set(t0 + 3 * 3600 + 1000)  // windows pass while manual
        sim.runSchedulerCheck()
        #expect(sim.status == (manual: true, on: true))
        #expect(sim.activations == [hourly])
        try await client.send([0x53, 0])
        #expect(try await client.received.take(3) == [0x53, 0, 0])
        #expect(sim.activations == [PowerPlugProtocol.rolledForward(hourly, now: t0 + 3 * 3600 + 1000)])
        #expect(sim.activations.first?.start == t0 + 60 + 4 * 3600)
        clock.set(t0 + 60 + 4 * 3600)
        sim.runSchedulerCheck()
        #expect(try await client.received.take(3) == [0x53, 0, 1])  // pushed on load change
        await client.close()
        await sim.stop()
    }

    @Test func runForeverServesCountPlugsUntilCancelled() async throws {
        let lines = Mutex<[String]>([])
        let task = Task {
            try await PowerPlugSimulator.runForever(
                options: .init(port: 0), count: 3, print: { line in lines.withLock { $0.append(line) } })
        }
        try await eventually("three lines") { lines.withLock { $0.count } == 3 }
        let ports = lines.withLock { $0 }.compactMap { Int($0.split(separator: ":").last ?? "") }
        #expect(ports.count == 3)
        #expect(lines.withLock { $0 }.allSatisfy { $0.hasPrefix("powerplug simulator listening on 127.0.0.1:") })
        let client = try await RawClient.connect(port: ports[2])
        #expect(try await client.received.take(3) == [0x53, 0, 0])
        await client.close()
        task.cancel()
        try await task.value
    }
}
