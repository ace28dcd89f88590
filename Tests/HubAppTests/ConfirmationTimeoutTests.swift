import DriverAPI
import HubDomain
import HubLog
import Synchronization
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// A switch command its device does not confirm within the confirmation timeout is recorded as
/// failed, counted from that command (not from an earlier one it replaced).
@Suite struct ConfirmationTimeoutTests {
    /// A driver that sends nothing and confirms only when told to (`confirmNext`).
    final class QuietDriver: Driver {
        let gate = DriverReportGate()
        func run(context: any DriverContext) async throws {
            gate.open(context)
            await untilCancelled()
            await gate.close()
        }
        func execute(_ command: DriverCommand) async throws {}
        func confirm(on: Bool) async {
            await gate.report(.switchState(on: on, manual: false))
        }
    }

    struct QuietFactory: DriverFactory {
        let name = "quiet"
        let driver = QuietDriver()
        func make(configuration: DriverConfiguration) throws -> any Driver { driver }
    }

    /// A hub with one device `p` on the quiet driver, its driver host running.
    struct Bench {
        let hub: Hub
        let commands: CommandService
        let host: DriverHost
        let running: Task<Void, any Error>
        let driver: QuietDriver

        init(timeout: Duration) async throws {
            hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
            _ = try await hub.execute(
                .registerDevice(id: "p", driver: "quiet", name: "p", config: "{}", hardwareId: nil),
                actor: "test", now: currentMicros())
            let factory = QuietFactory()
            driver = factory.driver
            commands = CommandService(hub: hub, catalog: DriverCatalog([factory]), confirmTimeout: timeout, logger: .discarding)
            host = DriverHost(commands: commands, options: DriverHostOptions(confirmTimeout: timeout), logger: .discarding)
            let host = self.host
            running = Task { try await host.run() }
            await host.sync()
        }

        /// Switches `p` on through the command path and hands the request to the host, as the log
        /// follower does. Returns the request's time (µs since the epoch).
        func switchOn() async throws -> Int64 {
            #expect(await commands.execute(.switchDevice(id: "p", target: .on), actor: "test").isOK)
            await host.handle(.switchRequested(SwitchRequested(device: "p", state: .on)))
            return try #require(await hub.device("p")?.pending?.since)
        }

        /// Waits (at most `limit`) for `p`'s latest failure.
        func failure(within limit: Duration) async throws -> SwitchFailure? {
            let deadline = ContinuousClock.now + limit
            while ContinuousClock.now < deadline {
                if let failure = await hub.device("p")?.lastFailure { return failure }
                try await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }

        /// The `SwitchFailed` events in the log.
        func failuresLogged() async throws -> Int {
            var count = 0
            try await hub.store.read(from: 1, through: hub.store.lastSequence) { record in
                if record.type == EventType.switchFailed.rawValue { count += 1 }
                return true
            }
            return count
        }

        func close() async throws {
            running.cancel()
            _ = await running.result
            await host.stopAll()
            try await hub.close()
        }
    }

    @Test func anUnconfirmedSwitchIsRecordedAsFailedAfterTheTimeout() async throws {
        let bench = try await Bench(timeout: .milliseconds(300))
        let requestedAt = try await bench.switchOn()
        let failure = try #require(try await bench.failure(within: .seconds(10)))
        #expect(failure.state == .on)
        #expect(failure.reason.contains("not confirmed by the device within"))
        #expect(failure.at - requestedAt >= 290_000, "failed \(failure.at - requestedAt) µs after the request")
        #expect(await bench.hub.device("p")?.pending == nil)
        try await bench.close()
    }

    @Test func aConfirmedSwitchIsNotFailed() async throws {
        let bench = try await Bench(timeout: .milliseconds(300))
        _ = try await bench.switchOn()
        await bench.driver.confirm(on: true)
        #expect(await bench.hub.device("p")?.switchState.state == .on)
        try await Task.sleep(for: .milliseconds(700))
        #expect(await bench.hub.device("p")?.lastFailure == nil)
        #expect(try await bench.failuresLogged() == 0)
        try await bench.close()
    }

    /// The defect: a switch sent again while the first still waits (a user pressing "on" twice)
    /// was failed when the *first* one's time was up, so the second got less than the timeout.
    @Test func aRepeatedSwitchGetsTheWholeTimeoutFromItsOwnRequest() async throws {
        let bench = try await Bench(timeout: .milliseconds(1500))
        _ = try await bench.switchOn()
        try await Task.sleep(for: .milliseconds(1000))
        let repeatedAt = try await bench.switchOn()
        let failure = try #require(try await bench.failure(within: .seconds(10)))
        #expect(failure.at - repeatedAt >= 1_480_000, "failed \(failure.at - repeatedAt) µs after the repeated request")
        // One failure for the one command still waiting; the first was replaced, not failed again.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await bench.failuresLogged() == 1)
        try await bench.close()
    }
}

/// The queue behind the confirmation watcher, without time passing.
@Suite struct SwitchConfirmationsTests {
    let start = ContinuousClock.now
    func at(_ ms: Int) -> ContinuousClock.Instant { start + .milliseconds(ms) }

    @Test func takesOutWhatIsDueInOrderAndOnlyEachDevicesLatest() {
        var queue = SwitchConfirmations()
        #expect(queue.nextDeadline == nil)
        queue.watch(device: "a", state: .on, driverName: "x", deadline: at(100))
        queue.watch(device: "b", state: .off, driverName: "y", deadline: at(110))
        queue.watch(device: "a", state: .on, driverName: "x", deadline: at(120))  // sent again: replaces the first
        queue.watch(device: "c", state: .on, driverName: "x", deadline: at(130))
        #expect(queue.count == 4 && queue.nextDeadline == at(100))

        #expect(queue.due(at: at(99)).isEmpty)
        #expect(queue.due(at: at(100)).isEmpty, "the first of a's is superseded")
        #expect(queue.due(at: at(115)).map(\.device) == ["b"])
        let next = queue.due(at: at(200))
        #expect(next.map(\.device) == ["a", "c"])
        #expect(next.map(\.driverName) == ["x", "x"] && next[0].state == .on)
        #expect(queue.count == 0 && queue.nextDeadline == nil)
        #expect(queue.due(at: at(300)).isEmpty)
    }

    @Test func aDeviceWatchedAgainAfterItsLastWasDueCountsAgain() {
        var queue = SwitchConfirmations()
        queue.watch(device: "a", state: .on, driverName: "x", deadline: at(10))
        #expect(queue.due(at: at(10)).count == 1)
        queue.watch(device: "a", state: .off, driverName: "x", deadline: at(20))
        #expect(queue.due(at: at(20)).map(\.state) == [.off])
    }

    @Test func aLongQueueKeepsItsOrderAcrossCompaction() {
        var queue = SwitchConfirmations()
        for i in 0..<2000 { queue.watch(device: "d\(i)", state: .on, driverName: "x", deadline: at(i)) }
        var seen: [String] = []
        for step in stride(from: 0, to: 2000, by: 7) { seen += queue.due(at: at(step)).map(\.device) }
        seen += queue.due(at: at(5000)).map(\.device)
        #expect(seen == (0..<2000).map { "d\($0)" })
        #expect(queue.count == 0)
    }
}
