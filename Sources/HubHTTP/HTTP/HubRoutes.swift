import HubEngine
import Hummingbird

/// The paths the hub's HTTP listener serves, and who answers each. Each part of the listener
/// (access, observability, the JSON API, the console) adds its routes here; the responders stay in
/// their own files.
package struct HubRoutes: Sendable {
    /// The log and read models the pages and answers are drawn from.
    let hub: Hub
    /// The one command path: every command a request runs goes through it.
    let commands: CommandService
    /// The drivers (what they discovered on the broker) and the bridges (beacon presence).
    let drivers: DriverHost
    let bridges: BridgeHost
    /// The broker link, when the hub has an MQTT surface (discovery listens only then).
    let link: (any MessagingLink)?
    /// The hub's data directory (credentials, photos).
    let dataDirectory: String
    let observability: ObservabilityResponders
    /// Requests and commands, answered as on the MQTT surface.
    let requests: Requests
    /// The MQTT surface's base topic (`hub` without MQTT): the API names a request's address as
    /// the topic that takes the same payload.
    let base: String
    /// False when bound to loopback (``HTTPSettings/isLoopback``): no credential is asked for.
    let requireCredential: Bool
    /// The tokens off loopback (`<data>/http/tokens.json`).
    let tokens: AccessTokens
    /// Browser sessions opened at `/login`.
    let sessions = HTTPSessions()
    /// Live updates for the console's open pages, fed by the log follower.
    var console = ConsoleFeed()
    /// The household's time zone, in which the console shows and reads times.
    var time = LocalTime.system
    /// Where the listener is bound and the names it answers to (``HostCheck``).
    var http = HTTPSettings.standard

    package func router() -> Router<HubRequestContext> {
        // A GET route answers HEAD too (the same status and headers, no body).
        let router = Router(context: HubRequestContext.self, options: .autoGenerateHeadEndpoints)
        let table = RouteTable()
        // First: a middleware applies to the routes added after it (and to every 404). In order:
        // every response's headers; foreign Host names refused; who may ask; 405 for a wrong
        // method; a declared body larger than the route takes refused before it is read.
        router.add(middleware: SecurityHeaders())
        router.add(middleware: HostCheck(settings: http))
        router.add(middleware: HTTPAccess(requireCredential: requireCredential, tokens: tokens, sessions: sessions))
        router.add(middleware: MethodCheck(table: table))
        router.add(middleware: BodyLimits())
        let login = LoginResponders(tokens: tokens, sessions: sessions)
        router.get("login") { request, _ in login.form(request) }
        router.post("login") { request, _ in try await login.login(request) }
        router.post("logout") { request, _ in login.logout(request) }
        router.get("metrics") { _, _ in await observability.metrics() }
        router.get("healthz") { _, _ in observability.health() }
        router.get("readyz") { _, _ in await observability.ready() }
        APIRoutes.register(on: router, APIResponders(hub: hub, requests: requests, base: base))
        AuditRoutes(dataDirectory: dataDirectory).add(to: router)
        ConsoleRoutes(routes: self).add(to: router)
        table.fill(from: router)
        return router
    }

    package init(
        hub: Hub, commands: CommandService, drivers: DriverHost, bridges: BridgeHost, link: (any MessagingLink)?, dataDirectory: String,
        observability: ObservabilityResponders, requests: Requests, base: String, requireCredential: Bool, tokens: AccessTokens,
        console: ConsoleFeed = ConsoleFeed(), time: LocalTime = .system, http: HTTPSettings = .standard
    ) {
        self.hub = hub
        self.commands = commands
        self.drivers = drivers
        self.bridges = bridges
        self.link = link
        self.dataDirectory = dataDirectory
        self.observability = observability
        self.requests = requests
        self.base = base
        self.requireCredential = requireCredential
        self.tokens = tokens
        self.console = console
        self.time = time
        self.http = http
    }
}
