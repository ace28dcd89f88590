import CoreMetrics
import Prometheus

extension HubMetrics {
    /// A swift-metrics factory writing into `registry` (what `/metrics` renders), with the hub's
    /// duration buckets (``MetricCatalog/durationBuckets``) for every timer. `hub run` bootstraps
    /// `MetricsSystem` with it once; tests make one per hub.
    public static func prometheusFactory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = MetricCatalog.durationBuckets
        return factory
    }

    /// Hub metrics writing into `registry`, without touching the process-wide `MetricsSystem`.
    public static func prometheus(registry: PrometheusCollectorRegistry) -> HubMetrics {
        HubMetrics(factory: prometheusFactory(registry: registry))
    }
}
