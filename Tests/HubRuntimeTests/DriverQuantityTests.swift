import DriverAPI
import HubDomain
import HubLog
import Testing
@testable import HubRuntime

/// A driver cannot report a quantity outside `Quantity` (that does not compile); this test shows
/// every case it can report arrives in the log.
@Suite struct DriverQuantityTests {
    /// A driver that reports one reading of every quantity when it starts.
    final class MeterDriver: Driver {
        let values: [(Quantity, Double)]
        init(values: [(Quantity, Double)]) { self.values = values }
        func start(context: any DriverContext) async throws {
            for (quantity, value) in values {
                await context.report(.reading(quantity: quantity, value: value, measuredAt: t0))
            }
        }
        func execute(_ command: DriverCommand) async throws {}
        func stop() async {}
    }

    struct MeterFactory: DriverFactory {
        let name = "meter"
        let values: [(Quantity, Double)]
        func make(configuration: DriverConfiguration) throws -> any Driver { MeterDriver(values: values) }
    }

    @Test func everyQuantityAReportCarriesIsRecorded() async throws {
        let hub = try Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
        _ = try await hub.execute(.registerDevice(id: "m", driver: "meter", name: "Meter", config: "{}", hardwareId: nil),
                                  actor: "test", now: t0)
        let values = Quantity.allCases.enumerated().map { ($0.element, Double($0.offset + 1)) }
        let commands = CommandService(hub: hub, catalog: DriverCatalog([MeterFactory(values: values)]), confirmTimeout: .seconds(1),
                                      logger: .discarding)
        let host = DriverHost(commands: commands, logger: .discarding)
        await host.sync()
        var recorded: [(String, Double)] = []
        for _ in 0..<200 {
            recorded = []
            try hub.store.read(from: 1, through: hub.store.lastSequence) { record in
                if record.type == EventType.readingRecorded.rawValue,
                   case .readingRecorded(let r)? = try? HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion,
                                                                      payload: record.payload) {
                    recorded.append((r.quantity.rawValue, r.value))
                }
                return true
            }
            if recorded.count == values.count { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(recorded.map(\.0) == values.map(\.0.rawValue))
        #expect(recorded.map(\.1) == values.map(\.1))
        await host.stopAll()
        try await hub.close()
    }
}
