import CoreMetrics
import Synchronization

/// The hub's metrics, made once through a swift-metrics `MetricsFactory` and recorded beside the
/// code they measure (the log's appends and syncs, the command path, the MQTT connection, the
/// drivers and bridges). `hub run` passes the factory it bootstrapped (Prometheus, served at
/// `/metrics`); tests pass their own; the default records nothing. Every name, type and label is
/// listed in ``MetricCatalog`` (and docs/operations.md).
///
/// Hot paths only touch metric objects made here once (or once per label value, kept in a
/// dictionary): no object is made per call.
public final class HubMetrics: Sendable {
    let factory: any MetricsFactory
    let eventsAppended: CoreMetrics.Counter
    let appendDuration: CoreMetrics.Timer
    let syncDuration: CoreMetrics.Timer
    /// Made once there is a snapshot (an age of 0 before that would mislead).
    private let snapshotAge = LabelledMetrics<Gauge>()
    let eventsSinceSnapshot: Gauge
    private let commands = LabelledMetrics<CoreMetrics.Counter>()
    private let rejections = LabelledMetrics<CoreMetrics.Counter>()
    private let driverCommands = LabelledMetrics<CoreMetrics.Timer>()
    private let devices = LabelledMetrics<Gauge>()
    private let bridgeObservations = LabelledMetrics<CoreMetrics.Counter>()
    private let bridgeFacts = LabelledMetrics<CoreMetrics.Counter>()
    private let httpCuts = LabelledMetrics<CoreMetrics.Counter>()
    private let queueOverflows = LabelledMetrics<CoreMetrics.Counter>()
    /// Made at the first sign of a broker connection, so a hub without MQTT exports none.
    private let mqttMetrics = LabelledMetrics<MQTTMetrics>()
    private var mqtt: MQTTMetrics { mqttMetrics.get("") { MQTTMetrics(factory: factory) } }

    /// Metrics that go nowhere (the default for a hub built without a factory: `hub exec`, tests).
    public static let disabled = HubMetrics(factory: NOOPMetricsHandler.instance)

    /// - Parameter factory: where the metrics go (`MetricsSystem.factory` once bootstrapped, or a
    ///   test's own `PrometheusMetricsFactory`).
    public init(factory: any MetricsFactory) {
        self.factory = factory
        typealias Name = MetricCatalog.Name
        eventsAppended = CoreMetrics.Counter(label: Name.eventsAppended, factory: factory)
        appendDuration = CoreMetrics.Timer(label: Name.appendDuration, factory: factory)
        syncDuration = CoreMetrics.Timer(label: Name.syncDuration, factory: factory)
        eventsSinceSnapshot = Gauge(label: Name.eventsSinceSnapshot, factory: factory)
    }

    // MARK: The log

    /// One append of `events` events that took `duration` (queue, write, group commit's sync).
    package func appended(events: Int, duration: Duration) {
        eventsAppended.increment(by: events)
        appendDuration.record(duration)
    }

    /// What the segment store's writer reports after each fdatasync (on its thread).
    public var syncObserver: @Sendable (Duration) -> Void {
        { [syncDuration] in syncDuration.record($0) }
    }

    // MARK: Commands

    /// One answer of the command service: its outcome (`accepted`, `rejected`, ...) and, for a
    /// refusal, the rejection's code.
    package func answered(outcome: String, rejectionCode: String?) {
        commands.get(outcome) {
            CoreMetrics.Counter(label: MetricCatalog.Name.commands, dimensions: [("outcome", outcome)], factory: factory)
        }
        .increment()
        if let code = rejectionCode {
            rejections.get(outcome + "\u{0}" + code) {
                CoreMetrics.Counter(
                    label: MetricCatalog.Name.rejections, dimensions: [("outcome", outcome), ("code", code)],
                    factory: factory)
            }.increment()
        }
    }

    // MARK: Drivers and bridges

    /// A driver took `duration` to carry out (send) one command, failing or not.
    package func driverCommand(driver: String, failed: Bool, duration: Duration) {
        let outcome = failed ? "failed" : "sent"
        driverCommands.get(driver + "\u{0}" + outcome) {
            CoreMetrics.Timer(
                label: MetricCatalog.Name.driverCommandDuration, dimensions: [("driver", driver), ("outcome", outcome)],
                factory: factory)
        }.record(duration)
    }

    /// A message a bridge's scoped MQTT handle received.
    package func bridgeObservation(bridge: String) -> @Sendable () -> Void {
        let counter = bridgeObservations.get(bridge) {
            CoreMetrics.Counter(label: MetricCatalog.Name.bridgeObservations, dimensions: [("bridge", bridge)], factory: factory)
        }
        return { counter.increment() }
    }

    /// A fact a bridge reported (`sighted`, `present`, `unseen`).
    package func bridgeFact(bridge: String, kind: String) {
        bridgeFacts.get(bridge + "\u{0}" + kind) {
            CoreMetrics.Counter(label: MetricCatalog.Name.bridgeFacts, dimensions: [("bridge", bridge), ("fact", kind)], factory: factory)
        }.increment()
    }

    // MARK: Queues

    /// A full bounded queue did not take an item (dropped, refused or made to wait, as the
    /// queue's overflow policy says): `queue` names it (`driver_reports`, `mqtt_command_lane`...).
    package func queueOverflowed(_ queue: String) {
        queueOverflows.get(queue) {
            CoreMetrics.Counter(label: MetricCatalog.Name.queueOverflow, dimensions: [("queue", queue)], factory: factory)
        }.increment()
    }

    // MARK: HTTP

    /// The HTTP listener closed a connection that took too long (``ConnectionDeadlines``):
    /// `idle` (no complete request head in time) or `body`.
    package func httpConnectionCut(reason: String) {
        httpCuts.get(reason) {
            CoreMetrics.Counter(label: MetricCatalog.Name.httpConnectionsCut, dimensions: [("reason", reason)], factory: factory)
        }.increment()
    }

    // MARK: MQTT

    /// The broker connection came back after a loss.
    package func mqttReconnected() {
        mqtt.reconnects.increment()
    }

    /// The broker refused (or failed) one publish of the event feed.
    package func mqttEventRefused() {
        mqtt.eventsRefused.increment()
    }

    // MARK: Read at scrape time

    /// What is cheaper to read when scraped than to track: device availability per driver, the
    /// snapshot's age (`now`: seconds since the epoch).
    package func record(_ summary: MetricsSummary, now: Double) {
        for (driver, count) in summary.devices {
            for (state, value) in [("available", count.available), ("unavailable", count.unavailable), ("unknown", count.unknown)] {
                devices.get(driver + "\u{0}" + state) {
                    Gauge(label: MetricCatalog.Name.devices, dimensions: [("driver", driver), ("availability", state)], factory: factory)
                }.record(value)
            }
        }
        if let written = summary.snapshotWrittenAt {
            snapshotAge.get("") { Gauge(label: MetricCatalog.Name.snapshotAge, factory: factory) }.record(max(0, now - written))
        }
        eventsSinceSnapshot.record(summary.eventsSinceSnapshot)
    }

    /// The broker link's connection and its message counts since it started, read at a scrape.
    package func recordLink(connected: Bool, received: UInt64, published: UInt64, dropped: UInt64) {
        mqtt.update(connected: connected, traffic: LinkCounts(received: received, published: published, dropped: dropped))
    }
}

/// The broker link's message counts at one scrape.
struct LinkCounts: Sendable {
    var received: UInt64
    var published: UInt64
    var dropped: UInt64
}

/// The broker connection's metrics.
final class MQTTMetrics: Sendable {
    let connected: Gauge
    let reconnects: CoreMetrics.Counter
    let received: CoreMetrics.Counter
    let published: CoreMetrics.Counter
    let eventsRefused: CoreMetrics.Counter
    /// Made at the first message the client's inbound buffer drops.
    private let inboundOverflow = LabelledMetrics<CoreMetrics.Counter>()
    private let factory: any MetricsFactory
    /// The client's counts at the last scrape, so the counters move by the difference.
    private let last = Mutex<LinkCounts>(LinkCounts(received: 0, published: 0, dropped: 0))

    init(factory: any MetricsFactory) {
        typealias Name = MetricCatalog.Name
        connected = Gauge(label: Name.mqttConnected, factory: factory)
        reconnects = CoreMetrics.Counter(label: Name.mqttReconnects, factory: factory)
        received = CoreMetrics.Counter(label: Name.mqttReceived, factory: factory)
        published = CoreMetrics.Counter(label: Name.mqttPublished, factory: factory)
        eventsRefused = CoreMetrics.Counter(label: Name.mqttEventsRefused, factory: factory)
        self.factory = factory
    }

    func update(connected isConnected: Bool, traffic: LinkCounts) {
        connected.record(isConnected ? 1 : 0)
        let before = last.withLock { last in
            defer { last = traffic }
            return last
        }
        if traffic.received > before.received { received.increment(by: traffic.received - before.received) }
        if traffic.published > before.published { published.increment(by: traffic.published - before.published) }
        if traffic.dropped > before.dropped {
            inboundOverflow.get("") {
                CoreMetrics.Counter(label: MetricCatalog.Name.queueOverflow, dimensions: [("queue", "mqtt_inbound")], factory: factory)
            }.increment(by: traffic.dropped - before.dropped)
        }
    }
}

/// Metric objects keyed by their label values, each made once.
final class LabelledMetrics<Metric: Sendable>: Sendable {
    private let made = Mutex<[String: Metric]>([:])

    func get(_ key: String, make: () -> Metric) -> Metric {
        made.withLock { made in
            if let metric = made[key] { return metric }
            let metric = make()
            made[key] = metric
            return metric
        }
    }
}

extension CoreMetrics.Timer {
    /// Records a `Duration` (CoreMetrics takes nanoseconds).
    func record(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// What the hub's read models and snapshot tell the metrics at scrape time (``Hub/metricsSummary()``).
package struct MetricsSummary: Sendable {
    /// How many devices of one driver are available, unavailable, or not known yet.
    package struct Availability: Sendable {
        package var available = 0
        package var unavailable = 0
        package var unknown = 0
        package init() {}
    }

    /// Registered devices per driver.
    package var devices: [String: Availability]
    /// Seconds since the epoch; nil before the first snapshot.
    package var snapshotWrittenAt: Double?
    /// Events logged since the newest snapshot.
    package var eventsSinceSnapshot: Int

    package init(devices: [String: Availability], snapshotWrittenAt: Double?, eventsSinceSnapshot: Int) {
        self.devices = devices
        self.snapshotWrittenAt = snapshotWrittenAt
        self.eventsSinceSnapshot = eventsSinceSnapshot
    }
}
