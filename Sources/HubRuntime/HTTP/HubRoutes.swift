import Hummingbird

/// The paths the hub's HTTP listener serves, and who answers each. The console of a later issue
/// adds its routes here; the responders stay in their own files.
enum HubRoutes {
    static func router(observability: ObservabilityResponders) -> Router<BasicRequestContext> {
        let router = Router()
        router.get("metrics") { _, _ in await observability.metrics() }
        router.get("healthz") { _, _ in observability.health() }
        router.get("readyz") { _, _ in await observability.ready() }
        return router
    }
}
