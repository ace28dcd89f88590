import DriverAPI

/// A switch that exists only in the hub: it confirms every command at once. For tests, demos, and
/// users who want virtual switches (a "holiday mode" flag that automations can flip).
public struct VirtualDriverFactory: DriverFactory {
    /// The driver name devices are registered with.
    public let name = "virtual"
    /// A factory.
    public init() {}

    /// A new virtual switch; the settings are ignored.
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        VirtualSwitch()
    }
}

/// A virtual switch: available while it runs, and every switch command is its own confirmation.
public final class VirtualSwitch: Driver {
    private let gate = DriverReportGate()

    /// A switch, not yet running.
    public init() {}

    /// Reports the switch available and waits to be cancelled.
    public func run(context: any DriverContext) async throws {
        gate.open(context)
        await gate.report(.availability(available: true, reason: "virtual switch"))
        await untilCancelled()
        await gate.close()
    }

    /// Confirms a switch at once (waiting for `run` to begin if it has not yet).
    public func execute(_ command: DriverCommand) async throws {
        guard await gate.openedContext() != nil else { throw DriverError("virtual switch not running") }
        switch command {
        case .setSwitch(let on):
            await gate.report(.switchState(on: on, manual: nil))
        case .writeActivations:
            throw DriverError("a virtual switch stores no activations")
        }
    }
}
