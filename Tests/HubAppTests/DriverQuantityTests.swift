import DriverAPI
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// A driver cannot report a quantity outside `Quantity` (that does not compile); this test shows
/// every case it can report arrives in the log.
@Suite struct DriverQuantityTests {
    /// A driver that reports one reading of every quantity when it starts.
    final class MeterDriver: Driver {
        let values: [(Quantity, Double)]
        init(values: [(Quantity, Double)]) { self.values = values }
        func run(context: any DriverContext) async throws {
            for (quantity, value) in values {
                await context.report(.reading(quantity: quantity, value: value, measuredAt: t0))
            }
            await untilCancelled()
        }
        func execute(_ command: DriverCommand) async throws {}
    }

    struct MeterFactory: DriverFactory {
        let name = "meter"
        let values: [(Quantity, Double)]
        func make(configuration: DriverConfiguration) throws -> any Driver { MeterDriver(values: values) }
    }

    @Test func everyQuantityAReportCarriesIsRecorded() async throws {
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(
            .registerDevice(id: "m", driver: "meter", name: "Meter", config: "{}", hardwareId: nil),
            actor: "test", now: t0)
        let values = Quantity.allCases.enumerated().map { ($0.element, Double($0.offset + 1)) }
        let commands = CommandService(
            hub: hub, catalog: DriverCatalog([MeterFactory(values: values)]), confirmTimeout: .seconds(1),
            logger: .discarding)
        let host = DriverHost(commands: commands, logger: .discarding)
        let running = Task { try await host.run() }
        var recorded: [(String, Double)] = []
        for _ in 0..<200 {
            recorded = []
            try await hub.store.read(from: 1, through: hub.store.lastSequence) { record in
                if record.type == EventType.readingRecorded.rawValue,
                    case .readingRecorded(let r)? = try? HubEvent.decode(
                        type: record.type, schemaVersion: record.schemaVersion,
                        payload: record.payload)
                {
                    recorded.append((r.quantity.rawValue, r.value))
                }
                return true
            }
            if recorded.count == values.count { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(recorded.map(\.0) == values.map(\.0.rawValue))
        #expect(recorded.map(\.1) == values.map(\.1))
        running.cancel()
        _ = await running.result
        try await hub.close()
    }

    /// A driver whose device's clock runs an hour ahead: its reading is refused (`reading_in_future`,
    /// a CommandRejected in the log and a warning in the hub's log), never clamped; the device
    /// shows no reading from it.
    @Test func aDriversReadingFromTheFutureIsRefused() async throws {
        final class AheadDriver: Driver {
            func run(context: any DriverContext) async throws {
                await context.report(.reading(quantity: .power, value: 5, measuredAt: currentMicros() + 3_600_000_000))
                await untilCancelled()
            }
            func execute(_ command: DriverCommand) async throws {}
        }
        struct AheadFactory: DriverFactory {
            let name = "ahead"
            func make(configuration: DriverConfiguration) throws -> any Driver { AheadDriver() }
        }
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(
            .registerDevice(id: "m", driver: "ahead", name: "Ahead", config: "{}", hardwareId: nil),
            actor: "test", now: currentMicros())
        let commands = CommandService(hub: hub, catalog: DriverCatalog([AheadFactory()]), confirmTimeout: .seconds(1), logger: .discarding)
        let host = DriverHost(commands: commands, logger: .discarding)
        let running = Task { try await host.run() }
        var refused: CommandRejected?
        for _ in 0..<200 where refused == nil {
            try await hub.store.read(from: 1, through: hub.store.lastSequence) { record in
                if case .commandRejected(let r)? = try? HubEvent.decode(
                    type: record.type, schemaVersion: record.schemaVersion,
                    payload: record.payload)
                {
                    refused = r
                }
                return true
            }
            if refused == nil { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(refused?.code == "reading_in_future" && refused?.target == "m", "\(String(describing: refused))")
        #expect(await hub.device("m")?.lastReading(.power) == nil)
        running.cancel()
        _ = await running.result
        try await hub.close()
    }

    /// A device that went unavailable ended its held value in the history: its first sample when
    /// it answers again is recorded, though unchanged and within the maximum interval.
    @Test func theFirstSampleAfterAnOutageIsRecorded() async throws {
        final class FlakyDriver: Driver {
            func run(context: any DriverContext) async throws {
                let now = currentMicros()
                await context.report(.availability(available: true, reason: "connected"))
                await context.report(.reading(quantity: .power, value: 100, measuredAt: now - 2_000_000))
                await context.report(.availability(available: false, reason: "gone"))
                await context.report(.availability(available: true, reason: "back"))
                await context.report(.reading(quantity: .power, value: 100, measuredAt: now - 1_000_000))
                await untilCancelled()
            }
            func execute(_ command: DriverCommand) async throws {}
        }
        struct FlakyFactory: DriverFactory {
            let name = "flaky"
            func make(configuration: DriverConfiguration) throws -> any Driver { FlakyDriver() }
        }
        let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(
            .registerDevice(id: "f", driver: "flaky", name: "Flaky", config: "{}", hardwareId: nil),
            actor: "test", now: currentMicros() - 10_000_000)
        let commands = CommandService(hub: hub, catalog: DriverCatalog([FlakyFactory()]), confirmTimeout: .seconds(1), logger: .discarding)
        let host = DriverHost(commands: commands, logger: .discarding)
        let running = Task { try await host.run() }
        var types: [String] = []
        for _ in 0..<200 {
            types = []
            try await hub.store.read(from: 2, through: hub.store.lastSequence) {
                types.append($0.type); return true
            }
            if types.count >= 5 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(types == ["AvailabilityChanged", "ReadingRecorded", "AvailabilityChanged", "AvailabilityChanged", "ReadingRecorded"])
        running.cancel()
        _ = await running.result
        try await hub.close()
    }
}
