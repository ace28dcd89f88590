import DriverAPI
import Foundation
import HubDomain
import HubLog
import Logging
import ServiceLifecycle

/// Microseconds since the Unix epoch: the runtime's one clock read (the domain never reads a clock).
public func currentMicros() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1_000_000).rounded())
}

/// How the host treats what drivers report.
public struct DriverHostOptions: Sendable {
    /// A switch command the device does not confirm within this time is recorded as failed.
    public var confirmTimeout: Duration = .seconds(5)
    /// What to do when a device's own activations differ from the log's.
    public var divergencePolicy: DivergencePolicy = .restore
    /// Deadband and maximum interval per quantity (missing quantities keep the defaults).
    public var readingRules: [Quantity: ReadingFilter.Rule] = [:]

    /// Options; the defaults are a 5 s confirmation timeout, `restore`, and the default reading rules.
    public init(
        confirmTimeout: Duration = .seconds(5), divergencePolicy: DivergencePolicy = .restore,
        readingRules: [Quantity: ReadingFilter.Rule] = [:]
    ) {
        self.confirmTimeout = confirmTimeout
        self.divergencePolicy = divergencePolicy
        self.readingRules = readingRules
    }
}

/// Runs one driver per registered device, hands it switch commands and activation lists when the
/// log records them, and turns what the drivers observe into domain commands (actor
/// `driver:<name>`). Commands reach each driver in log order through its own queue, so a slow
/// device never holds up the others; a device's worker task exists only while its queue holds
/// commands (a thousand idle devices keep no thousand idle tasks). A command the device does not confirm within the timeout is
/// recorded as failed; one watcher task serves every command waiting (`SwitchConfirmations`).
///
/// As a service it runs the registered devices' drivers and discovery, and on shutdown cancels
/// every driver and waits for it to end. Each driver's `run(context:)`, the device workers, the
/// confirmation watcher, discovery and the consumers of the drivers' reports (``DriverReportLanes``)
/// all run as child tasks of `run()`; a removed device's driver is cancelled.
public actor DriverHost: Service {
    let hub: Hub
    let commands: CommandService
    nonisolated package let catalog: DriverCatalog
    var factories: [String: any DriverFactory] { catalog.factories }
    let options: DriverHostOptions
    let relay: (any DriverMessaging)?
    let logger: Logger
    /// The active hub's lease (nil: the only hub): no command reaches a device unless it may act.
    let lease: LeaseStanding?
    /// Commands not sent to their device because the lease was not confirmed (said once per lapse).
    var fencedCommands = 0
    var saidFenced = false
    /// Set once the registered devices' drivers were started at start-up (``sync()``).
    var synced = false
    /// Work for `run()`'s task group: drivers, device workers, the confirmation watcher, discovery.
    /// Bounded (``maxJobs``): at most one job per device and kind waits at a time (a driver's run,
    /// its worker) besides the watcher and discovery, so it never fills with fewer devices.
    nonisolated let jobs: AsyncStream<Job>
    nonisolated let jobSink: AsyncStream<Job>.Continuation
    /// A child task to start: a driver's `run(context:)`, or other work (a device worker, the
    /// confirmation watcher, discovery).
    enum Job: Sendable {
        case driver(Running, HostedContext)
        case work(@Sendable () async -> Void)
    }
    /// Jobs waiting to become child tasks at most (`driver_jobs`): a job beyond it is not run, and
    /// counted (`hub_queue_overflow_total{queue="driver_jobs"}`) and logged.
    static let maxJobs = 65_536
    /// The drivers' reports on their way in (bounded lanes; see ``DriverReportLanes``).
    nonisolated let reports: DriverReportLanes

    final class Running: Sendable {
        let deviceId: String
        let driver: any Driver
        let driverName: String
        let capabilities: DriverCapabilities
        let mqtt: (any DriverMQTT)?
        /// Cancels the child task running the driver (device removed, shutdown).
        let cancellation = DriverRunCancellation()
        init(
            deviceId: String, driver: any Driver, driverName: String, capabilities: DriverCapabilities,
            mqtt: (any DriverMQTT)?
        ) {
            self.deviceId = deviceId; self.driver = driver; self.driverName = driverName
            self.capabilities = capabilities; self.mqtt = mqtt
        }
    }
    var running: [String: Running] = [:]
    /// Commands one device's queue holds at most (`driver_commands`); see ``enqueue(_:for:)``.
    static let maxQueuedCommands = 256
    /// Commands not yet handed to each driver, oldest first. A driver has an entry exactly while
    /// its worker runs (the entry may be empty while the worker carries out the last command).
    var queued: [ObjectIdentifier: [DriverCommand]] = [:]
    /// Set at shutdown: no driver starts any more.
    var stopping = false
    /// Switch commands waiting for their device's confirmation, and whether their watcher runs.
    var confirmations = SwitchConfirmations()
    var watchingConfirmations = false

    /// Per device that stores its activations: the list last written to it (or, before any write,
    /// the log's list when its driver started), and how many writes still await their read-back.
    var written: [String: [Activation]] = [:]
    var writesInFlight: [String: Int] = [:]
    /// Devices whose last write could not be sent (not connected): the next read-back triggers the
    /// write again instead of counting as a divergence.
    var writeOwed: Set<String> = []
    /// Per device whose read-back was just recorded as diverged under `restore`: the list it was
    /// found holding. Until a read-back shows the restored list (or the device's connection or its
    /// activations in the log change), a read-back showing that list again is not a new
    /// divergence: it was read before the restoring write reached the device (a poll beside it),
    /// or the device did not take the write, and the log already says what it held.
    var restoring: [String: [Activation]] = [:]
    var readings: ReadingFilter

    /// A host running the drivers of the devices `commands`' hub knows; `relay` gives MQTT-native drivers their handles (nil: no broker).
    public init(
        commands: CommandService, options: DriverHostOptions = DriverHostOptions(), relay: (any DriverMessaging)? = nil,
        lease: LeaseStanding? = nil, logger: Logger
    ) {
        self.hub = commands.hub
        self.lease = lease
        self.commands = commands
        self.catalog = commands.catalog
        self.relay = relay
        self.options = options
        self.logger = logger
        self.readings = ReadingFilter(rules: options.readingRules)
        (jobs, jobSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(Self.maxJobs))
        let metrics = commands.hub.metrics
        reports = DriverReportLanes { metrics.queueOverflowed("driver_reports") }
    }

    /// The names of the drivers this hub links, sorted.
    public nonisolated var driverNames: [String] { catalog.names }
    /// How long a switch command waits for the driver's confirmation.
    public nonisolated var confirmTimeout: Duration { options.confirmTimeout }

    /// Runs the drivers and discovery; at graceful shutdown (or cancellation) cancels every driver
    /// and returns once all have ended and their last reports are handled.
    public func run() async throws {
        await withDiscardingTaskGroup { lanes in
            // The report consumers outlive the drivers: a driver ending may still report.
            for lane in 0..<reports.laneCount {
                lanes.addTask {
                    await self.reports.consume(lane) { report in
                        await self.report(report.device, driver: report.driver, report.observation)
                    }
                }
            }
            await withDiscardingTaskGroup { group in
                group.addTask {
                    await self.sync()
                    await self.startDiscovery()
                }
                for await job in jobs.cancelOnGracefulShutdown() {
                    switch job {
                    case .driver(let r, let context):
                        // The driver runs straight from the child task's closure: the task lasts as
                        // long as the device and keeps the memory of its deepest calls until it
                        // ends, so no frame of the host's stands between it and the driver.
                        group.addTask { [weak self] in
                            r.cancellation.begin()
                            var failure: (any Error)?
                            do {
                                try await r.driver.run(context: context)
                            } catch is CancellationError {
                            } catch {
                                failure = error
                            }
                            r.cancellation.end()
                            await self?.driverEnded(r, failure: Task.isCancelled ? nil : failure)
                        }
                    case .work(let work):
                        group.addTask { await work() }
                    }
                }
                await stopAll()
                group.cancelAll()
            }
            reports.close()
        }
    }

    /// Runs `job` as a child of `run()` (queued until it runs).
    private func spawn(_ job: @escaping @Sendable () async -> Void) {
        spawn(.work(job))
    }

    /// Queues `job` to become a child task of `run()`.
    private func spawn(_ job: Job) {
        if case .dropped = jobSink.yield(job) {
            hub.metrics.queueOverflowed("driver_jobs")
            logger.error("drivers: more than \(Self.maxJobs) jobs wait to run: one was not run")
        }
    }

    /// Starts drivers for devices that have none and stops those of removed devices.
    public func sync() async {
        let devices = await hub.state.devices.all
        for device in devices where device.removed && running[device.id] != nil {
            stopDriver(device.id)
        }
        for device in devices where !device.removed && running[device.id] == nil {
            await start(device)
        }
        synced = true
    }

    /// Cancels the device's driver (its child task releases its MQTT handle as it ends).
    private func stopDriver(_ id: String) {
        guard let r = running.removeValue(forKey: id) else { return }
        r.cancellation.cancel()
        written[id] = nil
        writesInFlight[id] = nil
        restoring[id] = nil
        writeOwed.remove(id)
        readings.forget(device: id)
    }

    private func start(_ device: DeviceRecord) async {
        guard !stopping else { return }
        guard let factory = factories[device.driver] else {
            await report(
                device.id, driver: device.driver,
                .availability(
                    available: false,
                    reason: "no driver named \"\(device.driver)\" in this hub (known: \(driverNames.joined(separator: ", ")))"))
            return
        }
        let configuration = DriverConfiguration(deviceId: device.id, driver: device.driver, settingsJSON: device.config)
        do {
            let driver = try factory.make(configuration: configuration)
            let capabilities = driver.capabilities
            let mqtt = relay?.handle(scope: capabilities.mqttScope)
            let r = Running(
                deviceId: device.id, driver: driver, driverName: device.driver,
                capabilities: capabilities, mqtt: mqtt)
            running[device.id] = r
            if capabilities.storesActivations {
                written[device.id] = await hub.activations(of: device.id)
            }
            let context = HostedContext(deviceId: device.id, driverName: device.driver, lanes: reports, mqtt: mqtt)
            spawn(.driver(r, context))
        } catch {
            await report(device.id, driver: device.driver, .availability(available: false, reason: "driver could not start: \(error)"))
        }
    }

    /// After one device's driver ended (its child task is ending): lets go of its MQTT handle; a
    /// driver that failed (not cancelled) leaves its device unavailable, with the error.
    private func driverEnded(_ r: Running, failure: (any Error)?) async {
        if let mqtt = r.mqtt { relay?.release(mqtt) }
        guard let failure, running[r.deviceId] === r else { return }
        stopDriver(r.deviceId)
        await report(r.deviceId, driver: r.driverName, .availability(available: false, reason: "driver could not start: \(failure)"))
    }

    /// Queues `command` for the driver, starting its worker if none runs. A stopped driver's
    /// worker still carries out what was queued before the stop (its driver then refuses).
    private func enqueue(_ command: DriverCommand, for r: Running) {
        let key = ObjectIdentifier(r)
        if queued[key] != nil {
            if queued[key]!.count >= Self.maxQueuedCommands {
                // The oldest goes: a switch is then failed by its confirmation timeout (logged as
                // SwitchFailed), an activations write is superseded by a later one (each holds the whole list).
                if case .writeActivations = queued[key]!.removeFirst() {
                    writesInFlight[r.deviceId] = max(0, (writesInFlight[r.deviceId] ?? 1) - 1)
                }
                hub.metrics.queueOverflowed("driver_commands")
            }
            queued[key]!.append(command)
            return
        }
        queued[key] = [command]
        spawn { [weak self] in
            while let next = await self?.nextQueued(for: r) {
                await self?.perform(next, device: r.deviceId, driver: r.driver, driverName: r.driverName)
            }
        }
    }

    /// The driver's next queued command, or nil (and its worker ends) when none is left.
    private func nextQueued(for r: Running) -> DriverCommand? {
        let key = ObjectIdentifier(r)
        guard let list = queued[key], !list.isEmpty else {
            queued[key] = nil
            return nil
        }
        queued[key]!.removeFirst()
        return list[0]
    }

    /// Carries out one queued command (on the device's worker task).
    private func perform(_ command: DriverCommand, device: String, driver: any Driver, driverName: String) async {
        // Checked at the moment of sending, on the monotonic clock: a hub paused (or cut off) past
        // its lease finds it unconfirmed as soon as it runs again, and sends nothing to the device
        // (the active hub does); the command's confirmation fails in the log, or it was the new active's.
        if let lease, !lease.mayAct {
            fencedCommands += 1
            if !saidFenced {
                saidFenced = true
                logger.warning("drivers: this instance's lease is not confirmed (paused or cut off): no command is sent to any device")
            }
            return
        }
        saidFenced = false
        let started = ContinuousClock.now
        do {
            try await driver.execute(command)
            hub.metrics.driverCommand(driver: driverName, failed: false, duration: ContinuousClock.now - started)
        } catch {
            hub.metrics.driverCommand(driver: driverName, failed: true, duration: ContinuousClock.now - started)
            switch command {
            case .setSwitch:
                await execute(.failSwitch(id: device, reason: "\(driverName): \(error)"), actor: "driver:\(driverName)")
            case .writeActivations:
                writesInFlight[device] = max(0, (writesInFlight[device] ?? 1) - 1)
                writeOwed.insert(device)
            }
        }
    }

    /// Reacts to one committed event.
    public func handle(_ event: HubEvent) async {
        // At start-up a command may be logged before the drivers were started: start them first,
        // so it reaches its device instead of failing with "no running driver".
        if !synced { await sync() }
        switch event {
        case .deviceRegistered, .deviceRemoved:
            await sync()
        case .switchRequested(let request):
            guard let running = running[request.device] else {
                await execute(.failSwitch(id: request.device, reason: "the device has no running driver"), actor: "hub")
                return
            }
            enqueue(.setSwitch(on: request.state == .on), for: running)
            confirmations.watch(
                device: request.device, state: request.state, driverName: running.driverName,
                deadline: .now + options.confirmTimeout)
            if !watchingConfirmations {
                watchingConfirmations = true
                spawn { [weak self] in await self?.watchConfirmations() }
            }
        case .activationChanged(let e):
            restoring[e.device] = nil
            await writeActivations(e.device)
        case .activationsDiverged(let e) where e.resolution == .restore:
            await writeActivations(e.device)
        default:
            break
        }
    }

    /// Runs while any switch command waits for its confirmation (see `SwitchConfirmations`): when a
    /// command's time is up and its device still has it pending, it is recorded as failed.
    private func watchConfirmations() async {
        while let deadline = confirmations.nextDeadline {
            if deadline > .now {
                // Late by up to `confirmationSlack`, so that a burst's deadlines are taken together.
                do { try await Task.sleep(until: deadline + Self.confirmationSlack, clock: .continuous) } catch { break }  // shutting down
            }
            for watch in confirmations.due(at: .now) {
                guard await hub.device(watch.device)?.pending?.state == watch.state else { continue }  // confirmed, or failed already
                await execute(
                    .failSwitch(id: watch.device, reason: "not confirmed by the device within \(options.confirmTimeout)"),
                    actor: "driver:\(watch.driverName)")
            }
        }
        watchingConfirmations = false
    }

    /// How much later than its deadline an unconfirmed command may be failed.
    static let confirmationSlack: Duration = .milliseconds(20)

    /// The quantities the device's running driver reports (`DriverCapabilities.readings`); nil
    /// while no driver runs for it (not started yet, or none this hub has).
    public func readings(of device: String) -> Set<Quantity>? {
        running[device]?.capabilities.readings
    }

    /// Whether the device's running driver keeps and runs activations itself.
    public func storesActivations(_ device: String) -> Bool {
        running[device]?.capabilities.storesActivations == true
    }

    /// Sends the log's activations to a device that stores its own.
    private func writeActivations(_ device: String) async {
        guard let running = running[device], running.capabilities.storesActivations else { return }
        let list = await hub.activations(of: device)
        written[device] = list
        writesInFlight[device, default: 0] += 1
        enqueue(
            .writeActivations(
                list.map {
                    DeviceActivation(name: $0.name, start: $0.start, lengthMinutes: $0.lengthMinutes, periodMinutes: $0.periodMinutes)
                }), for: running)
    }

    /// Turns an observation into domain commands.
    func report(_ deviceId: String, driver: String, _ observation: Observation) async {
        let actor = "driver:\(driver)"
        switch observation {
        case let .switchState(on, manual):
            await execute(.reportSwitch(id: deviceId, state: on ? .on : .off, manual: manual), actor: actor)
        case let .reading(quantity, value, measuredAt):
            guard value.isFinite else { return }
            let q = quantity
            for sample in readings.admit(device: deviceId, quantity: q, value: value, at: measuredAt) {
                let answer = await commands.execute(
                    .recordReading(
                        subject: .device(deviceId), quantity: q, value: sample.value,
                        measuredAt: sample.at), actor: actor, durability: .observation)
                // Refused, not clamped (the reading's time is what it says): said in the hub's log too.
                if let rejection = answer.rejection, rejection.code == "reading_in_future" {
                    logger.warning(
                        "a driver's reading is dated in the future: refused",
                        metadata: [
                            "device": "\(deviceId)", "driver": "\(driver)", "error": "\(rejection.message)"
                        ])
                }
            }
        case let .availability(available, reason):
            // A lost connection loses the read-backs of writes in flight; the next read compares afresh.
            writesInFlight[deviceId] = 0
            restoring[deviceId] = nil
            // An unavailable device's held readings end (the history's weighting): the first
            // sample after it answers again is recorded, changed or not.
            if !available { readings.forget(device: deviceId) }
            await commands.execute(
                .reportAvailability(id: deviceId, available: available, reason: reason), actor: actor,
                durability: .observation)
        case let .commandFailed(reason):
            await execute(.failSwitch(id: deviceId, reason: reason), actor: actor)
        case let .activations(list):
            await compareActivations(
                deviceId,
                list.map {
                    Activation(name: $0.name, start: $0.start, lengthMinutes: $0.lengthMinutes, periodMinutes: $0.periodMinutes)
                }, actor: actor)
        }
    }

    /// A device's read-back list. Each write's read-back comes in order; only the last one counts.
    /// A device that still holds what was last written to it needs no decision (the log may be a
    /// moment ahead of this host: the next write follows). Anything else goes to the domain, which
    /// compares it with the log and applies the policy.
    private func compareActivations(_ device: String, _ found: [Activation], actor: String) async {
        guard running[device]?.capabilities.storesActivations == true else { return }
        let pending = writesInFlight[device] ?? 0
        if pending > 0 {
            writesInFlight[device] = pending - 1
            if pending > 1 { return }
        }
        if let last = written[device], sameActivations(last, found) {
            restoring[device] = nil
            return
        }
        if let held = restoring[device], sameActivations(held, found) { return }
        if writeOwed.remove(device) != nil {
            await writeActivations(device)
            return
        }
        let answer = await commands.execute(
            .reportActivations(device: device, found: found, policy: options.divergencePolicy), actor: actor)
        if Self.recordedRestore(answer) { restoring[device] = found }
    }

    /// Whether `answer` recorded an `ActivationsDiverged` whose resolution is `restore`.
    static func recordedRestore(_ answer: CommandAnswer) -> Bool {
        guard case .ok(let data) = answer, let events = data["events"]?.arrayValue else { return false }
        return events.contains {
            $0["type"]?.stringValue == EventType.activationsDiverged.rawValue
                && $0["data"]?["resolution"]?.stringValue == DivergencePolicy.restore.name
        }
    }

    /// Through the one command path: a failure to record is logged and counted there.
    private func execute(_ command: HubCommand, actor: String) async {
        await commands.execute(command, actor: actor)
    }

    /// At shutdown: no driver starts any more, every driver is cancelled (the task group waits for them).
    func stopAll() {
        stopping = true
        if let discoveryHandle { relay?.release(discoveryHandle) }
        discoveryHandle = nil
        for id in Array(running.keys) { stopDriver(id) }
    }

    // MARK: Discovery

    var discoveryHandle: (any DriverMQTT)?
    /// Devices announced on the broker, by suggested id (the newest announcement wins).
    var found: [String: DiscoveredDevice] = [:]
    static let maxFound = 1000

    /// Listens on the discovery filters of every factory that has them.
    func startDiscovery() {
        let discovering = factories.values.compactMap { $0 as? any DiscoveringDriverFactory }
        let filters = discovering.flatMap(\.discoveryFilters)
        let probes = discovering.flatMap(\.discoveryProbes)
        guard discoveryHandle == nil, !filters.isEmpty, let handle = relay?.handle(scope: filters + probes.map(\.topic)) else { return }
        do {
            for filter in filters { try handle.subscribe(filter) }
            for probe in probes { try handle.publish(probe.topic, probe.payload, retain: false) }
        } catch {
            logger.warning(
                "discovery: could not subscribe or probe; devices announced on the broker may not be found",
                metadata: ["error": "\(error)"])
        }
        discoveryHandle = handle
        spawn { [weak self] in
            for await message in handle.messages {
                for factory in discovering where factory.discoveryFilters.contains(where: { mqttTopic(message.topic, matches: $0) }) {
                    for device in factory.discoverAll(message) { await self?.offer(device) }
                }
            }
        }
    }

    func offer(_ device: DiscoveredDevice) {
        if found[device.suggestedId] == nil && found.count >= Self.maxFound { return }
        found[device.suggestedId] = device
    }

    /// Announced devices that are not registered yet (same driver and settings, or same hardware id).
    public func discovered() async -> [DiscoveredDevice] {
        let devices = await hub.state.devices.active
        return found.values.filter { candidate in
            !devices.contains { d in
                (d.driver == candidate.driver && covers(d.config, candidate.settingsJSON))
                    || (candidate.hardwareId != nil
                        && (d.hardwareId == candidate.hardwareId || d.outlet?.stripHardwareId == candidate.hardwareId))
            }
        }.sorted { $0.suggestedId < $1.suggestedId }
    }

    /// Whether a registered device's settings name the announced device: they share at least one
    /// key, and every key both have is equal (`{"id":"x"}` covers `{"id":"x","gen":2}`).
    private func covers(_ registered: String, _ announced: String) -> Bool {
        guard let have = try? JSONValue.parse(Array(registered.utf8)), let want = try? JSONValue.parse(Array(announced.utf8)),
            case .object(let wanted) = want
        else { return registered == announced }
        let shared = wanted.filter { key, _ in have[key] != nil }
        return !shared.isEmpty && shared.allSatisfy { key, value in have[key] == value }
    }
}

/// What a running driver sees of the hub.
struct HostedContext: DriverContext {
    let deviceId: String
    let driverName: String
    let lanes: DriverReportLanes
    let mqtt: (any DriverMQTT)?

    /// Hands the observation to its lane and waits until the host has handled it. The hub's side
    /// (the host, the command service, the log's append) runs in the lane's consumer, a long-lived
    /// child of the host: a driver reports from a task that lives as long as its connection (a
    /// plug's session), and a task keeps the memory of its deepest calls until it ends, so running
    /// the deep path there would keep it allocated in every such task (about 12 KB a TCP plug).
    func report(_ observation: Observation) async {
        await lanes.submit(.init(device: deviceId, driver: driverName, observation: observation))
    }
}
