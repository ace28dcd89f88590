import HubDomain
import HubEngine

/// The device page's charts, from history queries (``Hub/history(_:)``): power over the last 24 h
/// in minute buckets, each drawn as a step held until the next (a reading holds until the next),
/// with its min, mean and max; and energy per day for 30 days.
struct DeviceCharts: Sendable {
    var power: [SVGChart.Band]
    /// The minute buckets the power chart is drawn from.
    var minutes: [HistoryBucket] = []
    var energyDays: [(label: String, value: Double)]
    var from: Int64
    var to: Int64

    static let span: Int64 = 24 * 3_600_000_000

    static func load(hub: Hub, device: String, now: Int64) async -> DeviceCharts {
        let from = now - span
        var power: [SVGChart.Band] = [], buckets: [HistoryBucket] = []
        if case .buckets(let minutes)? = try? await hub.history(
            HistoryQuery(
                subject: .device(device), quantity: .power, from: from,
                to: now, resolution: .minute))
        {
            buckets = minutes
            power = minutes.map { SVGChart.Band(start: Swift.max($0.start, from), min: $0.min, mean: $0.mean, max: $0.max) }
        }
        let today = Civil.dayNumber(micros: now)
        let firstDay = today - 29
        var wh: [Int64: Double] = [:]
        if case .energy(let days)? = try? await hub.history(
            HistoryQuery(
                subject: .device(device), quantity: .energy,
                from: firstDay * Civil.microsPerDay,
                to: (today + 1) * Civil.microsPerDay, resolution: .day))
        {
            for day in days { wh[Civil.dayNumber(micros: day.start)] = day.wh }
        }
        let energyDays = (firstDay...today).map { day in
            (label: String(Civil.dayKey(dayNumber: day).dropFirst(5)), value: (wh[day] ?? 0) / 1000)
        }
        return DeviceCharts(power: power, minutes: buckets, energyDays: energyDays, from: from, to: now)
    }

    /// The mean power over the part of the last 24 h that has a value, weighted by time: the
    /// minute buckets' time integrals over the time they cover (the history's own rule).
    var meanPower: Double? {
        let covered = minutes.reduce(Int64(0)) { $0 + $1.covered }
        return covered > 0 ? minutes.reduce(0.0) { $0 + $1.weighted } / Double(covered) : nil
    }

    var html: HTML {
        let peak = power.map(\.max).max(), low = power.map(\.min).min()
        let summary: HTML =
            power.isEmpty
            ? .empty
            : "<p class=\"muted\" data-field=\"power-summary\">Last 24 h: min \(ConsoleFormat.number(low, decimals: 1)) W · mean \(ConsoleFormat.number(meanPower, decimals: 1)) W · max \(ConsoleFormat.number(peak, decimals: 1)) W (minute buckets; a reading holds until the next: band min–max, line mean, dashed max)</p>"
        return """
            <h2>Power, last 24 hours</h2>
            \(SVGChart.band(power, from: from, to: to, unit: "W", label: "power", style: SVGChart.Style(steps: true)))
            \(summary)
            <h2>Energy per day (UTC days), last 30 days</h2>
            \(SVGChart.bars(energyDays, unit: "kWh", label: "energy"))
            <p class="muted">Total: \(ConsoleFormat.number(energyDays.reduce(0) { $0 + $1.value }, decimals: 3)) kWh</p>
            """
    }
}
