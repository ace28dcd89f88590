import DriverAPI
import Synchronization

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

/// A switch that confirms every command at once and is always available.
public final class VirtualSwitch: Driver {
    private let context = Mutex<(any DriverContext)?>(nil)

    /// A switch, not yet started.
    public init() {}

    /// Reports the switch available.
    public func start(context: any DriverContext) async throws {
        self.context.withLock { $0 = context }
        await context.report(.availability(available: true, reason: "virtual switch"))
    }

    /// Confirms the state asked for at once.
    /// - Throws: A `DriverError` before `start` and for activations.
    public func execute(_ command: DriverCommand) async throws {
        guard let context = context.withLock({ $0 }) else { throw DriverError("virtual switch not started") }
        switch command {
        case .setSwitch(let on):
            await context.report(.switchState(on: on, manual: nil))
        case .writeActivations:
            throw DriverError("a virtual switch stores no activations")
        }
    }

    /// Forgets the context; later commands throw.
    public func stop() async {
        context.withLock { $0 = nil }
    }
}
