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

/// Each device's commands reach its driver in order, one at a time, through a worker that exists
/// only while commands wait (no idle task per device).
@Suite struct DriverQueueTests {
    /// What one device's driver was given, and whether two commands ever ran at once.
    final class Recorder: Sendable {
        struct Log { var seen: [Bool] = []; var busy = false; var overlapped = false }
        let log = Mutex(Log())
        var seen: [Bool] { log.withLock { $0.seen } }
        var overlapped: Bool { log.withLock { $0.overlapped } }
    }

    /// A driver that takes a while per switch command.
    final class SlowDriver: Driver {
        let recorder: Recorder
        init(recorder: Recorder) { self.recorder = recorder }
        func run(context: any DriverContext) async throws { await untilCancelled() }
        func execute(_ command: DriverCommand) async throws {
            guard case .setSwitch(let on) = command else { return }
            recorder.log.withLock { l in
                if l.busy { l.overlapped = true }
                l.busy = true
            }
            try await Task.sleep(for: .milliseconds(15))
            recorder.log.withLock { l in
                l.seen.append(on); l.busy = false
            }
        }
    }

    struct SlowFactory: DriverFactory {
        let name = "slow"
        let recorders: [String: Recorder]
        func make(configuration: DriverConfiguration) throws -> any Driver {
            SlowDriver(recorder: recorders[configuration.deviceId]!)
        }
        func seen(_ device: String) -> [Bool] { recorders[device]!.seen }
        func overlapped(_ device: String) -> Bool { recorders[device]!.overlapped }
    }

    @Test func commandsReachEachDriverInOrderOneAtATimeAndNoWorkerStaysIdle() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        for id in ["a", "b"] {
            _ = try await hub.execute(
                .registerDevice(id: id, driver: "slow", name: id, config: "{}", hardwareId: nil),
                actor: "test", now: t0)
        }
        let factory = SlowFactory(recorders: ["a": Recorder(), "b": Recorder()])
        let commands = CommandService(hub: hub, catalog: DriverCatalog([factory]), confirmTimeout: .seconds(30), logger: .discarding)
        let host = DriverHost(commands: commands, options: DriverHostOptions(confirmTimeout: .seconds(30)), logger: .discarding)
        let running = Task { try await host.run() }
        await host.sync()
        let wanted: [Bool] = [true, false, true, true, false, true, false, false]
        for on in wanted {
            for id in ["a", "b"] {
                await host.handle(.switchRequested(SwitchRequested(device: id, state: on ? .on : .off)))
            }
        }
        for _ in 0..<500 where factory.seen("a").count < wanted.count || factory.seen("b").count < wanted.count {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(factory.seen("a") == wanted)
        #expect(factory.seen("b") == wanted)
        #expect(!factory.overlapped("a") && !factory.overlapped("b"))
        // The workers end with their queues: nothing stays per device.
        for _ in 0..<100 {
            if await host.queued.isEmpty { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(await host.queued.isEmpty)

        // A later command starts a new worker.
        await host.handle(.switchRequested(SwitchRequested(device: "a", state: .on)))
        for _ in 0..<500 where factory.seen("a").count <= wanted.count { try await Task.sleep(for: .milliseconds(10)) }
        #expect(factory.seen("a") == wanted + [true])

        running.cancel()
        _ = await running.result
        await host.stopAll()
        try await hub.close()
    }

    /// At start-up the log follower may hand a switch command over before the drivers' own start
    /// (`run()`) has started them: the command waits for its driver and reaches the device, instead
    /// of failing with "the device has no running driver" (and a spurious `SwitchFailed`).
    @Test func aCommandHandedOverBeforeTheDriversStartedReachesItsDevice() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(
            .registerDevice(id: "a", driver: "slow", name: "a", config: "{}", hardwareId: nil), actor: "test", now: t0)
        _ = try await hub.execute(.switchDevice(id: "a", target: .on), actor: "test", now: t0 + 1)
        let factory = SlowFactory(recorders: ["a": Recorder()])
        let commands = CommandService(hub: hub, catalog: DriverCatalog([factory]), confirmTimeout: .seconds(30), logger: .discarding)
        let host = DriverHost(commands: commands, options: DriverHostOptions(confirmTimeout: .seconds(30)), logger: .discarding)
        // The follower's hand-over comes first; the host's run() (its start-up sync) after it.
        await host.handle(.switchRequested(SwitchRequested(device: "a", state: .on)))
        let running = Task { try await host.run() }
        for _ in 0..<500 where factory.seen("a").isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(factory.seen("a") == [true])
        var failed: [String] = []
        try await hub.store.read(from: 1, through: hub.store.lastSequence) { record in
            if record.type == "SwitchFailed" { failed.append(String(decoding: record.payload, as: UTF8.self)) }
            return true
        }
        #expect(failed.isEmpty, "spurious SwitchFailed: \(failed)")
        running.cancel()
        _ = await running.result
        await host.stopAll()
        try await hub.close()
    }
}
