import DriverAPI
import HubDomain
import HubLog
import Synchronization
import Testing

@testable import HubApp
@testable import HubEngine

/// A device edited behind the hub's back is recorded once: read-backs requested before the hub's
/// restoring write (a poll beside a status, say) show the same list again, and are not a second
/// divergence. A restore the device did not take is recorded again.
@Suite struct ActivationReadBackTests {
    static let night = DeviceActivation(name: "night", start: t0 / 1_000_000 + 86_400, lengthMinutes: 5, periodMinutes: 0)
    static let rogue = DeviceActivation(name: "rogue", start: t0 / 1_000_000 + 86_400, lengthMinutes: 600, periodMinutes: 0)

    /// Reports `before` as read-backs when it starts, and after every write reads back `after`. As
    /// a real device answers in order, a write's read-back comes after every read-back asked before
    /// it: the write waits until `before` are all reported.
    final class StoringDriver: Driver {
        let before: [[DeviceActivation]]
        let after: [DeviceActivation]?
        let writes = Mutex<[[DeviceActivation]]>([])
        let beforeReported = Mutex(false)
        let context = Mutex<(any DriverContext)?>(nil)
        init(before: [[DeviceActivation]], after: [DeviceActivation]?) {
            self.before = before
            self.after = after
        }
        var capabilities: DriverCapabilities { DriverCapabilities(storesActivations: true, activationSlots: 4) }
        func run(context: any DriverContext) async throws {
            self.context.withLock { $0 = context }
            for list in before { await context.report(.activations(list)) }
            beforeReported.withLock { $0 = true }
            await untilCancelled()
        }
        func execute(_ command: DriverCommand) async throws {
            guard case .writeActivations(let list) = command else { return }
            writes.withLock { $0.append(list) }
            while !beforeReported.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(1)) }
            let context = context.withLock { $0 }
            await context?.report(.activations(after ?? list))
            // Reports are taken in order: once this one is in the log, the read-back before it was taken.
            await context?.report(.availability(available: true, reason: "read back"))
        }
    }

    struct StoringFactory: DriverFactory {
        let name = "storing"
        let driver: StoringDriver
        func make(configuration: DriverConfiguration) throws -> any Driver { driver }
    }

    /// The divergences the log holds after the driver's read-backs and the host's writes settle.
    func divergences(
        before: [[DeviceActivation]], after: [DeviceActivation]?
    ) async throws -> (
        diverged: Int, writes: [[DeviceActivation]]
    ) {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(
            .registerDevice(id: "pump", driver: "storing", name: "Pump", config: "{}", hardwareId: nil), actor: "test", now: t0)
        _ = try await hub.execute(
            .setActivation(device: "pump", op: .add, name: "night", start: Self.night.start, lengthMinutes: 5, periodMinutes: 0),
            actor: "test", now: t0)
        let driver = StoringDriver(before: before, after: after)
        let commands = CommandService(
            hub: hub, catalog: DriverCatalog([StoringFactory(driver: driver)]), confirmTimeout: .seconds(1), logger: .discarding)
        let host = DriverHost(commands: commands, logger: .discarding)
        // As the running hub does: the host sees every committed event (a restore is written then).
        let follower = Task {
            for try await record in hub.store.subscribe(from: hub.store.lastSequence + 1) {
                if let event = hub.event(of: record) { await host.handle(event) }
            }
        }
        let running = Task { try await host.run() }
        var diverged = 0
        try await waitUntil("the restore's read-back to be taken") {
            diverged = 0
            var readBack = false
            try await hub.store.read(from: 1, through: hub.store.lastSequence) { record in
                if record.type == EventType.activationsDiverged.rawValue { diverged += 1 }
                if record.type == EventType.availabilityChanged.rawValue { readBack = true }
                return true
            }
            return readBack
        }
        running.cancel()
        follower.cancel()
        _ = await running.result
        _ = await follower.result
        try await hub.close()
        return (diverged, driver.writes.withLock { $0 })
    }

    @Test func readBacksFromBeforeTheRestoringWriteAreOneDivergence() async throws {
        let (diverged, writes) = try await divergences(before: [[Self.rogue], [Self.rogue], [Self.rogue]], after: nil)
        #expect(diverged == 1)
        #expect(writes.first == [Self.night])
    }

    /// A device that keeps its own list whatever is written: the difference is recorded once and
    /// the list written back once, not again at every read-back (each would be another event and
    /// another write, as fast as the device answers). A later change of the device's activations in
    /// the log, or a new connection, compares afresh.
    @Test func aRestoreTheDeviceDoesNotTakeIsRecordedOnceNotAgainAndAgain() async throws {
        let (diverged, writes) = try await divergences(before: [[Self.rogue]], after: [Self.rogue])
        #expect(diverged == 1)
        #expect(writes == [[Self.night]])
    }
}
