import DriverAPI
import Foundation
import HubDomain
import HubLog

/// Microseconds since the Unix epoch: the runtime's one clock read (the domain never reads a clock).
public func currentMicros() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
}

/// Runs one driver per registered device, hands it switch commands when the log records them,
/// and turns what the drivers observe into domain commands (actor `driver:<name>`). A command the
/// device does not confirm within `confirmTimeout` is recorded as failed.
public actor DriverHost {
    let hub: Hub
    let factories: [String: any DriverFactory]
    let confirmTimeout: Duration
    struct Running { var driver: any Driver; var driverName: String; var settings: String }
    var running: [String: Running] = [:]

    public init(hub: Hub, factories: [any DriverFactory], confirmTimeout: Duration = .seconds(5)) {
        self.hub = hub
        self.factories = Dictionary(factories.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.confirmTimeout = confirmTimeout
    }

    public nonisolated var driverNames: [String] { factories.keys.sorted() }

    /// Starts drivers for devices that have none and stops those of removed devices.
    public func sync() async {
        let devices = await hub.state.devices.all
        for device in devices where device.removed && running[device.id] != nil {
            await running.removeValue(forKey: device.id)?.driver.stop()
        }
        for device in devices where !device.removed && running[device.id] == nil {
            await start(device)
        }
    }

    private func start(_ device: DeviceRecord) async {
        guard let factory = factories[device.driver] else {
            await report(device.id, driver: device.driver,
                         .availability(available: false, reason: "no driver named \"\(device.driver)\" in this hub (known: \(driverNames.joined(separator: ", ")))"))
            return
        }
        let configuration = DriverConfiguration(deviceId: device.id, driver: device.driver, settingsJSON: device.config)
        do {
            let driver = try factory.make(configuration: configuration)
            running[device.id] = Running(driver: driver, driverName: device.driver, settings: device.config)
            try await driver.start(context: HostedContext(deviceId: device.id, driverName: device.driver, host: self))
        } catch {
            running[device.id] = nil
            await report(device.id, driver: device.driver, .availability(available: false, reason: "driver could not start: \(error)"))
        }
    }

    /// Reacts to one committed event.
    public func handle(_ event: HubEvent) async {
        switch event {
        case .deviceRegistered, .deviceRemoved:
            await sync()
        case .switchRequested(let request):
            guard let running = running[request.device] else {
                _ = try? await hub.execute(.failSwitch(id: request.device, reason: "the device has no running driver"),
                                           actor: "hub", now: currentMicros())
                return
            }
            do {
                try await running.driver.execute(.setSwitch(on: request.state == .on))
            } catch {
                _ = try? await hub.execute(.failSwitch(id: request.device, reason: "\(running.driverName): \(error)"),
                                           actor: "driver:\(running.driverName)", now: currentMicros())
                return
            }
            let timeout = confirmTimeout
            let hub = self.hub
            let name = running.driverName
            Task {
                try? await Task.sleep(for: timeout)
                let pending = await hub.device(request.device)?.pending
                if pending?.state == request.state {
                    _ = try? await hub.execute(.failSwitch(id: request.device, reason: "not confirmed by the device within \(timeout)"),
                                               actor: "driver:\(name)", now: currentMicros())
                }
            }
        default:
            break
        }
    }

    /// Turns an observation into a domain command.
    func report(_ deviceId: String, driver: String, _ observation: Observation) async {
        let now = currentMicros()
        let command: HubCommand
        switch observation {
        case let .switchState(on, manual):
            command = .reportSwitch(id: deviceId, state: on ? .on : .off, manual: manual)
        case let .reading(quantity, value, measuredAt):
            guard let q = Quantity(rawValue: quantity) else { return }
            command = .recordReading(subject: .device(deviceId), quantity: q, value: value, measuredAt: measuredAt)
        case let .availability(available, reason):
            command = .reportAvailability(id: deviceId, available: available, reason: reason)
        case let .commandFailed(reason):
            command = .failSwitch(id: deviceId, reason: reason)
        }
        _ = try? await hub.execute(command, actor: "driver:\(driver)", now: now)
    }

    public func stopAll() async {
        for (_, running) in running { await running.driver.stop() }
        running.removeAll()
    }
}

/// What a running driver sees of the hub.
struct HostedContext: DriverContext {
    let deviceId: String
    let driverName: String
    let host: DriverHost

    func report(_ observation: Observation) async {
        await host.report(deviceId, driver: driverName, observation)
    }
}
