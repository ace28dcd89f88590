import DriverAPI
import DriverTestSupport
import Foundation
import PowerPlug
import Synchronization
import Testing

/// The driver against small scripted or hostile servers written here.
@Suite struct HostilePeerTests {
    @Test func randomBytesAreAProtocolErrorAndTheDriverReconnects() async throws {
        let peer = try await TestPeer.start { connection in
            var rng = SystemRandomNumberGenerator()
            let garbage = [0x7A] + (0..<4000).map { _ in UInt8.random(in: 0...255, using: &rng) }
            try await connection.send(garbage)
            await sleepForever()
        }
        let driver = try makeDriver(port: peer.port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        let reason = try await context.waitAvailability(false)
        #expect(reason == "plug sent an unknown message type 0x7A")
        try await eventually("a reconnect") { peer.connectionCount >= 2 }
        #expect(await context.availabilities.count == 1)
        await running.stop()
        await peer.stop()
    }

    @Test func truncatedFrameThenSilence() async throws {
        let peer = try await TestPeer.start { connection in
            try await connection.send([0x53, 0x00])
            await sleepForever()
        }
        let driver = try makeDriver(port: peer.port, extra: "\"read_timeout\":0.5")
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        let reason = try await context.waitAvailability(false)
        #expect(reason == "no status from the plug for 0.5 s")
        await running.stop()
        await peer.stop()
    }

    @Test func acceptsAndNeverAnswers() async throws {
        let peer = try await TestPeer.start { _ in await sleepForever() }
        let driver = try makeDriver(port: peer.port, extra: "\"read_timeout\":1")
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        let reason = try await context.waitAvailability(false)
        #expect(reason == "no status from the plug for 1 s")
        await #expect(throws: DriverError.self) { try await driver.execute(.writeActivations([])) }
        await running.stop()
        await peer.stop()
    }

    @Test func statusTrickledByteByByteStillParses() async throws {
        let peer = try await TestPeer.start { connection in
            for byte: UInt8 in [0x53, 0x00, 0x01] {
                try await connection.send([byte])
                try await Task.sleep(for: .milliseconds(300))
            }
            await sleepForever()
        }
        let driver = try makeDriver(port: peer.port, extra: "\"read_timeout\":3")
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        #expect(try await context.waitAvailability(true) == "connected to 127.0.0.1:\(peer.port)")
        try await context.waitFor("trickled status") { $0 == .switchState(on: true, manual: false) }
        await running.stop()
        await peer.stop()
    }

    @Test func connectionRefused() async throws {
        let port = try await closedPort()
        let driver = try makeDriver(port: port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        let reason = try await context.waitAvailability(false)
        #expect(reason == "cannot connect to 127.0.0.1:\(port): connection refused")
        do {
            try await driver.execute(.setSwitch(on: true))
            Issue.record("expected not connected")
        } catch let error as DriverError {
            #expect(error.message.hasPrefix("not connected: cannot connect"), "\(error)")
        }
        await running.stop()
    }

    @Test func closedByPeer() async throws {
        let peer = try await TestPeer.start { connection in
            try await connection.send([0x53, 0, 0])
            try await Task.sleep(for: .milliseconds(100))
        }
        let driver = try makeDriver(port: peer.port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        _ = try await context.waitAvailability(true)
        let reason = try await context.waitAvailability(false)
        #expect(reason.contains("closed the connection") || reason.contains("reset"), "\(reason)")
        await running.stop()
        await peer.stop()
    }

    /// A read issued before a write must not be reported; only the needed commands are sent.
    @Test func staleReadIsDroppedAndOnlyNeededCommandsAreSent() async throws {
        let a = DeviceActivation(name: "a", start: 2_000_000_000, lengthMinutes: 1, periodMinutes: 0)
        let b = DeviceActivation(name: "b", start: 2_000_000_100, lengthMinutes: 1, periodMinutes: 0)
        let c = DeviceActivation(name: "c", start: 2_000_000_200, lengthMinutes: 1, periodMinutes: 0)
        let seen = Mutex<[[PlugCommand]]>([])
        let peer = try await TestPeer.start { connection in
            let empty = [DeviceActivation?](repeating: nil, count: 10)
            try await connection.send([0x53, 0, 0])
            // 1st session step: hold back the answer to the initial 'A' until the write's 'A' arrives.
            var commands: [PlugCommand] = []
            repeat { commands.append(try await connection.received.takeCommand()) } while commands.filter({ $0 == .list }).count < 2
            seen.withLock { $0.append(commands) }
            let stale: [DeviceActivation?] = [c] + empty.dropFirst()
            let fresh: [DeviceActivation?] = [a, b, c] + empty.dropFirst(3)
            try await connection.send(try PlugMessage.activations(stale).encoded())
            try await connection.send(try PlugMessage.activations(fresh).encoded() + [0x53, 0, 0])
            // then the driver knows [a, b, c]: a shorter list needs one update and one delete
            commands = []
            repeat { commands.append(try await connection.received.takeCommand()) } while commands.last != .list
            seen.withLock { $0.append(commands) }
            try await connection.send(try PlugMessage.activations([a, c] + empty.dropFirst(2)).encoded() + [0x53, 0, 0])
            while !Task.isCancelled {
                try await connection.send([0x53, 0, 0])
                try await Task.sleep(for: .milliseconds(300))
            }
        }
        let driver = try makeDriver(port: peer.port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        _ = try await context.waitAvailability(true)
        try await driver.execute(.writeActivations([a, b, c]))
        try await context.waitFor("fresh list") { $0 == .activations([a, b, c]) }
        try await driver.execute(.writeActivations([a, c]))
        try await context.waitFor("shorter list") { $0 == .activations([a, c]) }
        #expect(await context.activationReports == [[a, b, c], [a, c]])
        let commands = seen.withLock { $0 }
        // unknown plug contents: every slot is written or cleared, surplus from the top down
        #expect(
            commands[0] == [.list, .update(index: 0, a), .update(index: 1, b), .update(index: 2, c)]
                + (3...9).reversed().map { .delete(index: UInt8($0)) } + [.list])
        #expect(commands[1] == [.update(index: 1, c), .delete(index: 2), .list])
        await running.stop()
        await peer.stop()
    }

    /// A plug pushes its status on its own (every few seconds): one that crosses a switch command
    /// on the wire still shows the old state, and is not the command's confirmation.
    @Test func aStatusThatCrossesASwitchCommandIsNotItsConfirmation() async throws {
        let peer = try await TestPeer.start { connection in
            try await connection.send([0x53, 0, 0])
            while try await connection.received.takeCommand() != .setSwitch(on: true) {}
            try await connection.send([0x53, 0, 0])  // pushed before the plug took the command in
            try await connection.send([0x53, 1, 1])  // the switch
            await sleepForever()
        }
        let driver = try makeDriver(port: peer.port)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        try await context.waitFor("first state") { $0 == .switchState(on: false, manual: false) }
        try await driver.execute(.setSwitch(on: true))
        try await context.waitFor("on") { $0 == .switchState(on: true, manual: true) }
        let states = await context.switchStates
        #expect(states.map(\.on) == [false, true], "\(states)")
        await running.stop()
        await peer.stop()
    }

    @Test func floodOfValidStatusesStaysBounded() async throws {
        let peer = try await TestPeer.start { connection in
            let chunk = [UInt8]((0..<20_000).flatMap { i in [0x53, 0, UInt8(i & 1)] as [UInt8] })
            for _ in 0..<10 { try await connection.send(chunk) }
            await sleepForever()
        }
        let driver = try makeDriver(port: peer.port, extra: "\"read_timeout\":1")
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        let reason = try await context.waitAvailability(false, timeout: .seconds(20))
        #expect(reason == "no status from the plug for 1 s")
        #expect(await context.switchStates.count == 200_000)
        await running.stop()
        await peer.stop()
    }
}
