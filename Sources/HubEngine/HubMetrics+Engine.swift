import HubMetrics

extension HubMetrics {
    /// One answer of the command service.
    func answered(_ answer: CommandAnswer) {
        answered(outcome: answer.outcomeName, rejectionCode: answer.rejection?.code)
    }

    /// What is cheaper to read when scraped than to track: device availability per driver, the
    /// snapshot's age, the MQTT client's message counts.
    ///
    /// - Parameters:
    ///   - hub: the read models and the snapshot.
    ///   - link: the broker link's connection and counts (nil without MQTT).
    ///   - now: seconds since the epoch.
    package func refresh(hub: Hub, link: (any MessagingLink)?, now: Double) async {
        record(await hub.metricsSummary(), now: now)
        if let link {
            let traffic = link.traffic
            recordLink(connected: link.isConnected, received: traffic.received, published: traffic.published, dropped: traffic.dropped)
        }
    }
}
