import Foundation
import HubDomain
import HubEngine
import HubMetrics
import Hummingbird
import Prometheus

/// What `/metrics`, `/healthz` and `/readyz` answer (the router, ``HubRoutes``, only maps paths here).
package struct ObservabilityResponders: Sendable {
    let hub: Hub
    /// The broker link, when the hub has an MQTT surface.
    let link: (any MessagingLink)?
    let registry: PrometheusCollectorRegistry?
    let readiness: Readiness

    /// The Prometheus text exposition format, version 0.0.4.
    static let metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Every metric in the registry, read-at-scrape ones refreshed first, with `# HELP` lines.
    func metrics() async -> Response {
        guard let registry else { return Self.text(.notFound, "metrics are not collected by this hub\n") }
        await hub.metrics.refresh(hub: hub, link: link, now: Date().timeIntervalSince1970)
        return Self.text(.ok, MetricCatalog.withHelp(registry.emitToString()), contentType: Self.metricsContentType)
    }

    /// Live: answered while the process runs its services.
    func health() -> Response {
        Self.text(.ok, "ok\n")
    }

    /// Ready: 200 `{"status":"ready"}`, or 503 naming each condition that does not hold.
    func ready() async -> Response {
        let problems = await readiness.problems()
        if problems.isEmpty {
            return Self.json(.ok, .object([("status", "ready")]))
        }
        return Self.json(
            .serviceUnavailable,
            .object([
                ("status", "not ready"),
                ("problems", .object(problems.map { ($0.name, JSONValue.string($0.problem)) }))
            ]))
    }

    static func text(_ status: HTTPResponse.Status, _ body: String, contentType: String = "text/plain; charset=utf-8") -> Response {
        Response(
            status: status, headers: [.contentType: contentType, .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }

    static func json(_ status: HTTPResponse.Status, _ value: JSONValue) -> Response {
        text(status, value.serialized() + "\n", contentType: "application/json")
    }

    package init(hub: Hub, link: (any MessagingLink)?, registry: PrometheusCollectorRegistry?, readiness: Readiness) {
        self.hub = hub
        self.link = link
        self.registry = registry
        self.readiness = readiness
    }
}
