/// Every metric the hub exports: its Prometheus name, type, labels and meaning. The names are
/// used by ``HubMetrics``; the help texts are written as `# HELP` lines into `/metrics` (swift-metrics
/// has no place for them); docs/operations.md lists the same table.
public enum MetricCatalog {
    /// The Prometheus names, one constant each; `entries` gives their type, labels and help.
    public enum Name {
        /// Counter: events appended to the log by this process.
        public static let eventsAppended = "hub_events_appended_total"
        /// Histogram: the time of one append, from the request to its acknowledgement, seconds.
        public static let appendDuration = "hub_append_duration_seconds"
        /// Histogram: the time of one fdatasync of the log's segment file, seconds.
        public static let syncDuration = "hub_fsync_duration_seconds"
        /// Counter: commands answered, by outcome (ok, refused, failed).
        public static let commands = "hub_commands_total"
        /// Counter: commands refused or failed, by outcome and rejection code.
        public static let rejections = "hub_command_rejections_total"
        /// Gauge: 1 while connected to the broker, else 0.
        public static let mqttConnected = "hub_mqtt_connected"
        /// Counter: times the broker connection came back after a loss.
        public static let mqttReconnects = "hub_mqtt_reconnects_total"
        /// Counter: messages received from the broker.
        public static let mqttReceived = "hub_mqtt_messages_received_total"
        /// Counter: messages published to the broker.
        public static let mqttPublished = "hub_mqtt_messages_published_total"
        /// Counter: event feed publishes the broker refused or that failed.
        public static let mqttEventsRefused = "hub_mqtt_events_refused_total"
        /// Histogram: how long a driver took to send one command to its device, seconds, by driver and outcome.
        public static let driverCommandDuration = "hub_driver_command_duration_seconds"
        /// Gauge: registered devices, by driver and availability.
        public static let devices = "hub_devices"
        /// Counter: raw MQTT messages a bridge received.
        public static let bridgeObservations = "hub_bridge_observations_total"
        /// Counter: facts a bridge reported (sighted, present, unseen), by bridge and fact.
        public static let bridgeFacts = "hub_bridge_facts_total"
        /// Gauge: seconds since the newest read-model snapshot was written.
        public static let snapshotAge = "hub_snapshot_age_seconds"
        /// Gauge: events in the log after the newest snapshot.
        public static let eventsSinceSnapshot = "hub_events_since_snapshot"
        /// Counter: HTTP connections closed for taking too long, by reason (idle, body).
        public static let httpConnectionsCut = "hub_http_connections_cut_total"
        /// Counter: items a full bounded queue did not take as they came, by queue (dropped, refused or made to wait).
        public static let queueOverflow = "hub_queue_overflow_total"
    }

    /// One metric: its name, type, labels and help text.
    public struct Entry: Sendable {
        /// The Prometheus name.
        public var name: String
        /// `counter`, `gauge` or `histogram`.
        public var type: String
        /// The label names it is split by.
        public var labels: [String]
        /// The `# HELP` text.
        public var help: String
    }

    /// Every metric, in the order `/metrics` and docs/operations.md list them.
    public static let entries: [Entry] = [
        Entry(name: Name.eventsAppended, type: "counter", labels: [], help: "Events appended to the log by this process."),
        Entry(
            name: Name.appendDuration, type: "histogram", labels: [],
            help: "Time of one append, from the request to its acknowledgement (group commit's fdatasync included)."),
        Entry(name: Name.syncDuration, type: "histogram", labels: [], help: "Time of one fdatasync of the log's segment file."),
        Entry(name: Name.commands, type: "counter", labels: ["outcome"], help: "Commands answered, by outcome (ok, refused, failed)."),
        Entry(
            name: Name.rejections, type: "counter", labels: ["outcome", "code"],
            help: "Commands refused or failed, by outcome and rejection code."),
        Entry(name: Name.mqttConnected, type: "gauge", labels: [], help: "1 while the hub is connected to the broker, else 0."),
        Entry(name: Name.mqttReconnects, type: "counter", labels: [], help: "Times the broker connection came back after a loss."),
        Entry(name: Name.mqttReceived, type: "counter", labels: [], help: "MQTT messages the hub's client received."),
        Entry(name: Name.mqttPublished, type: "counter", labels: [], help: "MQTT messages the hub's client published."),
        Entry(
            name: Name.mqttEventsRefused, type: "counter", labels: [],
            help: "Event feed publishes the broker refused or that failed (each retried alone, with back-off)."),
        Entry(
            name: Name.driverCommandDuration, type: "histogram", labels: ["driver", "outcome"],
            help: "Time a driver took to carry out (send) one command to its device, by driver and outcome (sent, failed)."),
        Entry(
            name: Name.devices, type: "gauge", labels: ["driver", "availability"],
            help: "Registered devices by driver and availability (available, unavailable, unknown)."),
        Entry(name: Name.bridgeObservations, type: "counter", labels: ["bridge"], help: "Raw MQTT messages a bridge received."),
        Entry(
            name: Name.bridgeFacts, type: "counter", labels: ["bridge", "fact"],
            help: "Facts a bridge reported (sighted, present, unseen), before the log's own filtering."),
        Entry(name: Name.snapshotAge, type: "gauge", labels: [], help: "Seconds since the newest read-model snapshot was written."),
        Entry(name: Name.eventsSinceSnapshot, type: "gauge", labels: [], help: "Events in the log after the newest snapshot."),
        Entry(
            name: Name.httpConnectionsCut, type: "counter", labels: ["reason"],
            help: "HTTP connections the hub closed for taking too long: idle (no complete request head in time) or body."),
        Entry(
            name: Name.queueOverflow, type: "counter", labels: ["queue"],
            help: "Items a full bounded queue did not take, by queue (its overflow policy says what became of them).")
    ]

    /// Durations the hub measures are mostly milliseconds: finer buckets than the Prometheus
    /// client's default (5 ms to 10 s), in seconds.
    public static let durationBuckets: [Duration] = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .milliseconds(2500), .seconds(5), .seconds(10)
    ]

    /// Adds a `# HELP` line before each `# TYPE` line of a metric in the catalogue (Prometheus
    /// text format 0.0.4); other lines are kept as they are.
    public static func withHelp(_ exposition: String) -> String {
        let help = Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.help) })
        var out = ""
        out.reserveCapacity(exposition.utf8.count + entries.count * 80)
        for line in exposition.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE ") {
                let name = line.dropFirst(7).prefix { $0 != " " }
                if let text = help[String(name)] { out += "# HELP \(name) \(text)\n" }
            }
            out += line
            out += "\n"
        }
        if out.hasSuffix("\n\n") { out.removeLast() }
        return out
    }
}
