import HubEngine
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// What a standby says about itself while it waits (`/readyz`'s problem): which instance is active,
/// or why it cannot follow the log. Updated by ``Standby`` on every try.
package final class StandbyStatus: Sendable {
    private let said = Mutex<String>("")

    package init(_ first: String) { said.withLock { $0 = first } }

    package func set(_ text: String) { said.withLock { $0 = text } }
    var text: String { said.withLock { $0 } }
}

/// The HTTP listener of a standby (hot standby; docs/operations.md): on the active's address, so a
/// load balancer or keepalived tells a standby from a dead host. `/healthz` answers 200 (the process
/// runs), `/readyz` 503 with the problem `standby` (`instance a is active`), and everything else
/// (the API, the console) 503 with the code `not_active`: a standby serves no data and takes no
/// command. It stops before the hub, once active, opens its own listener on the same address.
package struct StandbyGate: RouterMiddleware {
    package typealias Context = HubRequestContext
    let instance: String
    let status: StandbyStatus

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        switch request.uri.path {
        case "/healthz":
            return ObservabilityResponders.text(.ok, "ok\n")
        case "/readyz":
            return ObservabilityResponders.json(
                .serviceUnavailable,
                .object([
                    ("status", "not ready"),
                    ("problems", .object([("standby", .string(status.text))]))
                ]))
        default:
            return HTTPAccess.refusal(
                .serviceUnavailable,
                "instance \(instance) is a standby (\(status.text)): "
                    + "it serves no data and takes no command; ask the active hub", code: CommandService.notActive)
        }
    }

    package init(instance: String, status: StandbyStatus) {
        self.instance = instance
        self.status = status
    }
}
