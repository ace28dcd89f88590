import Hummingbird

/// The paths the hub's HTTP listener serves, and who answers each. Each part of the listener
/// (observability, the JSON API, the console) adds its routes here; the responders stay in their
/// own files.
struct HubRoutes: Sendable {
    /// The log and read models the pages and answers are drawn from.
    let hub: Hub
    /// The one command path: every command a request runs goes through it.
    let commands: CommandService
    /// The MQTT surface, if the hub has one.
    let surface: MQTTSurface?
    /// The hub's data directory (credentials, photos).
    let dataDirectory: String
    let observability: ObservabilityResponders
    /// Live updates for the console's open pages, fed by the log follower.
    var console = ConsoleFeed()

    func router() -> Router<HubRequestContext> {
        let router = Router(context: HubRequestContext.self)
        router.get("metrics") { _, _ in await observability.metrics() }
        router.get("healthz") { _, _ in observability.health() }
        router.get("readyz") { _, _ in await observability.ready() }
        ConsoleRoutes(routes: self).add(to: router)
        return router
    }
}
