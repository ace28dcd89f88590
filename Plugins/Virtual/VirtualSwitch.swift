import DriverAPI

/// A switch that exists only in the hub: it confirms every command at once. For tests, demos, and
/// users who want virtual switches (a "holiday mode" flag that automations can flip).
public struct VirtualDriverFactory: DriverFactory {
    /// The driver name devices are registered with.
    public let name = "virtual"
    /// A factory.
    public init() {}

    /// A new virtual switch; the settings are ignored (but for `outlets`, see ``outlets(of:)``).
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        VirtualSwitch()
    }

    /// A virtual strip: the setting `outlets` (2 to 16) makes that many virtual outlets, each a
    /// virtual switch (`{"outlet": n}`). Other settings are ignored, as a switch ignores them.
    /// - Throws: A `DriverError` for an `outlets` that is not a whole number from 2 to 16.
    public func outlets(of configuration: DriverConfiguration) throws -> [DriverOutlet]? {
        guard let settings = try? JSONValue.parse(configuration.settingsJSON), let value = settings["outlets"] else { return nil }
        guard let count = value.doubleValue, count == count.rounded(), (2...16).contains(count) else {
            throw DriverError(
                "virtual setting \"outlets\" of device \"\(configuration.deviceId)\" must be a whole number from 2 to 16, "
                    + "got \(value.serialized())")
        }
        return (1...Int(count)).map { DriverOutlet(number: $0, settingsJSON: "{\"outlet\":\($0)}") }
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
