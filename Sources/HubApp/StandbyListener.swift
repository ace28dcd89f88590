import HubEngine
import HubHTTP
import Hummingbird
import Logging
import ServiceLifecycle

/// Runs ``StandbyGate`` on the hub's HTTP address while this process waits as a standby.
final class StandbyListener: Sendable {
    private let group: ServiceGroup
    private let task: Task<Void, Never>

    init(settings: HTTPSettings, instance: String, status: StandbyStatus, logger: Logger) {
        let router = Router(context: HubRequestContext.self)
        // The same headers and Host names as the active's listener (docs/http.md).
        router.add(middleware: SecurityHeaders())
        router.add(middleware: HostCheck(settings: settings))
        router.add(middleware: StandbyGate(instance: instance, status: status))
        let http = HTTPService(
            settings: settings, router: router, metrics: .disabled, logger: logger,
            serving: "/healthz and /readyz (standby)")
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: http)], gracefulShutdownSignals: [], logger: HubService.lifecycleLogger(logger)))
        self.group = group
        task = Task {
            do { try await group.run() } catch {
                logger.warning("standby: no HTTP listener (\(error)); health checks cannot reach this instance")
            }
        }
    }

    /// Stops serving and waits until the address is free again.
    func stop() async {
        await group.triggerGracefulShutdown()
        await task.value
    }
}
