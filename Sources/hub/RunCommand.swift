import ArgumentParser
import BeaconBridge
import CLISupport
import CoreMetrics
import DriverAPI
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import HubMetrics
import Kasa
import PowerPlug
import Prometheus
import Shelly
import Tasmota
import UnixSignals
import VirtualDriver
import Zigbee2MQTT

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the hub until interrupted (SIGINT/SIGTERM): drivers, the MQTT surface, the console and HTTP API, the log.")

    @OptionGroup var data: DataOptions

    @Option(help: "The hub's JSON configuration file (broker, devices). Flags below override it.")
    var config: String?
    @Option(help: "Broker host.") var mqttHost: String?
    @Option(help: "Broker port.") var mqttPort: Int?
    @Option(help: "MQTT client id (the persistent session is keyed on it).") var mqttClientId: String?
    @Option(help: "Broker user name.") var mqttUsername: String?
    @Option(help: "File holding the broker password (or set HUB_MQTT_PASSWORD).") var mqttPasswordFile: String?
    @Option(help: "CA certificate file: connect with TLS.") var mqttCaFile: String?
    @Option(help: "Client certificate file (TLS).") var mqttCertFile: String?
    @Option(help: "Client key file (TLS).") var mqttKeyFile: String?
    @Flag(help: "Do not check the broker's host name against its certificate.") var mqttTlsInsecure = false
    @Option(help: "The base of every hub topic.") var baseTopic: String?
    @Option(help: "Home Assistant's discovery prefix.") var discoveryPrefix: String?
    @Option(
        help:
            "The broker user Home Assistant connects as: its discovery configs name the attributed command topics <base>/from/<user>/..., so its commands are logged as mqtt:<user>."
    ) var mqttAttributionClient: String?
    @Flag(help: "Run without the MQTT surface.") var noMqtt = false
    @Flag(
        help:
            "With no devices in the configuration: simulate two TCP power plugs and a Kasa plug in this process and register them (demo-pump, demo-heater, demo-kettle)."
    ) var demo = false
    @Option(help: "Write a read-model snapshot after this many new events.") var snapshotEvery: UInt64 = 10_000
    @Option(
        help: ArgumentHelp(
            "Serve the console, the JSON API, /metrics, /healthz and /readyz here (default 127.0.0.1:8080). Any address other than loopback requires a token (hub token).",
            valueName: "address:port"))
    var http: String?
    @Flag(help: "Run without the HTTP listener (no console, API or /metrics).") var noHttp = false
    @Option(
        help: ArgumentHelp(
            "This hub's name among several sharing one PostgreSQL log (--log postgres://...): the one holding the lease is active, the others follow the log as standbys and take over when it lapses. Its MQTT client id gets -NAME appended.",
            valueName: "name"))
    var instance: String?
    @Option(
        help: ArgumentHelp(
            "How long readings, sightings and availability reports may be held before they are written and synced, so that they share pages on disk (0 to 300; default 300 when the data directory is on an SD card or eMMC, else 10; 0 syncs every event before going on). Commands are synced before they are answered.",
            valueName: "seconds"))
    var observationCommitDelay: Double?
    @OptionGroup var log: LogLevelOption

    func settings() throws -> HubConfig {
        var settings = try config.map(HubConfig.load(path:)) ?? HubConfig()
        if let mqttHost { settings.mqtt.host = mqttHost }
        if let mqttPort {
            guard (1...65535).contains(mqttPort) else { throw ValidationError("--mqtt-port must be 1 to 65535") }
            settings.mqtt.port = mqttPort
        }
        if let mqttClientId { settings.mqtt.clientId = mqttClientId }
        if let mqttUsername { settings.mqtt.username = mqttUsername }
        if let file = mqttPasswordFile {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw HubError.usage("--mqtt-password-file: cannot read \(file)")
            }
            settings.mqtt.password = text.trimmingCharacters(in: .whitespacesAndNewlines)
        } else if let password = ProcessInfo.processInfo.environment["HUB_MQTT_PASSWORD"] {
            settings.mqtt.password = password
        }
        if let mqttCaFile { settings.mqtt.caFile = mqttCaFile }
        if let mqttCertFile { settings.mqtt.certFile = mqttCertFile }
        if let mqttKeyFile { settings.mqtt.keyFile = mqttKeyFile }
        if mqttTlsInsecure { settings.mqtt.tlsInsecure = true }
        if let baseTopic {
            guard MQTTNames.isValidBase(baseTopic) else {
                throw HubError.usage("--base-topic \(baseTopic): no + or #, no leading or trailing /")
            }
            settings.mqtt.baseTopic = baseTopic
        }
        if let discoveryPrefix {
            guard MQTTNames.isValidBase(discoveryPrefix) else { throw HubError.usage("--discovery-prefix \(discoveryPrefix): no + or #") }
            settings.mqtt.discoveryPrefix = discoveryPrefix
        }
        if let mqttAttributionClient {
            if let refusal = ClientName.problem(mqttAttributionClient) {
                throw HubError.usage("--mqtt-attribution-client \(mqttAttributionClient): \(refusal.message)")
            }
            settings.mqtt.attributionClient = mqttAttributionClient
        }
        if noMqtt { settings.mqtt.enabled = false }
        if let http {
            guard !noHttp else { throw ValidationError("--http and --no-http contradict each other: give one") }
            // The address only: the file's allowed hosts, timeouts and limit stay.
            let address = try HTTPSettings(parsing: http)
            var http = settings.http ?? .standard
            (http.host, http.port) = (address.host, address.port)
            settings.http = http
        }
        if noHttp { settings.http = nil }
        if let level = log.logLevel { settings.logLevel = level }
        if let observationCommitDelay {
            guard (0...300).contains(observationCommitDelay) else {
                throw ValidationError("--observation-commit-delay must be 0 to 300 seconds, not \(observationCommitDelay)")
            }
            settings.observationCommitDelaySeconds = observationCommitDelay
        }
        if let instance {
            if let problem = LeaseSettings.problem(instance: instance) { throw HubError.usage("--instance: \(problem)") }
            settings.instance = instance
        }
        return settings
    }

    func run() async throws {
        // Before anything opens: a SIGINT/SIGTERM from now on is kept for the service group
        // (which shuts the hub down gracefully) instead of killing it half-open.
        EarlySignals.catch(Self.signals)
        // Before threads start: two malloc arenas instead of up to 16 on this 2-core class of machine
        // (each holds free pages of its own); with the trim below, less memory sits idle (docs/operations.md).
        MemoryTrim.limitArenas(2)
        let prepared = try await Console.guarded { try await prepare() }
        var options = prepared.options
        let demoSimulators = prepared.demo
        // One pass per active phase: with a hot standby (--instance), a hub that steps down (lost
        // its lease or its database connection) waits as a standby again and comes back here.
        while true {
            guard let fatal = try await runOnce(options, demoSimulators: demoSimulators) else { break }
            guard let reason = fatal.steppedDown else {
                await demoSimulators?.stop()
                Console.note("hub: error: \(fatal.reason); stopped")
                throw ExitCode(3)
            }
            Console.note("hub: instance \(options.lease?.instance ?? "-") stepped down (\(reason)); following the log as a standby again")
            // The group's signal handlers are gone with it: keep SIGINT/SIGTERM for the next one.
            EarlySignals.catch(Self.signals)
            options.retryOpeningLog = true
        }
        await demoSimulators?.stop()
    }

    /// The options `hub run` starts the hub with (once per process: metrics are bootstrapped here),
    /// and the demo's simulated devices when asked for.
    func prepare() async throws -> (options: HubServiceOptions, demo: Demo?) {
        let config = try settings()
        var options = HubServiceOptions(
            paths: try data.paths(fallback: config.log), config: config,
            factories: LinkedDrivers.all, demo: demo, snapshotEvery: snapshotEvery)
        options.bridgeFactories = LinkedDrivers.bridges
        // The one place the process-wide metrics system is bootstrapped; /metrics renders its registry.
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(HubMetrics.prometheusFactory(registry: registry))
        options.metrics = HubMetrics(factory: MetricsSystem.factory)
        options.metricsRegistry = registry
        options.http = config.http
        // On PostgreSQL a hub always holds the lease: without --instance under a name derived from
        // this machine and data directory, so a second hub on the same log cannot write it too.
        options.lease =
            config.lease
            ?? (options.paths.logURL == nil
                ? nil
                : LeaseSettings.derived(dataDirectory: data.dataDir, ttl: .milliseconds(Int64(config.leaseSeconds * 1000))))
        options.stopStandby = { EarlySignals.pending }
        options.memoryTrim = .seconds(30)
        var simulators: Demo? = nil
        if demo && config.devices.isEmpty {
            simulators = try await Demo.start(dataDirectory: data.dataDir, mqtt: config.mqtt.enabled ? config.mqtt : nil)
            options.demoDevices = Demo.devices(withMQTT: config.mqtt.enabled)
            Console.note(
                "hub: demo: simulating power plugs on 127.0.0.1:\(Demo.pumpPort) and :\(Demo.heaterPort), "
                    + "a Kasa HS110 on 127.0.0.1:\(Demo.kasaPort)"
                    + (config.mqtt.enabled ? ", and on the broker a Tasmota plug, a Shelly Plus 1PM and three beacon collars" : ""))
        }
        return (options, simulators)
    }

    /// Why one run of the services ended other than by a signal.
    struct Ending {
        var reason: String
        /// Set when this instance stepped down (hot standby): it becomes a standby again.
        var steppedDown: String?
    }

    /// Starts the hub (with `--instance`, after waiting as a standby) and runs it until a signal
    /// (nil) or until it cannot go on.
    func runOnce(_ options: HubServiceOptions, demoSimulators: Demo?) async throws -> Ending? {
        let logNote = options.paths.logURL == nil ? "" : ", event log \(options.paths.logDescription)"
        let service = try await Console.guarded {
            do {
                // SIGINT/SIGTERM shut the services down gracefully, in order.
                // After a step-down, the signals stay with EarlySignals (watched below): a second
                // service group's signal sources for the same signals did not reliably fire.
                return try await HubService.start(
                    options, logger: Console.logger(level: options.config.logLevel),
                    signals: options.retryOpeningLog ? [] : Self.signals)
            } catch is StandbyStopped {
                await demoSimulators?.stop()
                Console.note("hub: stopped while standby (instance \(options.lease?.instance ?? "-"))")
                throw ExitCode.success
            } catch {
                await demoSimulators?.stop()
                throw error
            }
        }
        if let token = service.newAccessToken {
            // Once, on standard output: only its digest is kept (hub token rotate makes a new one).
            FileHandle.standardOutput.write(Data("hub: HTTP access token \"admin\" (shown once, keep it): \(token)\n".utf8))
        }
        await demoSimulators?.kick(service)
        // Say "Ctrl-C stops" only once it does: the group's signal handlers are installed.
        await service.waitUntilRunning()
        EarlySignals.redeliver()
        let state = await service.hub.state
        let animals = state.animals.admitted.count
        Console.note(
            "hub: running with data directory \(data.dataDir)\(logNote): \(state.lastSequence) events, "
                + "\(state.devices.active.count) device(s), \(animals) animal(s) admitted. Ctrl-C stops.")
        if let settings = service.httpSettings, let port = await service.httpPort() {
            let shown = HTTPSettings(host: settings.host == "0.0.0.0" || settings.host == "::" ? "127.0.0.1" : settings.host, port: port)
            Console.note(
                "hub: console and API on http://\(shown.description)/"
                    + (settings.isLoopback ? "" : " (listening on \(settings.host); sign in with the token, docs/http.md)"))
        }
        let watcher: Task<Void, Never>? =
            options.retryOpeningLog
            ? Task {
                while !Task.isCancelled, !EarlySignals.pending { try? await Task.sleep(for: .milliseconds(100)) }
                if EarlySignals.pending { try? await service.stop() }
            } : nil
        defer { watcher?.cancel() }
        // Until a signal, or until the service cannot go on (then exit non-zero, so a supervisor
        // such as systemd restarts it; or, stepped down, wait as a standby again).
        guard let fatal = await service.finished() else { return nil }
        return Ending(reason: fatal, steppedDown: service.steppedDown)
    }
}

extension RunCommand {
    /// The signals that shut the hub down gracefully.
    static let signals: [UnixSignal] = [.sigint, .sigterm]
}

/// The driver plugins this executable links.
enum LinkedDrivers {
    static let all: [any DriverFactory] = [
        VirtualDriverFactory(), PowerPlugDriverFactory(), KasaDriverFactory(), TasmotaDriverFactory(),
        Zigbee2MQTTDriverFactory(), ShellyDriverFactory()
    ]
    static let bridges: [any BridgeFactory] = [BeaconBridgeFactory()]
}
