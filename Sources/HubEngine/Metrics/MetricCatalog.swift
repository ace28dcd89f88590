/// Every metric the hub exports: its Prometheus name, type, labels and meaning. The names are
/// used by ``HubMetrics``; the help texts are written as `# HELP` lines into `/metrics` (swift-metrics
/// has no place for them); docs/operations.md lists the same table.
public enum MetricCatalog {
    public enum Name {
        public static let eventsAppended = "hub_events_appended_total"
        public static let appendDuration = "hub_append_duration_seconds"
        public static let syncDuration = "hub_fsync_duration_seconds"
        public static let commands = "hub_commands_total"
        public static let rejections = "hub_command_rejections_total"
        public static let mqttConnected = "hub_mqtt_connected"
        public static let mqttReconnects = "hub_mqtt_reconnects_total"
        public static let mqttReceived = "hub_mqtt_messages_received_total"
        public static let mqttPublished = "hub_mqtt_messages_published_total"
        public static let mqttEventsRefused = "hub_mqtt_events_refused_total"
        public static let driverCommandDuration = "hub_driver_command_duration_seconds"
        public static let devices = "hub_devices"
        public static let bridgeObservations = "hub_bridge_observations_total"
        public static let bridgeFacts = "hub_bridge_facts_total"
        public static let snapshotAge = "hub_snapshot_age_seconds"
        public static let eventsSinceSnapshot = "hub_events_since_snapshot"
        public static let httpConnectionsCut = "hub_http_connections_cut_total"
        public static let queueOverflow = "hub_queue_overflow_total"
    }

    public struct Entry: Sendable {
        public var name: String
        public var type: String
        public var labels: [String]
        public var help: String
    }

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
