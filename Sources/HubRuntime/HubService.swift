import DriverAPI
import Foundation
import HubDomain
import HubLog

/// Everything `hub run` needs to start the long-running hub.
public struct HubServiceOptions: Sendable {
    public var paths: HubPaths
    public var config: HubConfig
    public var factories: [any DriverFactory]
    /// With no devices in the configuration, register `demoDevices` (those not registered yet), so
    /// a newcomer sees something.
    public var demo: Bool
    /// The demo's devices: by default two virtual switches; `hub run --demo` passes its simulated plugs.
    public var demoDevices: [HubConfig.Device] = [
        HubConfig.Device(id: "demo-lamp", driver: "virtual", name: "Demo lamp", config: "{}"),
        HubConfig.Device(id: "demo-fan", driver: "virtual", name: "Demo fan", config: "{}"),
    ]
    public var snapshotEvery: UInt64
    /// Bridges the hub runs (the executable passes the beacon bridge); `config.beacons` configures "beacons".
    public var bridgeFactories: [any BridgeFactory] = []
    /// The scheduler's clock (tests set it by hand).
    public var scheduleClock: any ScheduleClock = WallClock()

    public init(paths: HubPaths, config: HubConfig = HubConfig(), factories: [any DriverFactory], demo: Bool = false,
                snapshotEvery: UInt64 = 10_000) {
        self.paths = paths
        self.config = config
        self.factories = factories
        self.demo = demo
        self.snapshotEvery = snapshotEvery
    }
}

/// The running hub: the log and read models (`Hub`), the drivers, and the MQTT surface, wired
/// together by catch-up subscriptions on the log.
public final class HubService: Sendable {
    public let hub: Hub
    public let drivers: DriverHost
    public let scheduler: Scheduler
    public let bridges: BridgeHost
    public let surface: MQTTSurface?
    let options: HubServiceOptions
    let tasks: LockedTasks

    /// Opens the log, registers configured devices, starts drivers and (unless disabled) connects
    /// to the broker. `note` receives start-up lines for the operator.
    public static func start(_ options: HubServiceOptions, note: @escaping @Sendable (String) -> Void) async throws -> HubService {
        let hub = try Hub(paths: options.paths, snapshotEvery: options.snapshotEvery)
        for line in hub.openingNotes { note(line) }
        let relay = MQTTRelay()
        let drivers = DriverHost(hub: hub, factories: options.factories, options: options.config.driverHostOptions, relay: relay)
        try await registerConfiguredDevices(hub: hub, options: options, knownDrivers: drivers.driverNames, note: note)
        var surface: MQTTSurface? = nil
        if options.config.mqtt.enabled {
            surface = try await MQTTSurface.start(hub: hub, drivers: drivers, relay: relay, settings: options.config.mqtt,
                                                  checkpointPath: options.paths.dataDirectory + "/mqtt-events.checkpoint", note: note)
        }
        let scheduler = Scheduler(hub: hub, drivers: drivers, clock: options.scheduleClock)
        let bridges = BridgeHost(hub: hub, relay: relay)
        let service = HubService(hub: hub, drivers: drivers, scheduler: scheduler, bridges: bridges, surface: surface, options: options)
        // Follow the log before the drivers start, so what they report at start-up is published too.
        service.followLog(from: hub.store.lastSequence + 1)
        await surface?.setFatalHandler { reason in service.fail(reason) }
        await drivers.sync()
        await drivers.startDiscovery()
        if let surface {
            surface.setBridges(bridges)
            await bridges.setPresenceHandler { animal in surface.changed(stream: "animal/" + animal) }
            for factory in options.bridgeFactories {
                guard factory.name == "beacons", let settings = options.config.beacons else { continue }
                if let problem = await bridges.start(factory, settingsJSON: settings) { note(problem) }
            }
        }
        await scheduler.start()
        return service
    }

    init(hub: Hub, drivers: DriverHost, scheduler: Scheduler, bridges: BridgeHost, surface: MQTTSurface?, options: HubServiceOptions) {
        self.hub = hub
        self.drivers = drivers
        self.scheduler = scheduler
        self.bridges = bridges
        self.surface = surface
        self.options = options
        self.tasks = LockedTasks()
        (failures, failureSink) = AsyncStream<String>.makeStream()
    }

    /// Reasons the service cannot go on (e.g. the broker refuses it for good); `hub run` stops on the first.
    public let failures: AsyncStream<String>
    let failureSink: AsyncStream<String>.Continuation

    func fail(_ reason: String) {
        failureSink.yield(reason)
    }

    /// Hands every newly committed event to the drivers and marks what the surface must re-publish.
    func followLog(from sequence: UInt64) {
        let hub = self.hub, drivers = self.drivers, scheduler = self.scheduler, surface = self.surface
        let failureSink = self.failureSink
        tasks.add(Task {
            do {
                for try await record in hub.store.subscribe(from: sequence) {
                    // The read models first, so drivers and the surface see this event's effect.
                    try? await hub.catchUp()
                    surface?.changed(stream: record.stream)
                    guard let event = try? HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion,
                                                           payload: record.payload) else { continue }
                    await drivers.handle(event)
                    await scheduler.handle(event)
                }
            } catch is CancellationError {
            } catch {
                // The log cannot be followed (its writer stopped): drivers and state would go stale.
                if !Task.isCancelled { failureSink.yield("event log: \(error)") }
            }
        })
    }

    static func registerConfiguredDevices(hub: Hub, options: HubServiceOptions, knownDrivers: [String],
                                          note: @Sendable (String) -> Void) async throws {
        var wanted = options.config.devices
        if options.demo, wanted.isEmpty {
            wanted = options.demoDevices
            let missing = await wanted.asyncFilter { await hub.state.devices[$0.id].map { $0.removed } ?? true }
            if !missing.isEmpty {
                note("demo: registering " + missing.map { "\($0.id) (\($0.driver))" }.joined(separator: ", "))
            }
        }
        for device in wanted {
            guard knownDrivers.contains(device.driver) else {
                throw HubError.usage("device \(device.id): no driver named \"\(device.driver)\" (known: \(knownDrivers.joined(separator: ", ")))")
            }
            if let existing = await hub.state.devices[device.id], !existing.removed {
                if existing.driver != device.driver || existing.config != device.config {
                    note("device \(device.id) is already registered with driver \(existing.driver) and settings \(existing.config); "
                         + "the config file's entry differs and is not applied (remove the device to re-register it)")
                }
                continue
            }
            let outcome = try await hub.execute(.registerDevice(id: device.id, driver: device.driver, name: device.name,
                                                                config: device.config, hardwareId: nil),
                                                commandId: nil, actor: "config", now: currentMicros())
            if case .rejected(let rejection, _, _) = outcome {
                throw HubError.usage("device \(device.id) from the configuration: \(rejection.message)")
            }
        }
    }

    /// Stops the surface (publishing `offline`), the drivers and the log, writing a snapshot.
    public func stop() async throws {
        tasks.cancelAll()
        await scheduler.stop()
        await bridges.stopAll()
        await surface?.stop()
        await drivers.stopAll()
        try await hub.close()
    }
}

/// Background tasks owned by a service, cancelled together.
final class LockedTasks: @unchecked Sendable {
    private let lock = NSLock()
    private var tasks: [Task<Void, Never>] = []
    func add(_ task: Task<Void, Never>) { lock.lock(); tasks.append(task); lock.unlock() }
    func cancelAll() {
        lock.lock(); let all = tasks; tasks.removeAll(); lock.unlock()
        all.forEach { $0.cancel() }
    }
}

extension Array {
    func asyncFilter(_ keep: (Element) async -> Bool) async -> [Element] {
        var out: [Element] = []
        for element in self where await keep(element) { out.append(element) }
        return out
    }
}
