import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// What a standby says about itself while it waits (`/readyz`'s problem): which instance is active,
/// or why it cannot follow the log. Updated by ``Standby`` on every try.
final class StandbyStatus: Sendable {
    private let said = Mutex<String>("")

    init(_ first: String) { said.withLock { $0 = first } }

    func set(_ text: String) { said.withLock { $0 = text } }
    var text: String { said.withLock { $0 } }
}

/// The HTTP listener of a standby (hot standby; docs/operations.md): on the active's address, so a
/// load balancer or keepalived tells a standby from a dead host. `/healthz` answers 200 (the process
/// runs), `/readyz` 503 with the problem `standby` (`instance a is active`), and everything else
/// (the API, the console) 503 with the code `not_active`: a standby serves no data and takes no
/// command. It stops before the hub, once active, opens its own listener on the same address.
struct StandbyGate: RouterMiddleware {
    typealias Context = HubRequestContext
    let instance: String
    let status: StandbyStatus

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        switch request.uri.path {
        case "/healthz":
            return ObservabilityResponders.text(.ok, "ok\n")
        case "/readyz":
            return ObservabilityResponders.json(.serviceUnavailable, .object([
                ("status", "not ready"),
                ("problems", .object([("standby", .string(status.text))])),
            ]))
        default:
            return HTTPAccess.refusal(.serviceUnavailable, "instance \(instance) is a standby (\(status.text)): "
                                      + "it serves no data and takes no command; ask the active hub", code: CommandService.notActive)
        }
    }
}

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
        let http = HTTPService(settings: settings, router: router, metrics: .disabled, logger: logger,
                               serving: "/healthz and /readyz (standby)")
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
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
