import DriverAPI
import Foundation
import HubDomain
import HubEngine
import HubHTTP
import HubLog
import HubMQTT
import HubMetrics
import Logging
import Prometheus
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Everything `hub run` needs to start the long-running hub.
public struct HubServiceOptions: Sendable {
    /// The data directory's paths.
    public var paths: HubPaths
    /// The configuration file's settings.
    public var config: HubConfig
    /// The drivers the hub can run, by their names.
    public var factories: [any DriverFactory]
    /// With no devices in the configuration, register `demoDevices` (those not registered yet), so
    /// a newcomer sees something.
    public var demo: Bool
    /// The demo's devices: by default two virtual switches; `hub run --demo` passes its simulated plugs.
    public var demoDevices: [HubConfig.Device] = [
        HubConfig.Device(id: "demo-lamp", driver: "virtual", name: "Demo lamp", config: "{}"),
        HubConfig.Device(id: "demo-fan", driver: "virtual", name: "Demo fan", config: "{}")
    ]
    /// Write a snapshot after this many new events.
    public var snapshotEvery: UInt64
    /// Bridges the hub runs (the executable passes the beacon bridge); `config.beacons` configures "beacons".
    public var bridgeFactories: [any BridgeFactory] = []
    /// The scheduler's clock (tests set it by hand).
    public var scheduleClock: any ScheduleClock = WallClock()
    /// Where the hub's metrics go (`hub run`: the Prometheus factory it bootstrapped).
    public var metrics: HubMetrics = .disabled
    /// The registry `/metrics` renders (the one `metrics` writes into); nil: `/metrics` answers 404.
    public var metricsRegistry: PrometheusCollectorRegistry? = nil
    /// Serve the JSON API, the console, `/metrics`, `/healthz` and `/readyz` here; nil: no HTTP
    /// listener. Off loopback a credential is required (``AccessTokens``; the first is made at start).
    public var http: HTTPSettings? = nil
    /// `/readyz` fails below this much free space on the data directory's file system.
    public var minimumFreeBytes: UInt64 = 64 * 1_048_576
    /// Conditions `/readyz` checks after the hub's own (``HubService/readinessChecks(hub:surface:options:stopping:)``).
    public var extraReadinessChecks: [ReadinessCheck] = []
    /// One of several hubs sharing a PostgreSQL log (hot standby): wait as a standby until this
    /// instance holds the lease, then run as the active one; nil: the only hub (no lease).
    public var lease: LeaseSettings? = nil
    /// Asked while waiting as a standby: true stops the wait (`hub run`: a SIGINT/SIGTERM arrived).
    public var stopStandby: @Sendable () -> Bool = { false }
    /// Starting again after this process stepped down (``HubService/steppedDown``): a log that cannot
    /// be opened is retried with back-off (the database may be restarting) instead of failing the start.
    public var retryOpeningLog = false
    /// Give the allocator's free memory back to the system this often (``MemoryTrim``); nil: never.
    public var memoryTrim: Duration? = nil
    /// Settings of the embedded segment log (its preallocation, ...); not used with PostgreSQL.
    public var logOptions = SegmentStoreOptions()

    /// Options for one hub; no demo devices and a snapshot every 10,000 events unless given.
    public init(
        paths: HubPaths, config: HubConfig = HubConfig(), factories: [any DriverFactory], demo: Bool = false,
        snapshotEvery: UInt64 = 10_000
    ) {
        self.paths = paths
        self.config = config
        self.factories = factories
        self.demo = demo
        self.snapshotEvery = snapshotEvery
        logOptions.observationCommitDelay = config.observationCommitDelay(dataDirectory: paths.dataDirectory)
    }
}

/// The running hub, composed of services run by one `ServiceGroup` (as hummingbird's
/// `Application` runs its server): the log, the MQTT connection, event feed and state publisher,
/// the log follower, the drivers, the bridges, the scheduler and the MQTT command dispatch. They
/// start in that order and shut down gracefully in the reverse one: commands stop being taken
/// first (those taken are answered), the log is closed (with a snapshot) last.
public final class HubService: Sendable {
    /// The hub actor: the log and the read models.
    public let hub: Hub
    /// The one command path every entry point uses.
    public let commands: CommandService
    /// Runs the drivers of the registered devices.
    public let drivers: DriverHost
    /// Switches devices for their activations.
    public let scheduler: Scheduler
    /// Runs the bridges (the beacon bridge).
    public let bridges: BridgeHost
    /// The MQTT surface; nil when the hub runs without a broker.
    public let surface: MQTTSurface?
    let http: HTTPService?
    /// The admin token made at this start, because the listener is off loopback and the data
    /// directory had none: to be shown once (`hub run` prints it). Only its digest is stored.
    public let newAccessToken: String?
    let group: ServiceGroup
    let logger: Logger
    /// Set when the active hub steps down (hot standby).
    let stepDown: StepDown?
    private let running = Mutex<Task<String?, Never>?>(nil)
    /// Ends when the group runs (its signal handlers are installed) or has stopped.
    private let started: AsyncStream<Void>
    private let startedSink: AsyncStream<Void>.Continuation

    /// Opens the log, registers configured devices and (unless disabled) connects to the broker:
    /// everything that can fail for a reason a person must fix fails here, before anything runs.
    ///
    /// - Parameters:
    ///   - options: what to run.
    ///   - logger: start-up lines and every service's diagnostics.
    ///   - signals: signals that shut the hub down gracefully (`hub run`: SIGINT and SIGTERM).
    public init(_ options: HubServiceOptions, logger: Logger, signals: [UnixSignal] = []) async throws {
        try options.http?.checkCanListen()
        let open = {
            try await Hub(
                paths: options.paths, snapshotEvery: options.snapshotEvery, logOptions: options.logOptions, metrics: options.metrics)
        }
        let hub: Hub
        let active: ActiveLease?
        // While a standby, /healthz and /readyz answer on the hub's HTTP address (the API says not_active).
        var standbyListener: StandbyListener? = nil
        if let lease = options.lease {
            let status = StandbyStatus("instance \(lease.instance) is connecting to the log")
            standbyListener = options.http.map { StandbyListener(settings: $0, instance: lease.instance, status: status, logger: logger) }
            do {
                let opened = try await Standby.untilActive(
                    open: open, settings: lease, retryFirstOpen: options.retryOpeningLog,
                    logger: logger, status: status, stop: options.stopStandby)
                (hub, active) = (opened.0, opened.1)
            } catch {
                await standbyListener?.stop()
                throw error
            }
        } else {
            (hub, active) = (try await open(), nil)
        }
        for line in hub.openingNotes { logger.info("\(line)") }
        if let segments = hub.store as? SegmentStore, let why = segments.observationsNotHeld {
            // The delay then costs the SD card what no delay does (docs/operations.md, Durability).
            logger.notice("observations are written as they are committed, none held for a write moment: \(why)")
        }
        if options.paths.logURL == nil, options.config.observationCommitDelaySeconds == nil,
            case .success(let device) = StorageDevice.holding(options.paths.dataDirectory), device.isMemoryCard
        {
            let seconds = HubConfig.defaultObservationCommitDelaySeconds(on: device)
            logger.info(
                "observations are held up to \(Int(seconds)) s between write moments: the data directory is on \(device.name), an SD card or eMMC (observation_commit_delay_seconds sets another delay)"
            )
        }
        do {
            var options = options
            if let lease = options.lease, !lease.derived {
                options.config.mqtt.clientId += "-" + lease.instance  // two clients with one id knock each other off
            }
            let catalog = DriverCatalog(options.factories)
            // Fenced by the lease's standing: nothing is decided, sent to a device or answered once it is not confirmed.
            let commands = CommandService(
                hub: hub, catalog: catalog, confirmTimeout: options.config.driverHostOptions.confirmTimeout,
                logger: logger, lease: active?.standing)
            let relay = MQTTRelay(logger: logger)
            let drivers = DriverHost(
                commands: commands, options: options.config.driverHostOptions, relay: relay,
                lease: active?.standing, logger: logger)
            try await Self.registerConfiguredDevices(commands: commands, options: options, logger: logger)
            let bridgeSettings =
                options.config.beacons.map { settings in
                    options.bridgeFactories.filter { $0.name == "beacons" }.map { (factory: $0, settingsJSON: settings) }
                } ?? []
            let bridges = BridgeHost(
                commands: commands, relay: relay, bridges: options.config.mqtt.enabled ? bridgeSettings : [], logger: logger)
            var surface: MQTTSurface? = nil
            if options.config.mqtt.enabled {
                surface = try await MQTTSurface.connect(
                    hub: hub, commands: commands, drivers: drivers, bridges: bridges, relay: relay,
                    settings: options.config.mqtt,
                    checkpointPath: options.paths.dataDirectory + "/mqtt-events.checkpoint",
                    lease: active?.standing, keepSession: options.lease?.derived == true,
                    logger: logger)
            }
            let scheduler = Scheduler(commands: commands, drivers: drivers, clock: options.scheduleClock)
            // Follow the log from here, before the drivers start, so what they report at start-up is published too.
            let console = ConsoleFeed()
            let stepDown = active.map { StepDown(instance: $0.instance, surface: surface, logger: logger) }
            let follower = HubLogFollower(
                hub: hub, from: hub.store.lastSequence + 1, surface: surface, drivers: drivers, scheduler: scheduler,
                bridges: bridges, console: console, stepDown: stepDown)
            // The keeper stops last (it closes the log); the snapshot writer just before it.
            var services: [any Service] = [HubLogKeeper(hub: hub, logger: logger), SnapshotWriter(hub: hub)]
            if let active, let lease = options.lease, let stepDown {
                // Stops after everything that appends, so it releases the lease last (before the log closes).
                services.append(LeaseKeeper(lease: active, settings: lease, surface: surface, stepDown: stepDown, logger: logger))
                surface?.keepRetained(surface!.topics.activeStatus, active.announcement)
            }
            let stopping = StoppingFlag()
            var http: HTTPService? = nil
            var newAccessToken: String? = nil
            if let settings = options.http {
                let tokens = AccessTokens(dataDirectory: options.paths.dataDirectory)
                if !settings.isLoopback { newAccessToken = try tokens.ensureOne() }
                let readiness = Readiness(
                    Self.readinessChecks(hub: hub, surface: surface, options: options, stopping: stopping)
                        + options.extraReadinessChecks)
                let responders = ObservabilityResponders(hub: hub, link: surface, registry: options.metricsRegistry, readiness: readiness)
                // Second to start, second to last to stop: /healthz answers while the others stop.
                let routes = HubRoutes(
                    hub: hub, commands: commands, drivers: drivers, bridges: bridges, link: surface,
                    dataDirectory: options.paths.dataDirectory,
                    observability: responders,
                    requests: surface?.requests ?? Requests(hub: hub, commands: commands, drivers: drivers, bridges: bridges),
                    base: surface?.topics.base ?? MQTTTopics(base: options.config.mqtt.baseTopic).base,
                    requireCredential: !settings.isLoopback, tokens: tokens, console: console,
                    time: options.config.timeZone.flatMap(TimeZone.init(identifier:)).map(LocalTime.init(zone:)) ?? .system,
                    http: settings)
                http = HTTPService(settings: settings, router: routes.router(), metrics: hub.metrics, logger: logger)
                services.append(http!)
            }
            if let surface { services += [surface.connection, surface.eventFeed, surface.statePublisher] }
            // Stops before the surface, so the head signed at shutdown is published.
            services.append(
                AuditHeads(
                    store: hub.store, dataDirectory: options.paths.dataDirectory,
                    every: .milliseconds(Int64(options.config.auditHeadSeconds * 1000)), surface: surface, logger: logger))
            services.append(StorageWatch(hub: hub, changed: { [surface] report in surface?.publishStorage(report) }, logger: logger))
            if let every = options.memoryTrim { services.append(MemoryTrim(every: every)) }
            // The drivers start before the follower hands them commands, and stop after it (a command
            // the follower hands over at shutdown finds its driver still there).
            services += [drivers, follower, bridges, scheduler]
            if let surface { services.append(surface.commandDispatch) }
            services.append(ShutdownNotice(logger: logger, stopping: stopping, stepDown: stepDown))  // first to hear of a shutdown: says so
            // Started after the group installed its signal handlers and after every other service.
            let (started, startedSink) = AsyncStream<Void>.makeStream()
            services.append(StartNotice(sink: startedSink))
            await standbyListener?.stop()  // the address is the active hub's listener's from here
            standbyListener = nil
            group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: services.map {
                        .init(
                            service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                            failureTerminationBehavior: .gracefullyShutdownGroup)
                    },
                    gracefulShutdownSignals: signals, logger: Self.lifecycleLogger(logger)))
            self.hub = hub
            self.commands = commands
            self.drivers = drivers
            self.scheduler = scheduler
            self.bridges = bridges
            self.surface = surface
            self.http = http
            self.newAccessToken = newAccessToken
            self.logger = logger
            self.stepDown = stepDown
            self.started = started
            self.startedSink = startedSink
        } catch {
            await standbyListener?.stop()
            // Nothing runs: give the log back (snapshot, lock released) before saying why.
            do { try await hub.close() } catch let closing {
                logger.error("the log could not be closed after a failed start", metadata: ["error": "\(closing)"])
            }
            throw error
        }
    }

    /// Opens the hub (see `init`) and runs it in the background until `stop()` or a fatal failure.
    public static func start(_ options: HubServiceOptions, logger: Logger, signals: [UnixSignal] = []) async throws -> HubService {
        let service = try await HubService(options, logger: logger, signals: signals)
        service.launch()
        return service
    }

    /// Runs the services in the background.
    public func launch() {
        running.withLock { task in
            guard task == nil else { return }
            task = Task { [group, startedSink] in
                defer { startedSink.finish() }
                do {
                    try await group.run()
                    return nil
                } catch {
                    return "\(error)"
                }
            }
        }
    }

    /// Waits until the services run: the group's handlers for the shutdown signals are installed,
    /// so a signal from now on shuts the hub down gracefully. Returns at once if it has stopped.
    public func waitUntilRunning() async {
        for await _ in started { return }
    }

    /// Waits until the hub stopped: nil after a graceful shutdown (`stop()` or a signal), or why it
    /// could not go on (the broker refused it for good, the log cannot be followed).
    public func finished() async -> String? {
        guard let task = running.withLock({ $0 }) else { return nil }
        return await task.value
    }

    /// Why this hub, active among several sharing a PostgreSQL log, stepped down (it lost its lease
    /// or its connection to the database), once it did; nil otherwise. The services stop as after
    /// any failure (``finished()`` says why), and `hub run` starts again as a standby.
    public var steppedDown: String? { stepDown?.reason }

    /// Shuts the services down in order (the surface publishes `offline`, the drivers stop, the
    /// log is snapshotted and closed) and waits for them.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        if let reason = await finished() { throw HubError.failed(reason) }
    }

    /// The service group's own lines (a service starting, finishing) are written only at `trace`:
    /// at `debug` they would drown the hub's own.
    static func lifecycleLogger(_ logger: Logger) -> Logger {
        var quieter = logger
        if logger.logLevel > .trace { quieter.logLevel = max(logger.logLevel, .info) }
        return quieter
    }

    /// Where the HTTP listener was asked to listen; nil without one.
    public var httpSettings: HTTPSettings? { http?.settings }

    /// The port the HTTP listener is bound to once it is (the one asked for, or the one picked for
    /// port 0); nil without a listener or when it stopped before binding.
    public func httpPort() async -> Int? {
        await http?.port()
    }

    /// The hub's own readiness conditions, in the order `/readyz` reports them: not stopping, the
    /// log's writer healthy, the broker connected (with MQTT), free space on the data directory.
    /// A condition another part of the hub provides (such as a writer refusing appends on a full
    /// disk) is added here or passed in ``HubServiceOptions/extraReadinessChecks``.
    static func readinessChecks(hub: Hub, surface: MQTTSurface?, options: HubServiceOptions, stopping: StoppingFlag) -> [ReadinessCheck] {
        var checks = [
            ReadinessCheck(name: "lifecycle") { stopping.isSet ? "the hub is stopping" : nil },
            Readiness.log(hub),
            Readiness.storage(hub)
        ]
        if let surface { checks.append(Readiness.mqtt(surface, host: options.config.mqtt.host, port: options.config.mqtt.port)) }
        checks.append(Readiness.disk(options.paths.dataDirectory, minimumFreeBytes: options.minimumFreeBytes))
        return checks
    }

    static func registerConfiguredDevices(commands: CommandService, options: HubServiceOptions, logger: Logger) async throws {
        let hub = commands.hub
        var wanted = options.config.devices
        if options.demo, wanted.isEmpty {
            wanted = options.demoDevices
            let missing = await wanted.asyncFilter { wanted in
                if let record = await hub.device(wanted.id) { return record.removed }
                return await hub.outlets(of: wanted.id).isEmpty
            }
            if !missing.isEmpty {
                logger.info("demo: registering \(missing.map { "\($0.id) (\($0.driver))" }.joined(separator: ", "))")
            }
        }
        for device in wanted {
            let outlets = await hub.outlets(of: device.id)
            if let first = outlets.first {
                if first.driver != device.driver {
                    logger.warning(
                        """
                        device \(device.id) is already registered as a strip of driver \(first.driver) with outlets \
                        \(outlets.map(\.id).joined(separator: ", ")); the config file's entry differs and is not applied \
                        (remove the strip to re-register it)
                        """)
                }
                continue
            }
            if let existing = await hub.device(device.id), !existing.removed {
                if existing.driver != device.driver || existing.config != device.config {
                    logger.warning(
                        """
                        device \(device.id) is already registered with driver \(existing.driver) and settings \(existing.config); \
                        the config file's entry differs and is not applied (remove the device to re-register it)
                        """)
                }
                continue
            }
            let answer = await commands.execute(
                .registerDevice(
                    id: device.id, driver: device.driver, name: device.name,
                    config: device.config, hardwareId: nil), actor: "config")
            switch answer {
            case .ok: break
            case .refused(let rejection, _, _) where rejection.code == "unknown_driver":
                throw HubError.usage(
                    "device \(device.id): no driver named \"\(device.driver)\" (known: \(commands.catalog.names.joined(separator: ", ")))")
            case .refused(let rejection, _, _), .failed(let rejection):
                throw HubError.usage("device \(device.id) from the configuration: \(rejection.message)")
            }
        }
    }
}

/// Owns the log's lifetime: at shutdown (last of all) it writes a snapshot and closes the log.
struct HubLogKeeper: Service {
    let hub: Hub
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()  // shut down or cancelled: close the log either way
        if let problem = try await hub.close() {
            logger.warning("stopped; log closed, but \(problem) (the next start replays the log from it)")
        } else {
            logger.info("stopped; snapshot written, log closed")
        }
    }
}

/// Says the group runs (``HubService/waitUntilRunning()``), then waits for the shutdown.
struct StartNotice: Service {
    let sink: AsyncStream<Void>.Continuation

    func run() async throws {
        sink.yield()
        sink.finish()
        try? await gracefulShutdown()
    }
}

/// Set once the hub's graceful shutdown began.
final class StoppingFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .relaxed) }
    var isSet: Bool { flag.load(ordering: .relaxed) }
}

/// Says `stopping` as soon as a graceful shutdown begins.
struct ShutdownNotice: Service {
    let logger: Logger
    /// Set when the shutdown begins (`/readyz` then says not ready).
    let stopping: StoppingFlag
    /// With a hot standby: set when this instance steps down, which ends the services but not the process.
    var stepDown: StepDown? = nil

    func run() async throws {
        do { try await gracefulShutdown() } catch { return }  // cancelled: nothing to announce
        stopping.set()
        if stepDown?.reason != nil {
            logger.info("stepping down to standby: stopping the drivers, the scheduler and the command surface; the process keeps running")
        } else {
            logger.info("stopping")
        }
    }
}

/// Hands every newly committed event to the read models, the drivers, the scheduler and the
/// bridges, and marks what the surface must re-publish. A log that cannot be followed stops the
/// hub (drivers and state would go stale).
struct HubLogFollower: Service {
    let hub: Hub
    let from: UInt64
    let surface: MQTTSurface?
    let drivers: DriverHost
    let scheduler: Scheduler
    /// Places an animal admitted with a collar the bridges hear now.
    var bridges: BridgeHost? = nil
    /// The console's live updates (ended when the follower stops, so open pages let the listener stop).
    var console: ConsoleFeed? = nil
    /// With a hot standby: a log that cannot be followed (the database connection was lost) makes
    /// this instance step down.
    var stepDown: StepDown? = nil

    func run() async throws {
        defer { console?.finish() }
        do {
            try await cancelWhenGracefulShutdown { [self] in
                for try await record in hub.store.subscribe(from: from) {
                    // The read models first, so drivers and the surface see this event's effect.
                    try await catchUp()
                    if let stream = StreamKey(stream: record.stream) { surface?.changed(stream: stream) }
                    // Decoded once, when the read models folded it.
                    let event = hub.event(of: record)
                    console?.publish(ConsoleChange(record, event: event))
                    guard let event else { continue }  // counted by the read models as skipped
                    await drivers.handle(event)
                    await scheduler.handle(event)
                    await bridges?.handle(event, at: record.timestamp)
                }
            }
        } catch is CancellationError {
        } catch {
            stepDown?.record("the log cannot be followed: \(error)")
            throw HubError.failed("event log: \(error)")
        }
    }
}

extension HubLogFollower {
    /// The read models caught up to the record just followed; while the log's database cannot be
    /// reached for a moment (it restarts: the store connects again), asked again every 0.1 s.
    func catchUp() async throws {
        while true {
            do {
                return try await hub.catchUpWithoutBlocking()
            } catch EventLogError.unreachable {
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}

extension Array {
    func asyncFilter(_ keep: (Element) async -> Bool) async -> [Element] {
        var out: [Element] = []
        for element in self where await keep(element) { out.append(element) }
        return out
    }
}
