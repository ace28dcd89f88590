import DriverAPI
import Synchronization

/// A switch that exists only in the hub: it confirms every command at once. For tests, demos, and
/// users who want virtual switches (a "holiday mode" flag that automations can flip).
public struct VirtualDriverFactory: DriverFactory {
    public let name = "virtual"
    public init() {}

    public func make(configuration: DriverConfiguration) throws -> any Driver {
        VirtualSwitch()
    }
}

public final class VirtualSwitch: Driver {
    private let context = Mutex<(any DriverContext)?>(nil)

    public init() {}

    public func start(context: any DriverContext) async throws {
        self.context.withLock { $0 = context }
        await context.report(.availability(available: true, reason: "virtual switch"))
    }

    public func execute(_ command: DriverCommand) async throws {
        guard let context = context.withLock({ $0 }) else { throw DriverError("virtual switch not started") }
        switch command {
        case .setSwitch(let on):
            await context.report(.switchState(on: on, manual: nil))
        case .writeActivations:
            throw DriverError("a virtual switch stores no activations")
        }
    }

    public func stop() async {
        context.withLock { $0 = nil }
    }
}
