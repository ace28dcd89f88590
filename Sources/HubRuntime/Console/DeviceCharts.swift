import HubDomain

/// The device page's charts, from history queries (``Hub/history(_:)``): power over the last 24 h
/// (minute buckets folded into 15-minute ones, each with its min, mean and max) and energy per day
/// for 30 days.
struct DeviceCharts: Sendable {
    var power: [SVGChart.Band]
    var energyDays: [(label: String, value: Double)]
    var from: Int64
    var to: Int64

    static let span: Int64 = 24 * 3_600_000_000
    static let step: Int64 = 15 * 60_000_000

    static func load(hub: Hub, device: String, now: Int64) async -> DeviceCharts {
        let from = now - span
        var power: [SVGChart.Band] = []
        if case .buckets(let minutes)? = try? await hub.history(HistoryQuery(subject: .device(device), quantity: .power, from: from,
                                                                             to: now, resolution: .minute)) {
            power = fold(minutes, from: from)
        }
        let today = Civil.dayNumber(micros: now)
        let firstDay = today - 29
        var wh: [Int64: Double] = [:]
        if case .energy(let days)? = try? await hub.history(HistoryQuery(subject: .device(device), quantity: .energy,
                                                                        from: firstDay * Civil.microsPerDay,
                                                                        to: (today + 1) * Civil.microsPerDay, resolution: .day)) {
            for day in days { wh[Civil.dayNumber(micros: day.start)] = day.wh }
        }
        let energyDays = (firstDay...today).map { day in (label: String(Civil.dayKey(dayNumber: day).dropFirst(5)), value: (wh[day] ?? 0) / 1000) }
        return DeviceCharts(power: power, energyDays: energyDays, from: from, to: now)
    }

    /// Minute buckets folded into 15-minute ones: min of mins, max of maxes, and the mean weighted
    /// by time as the history's own (`HistoryBucket.mean`); minutes covered only by a value held
    /// from before them count with that value.
    static func fold(_ buckets: [HistoryBucket], from: Int64) -> [SVGChart.Band] {
        var out: [SVGChart.Band] = []
        var current: (slot: Int64, fold: HistoryBucket)?
        func flush() {
            if let c = current { out.append(SVGChart.Band(start: from + c.slot * step + step / 2, min: c.fold.min, mean: c.fold.mean, max: c.fold.max)) }
        }
        for b in buckets {
            let slot = (b.start - from) / step
            if var c = current, c.slot == slot {
                c.fold.min = Swift.min(c.fold.min, b.min); c.fold.max = Swift.max(c.fold.max, b.max)
                c.fold.sum += b.sum; c.fold.count += b.count
                c.fold.weighted += b.weighted; c.fold.covered += b.covered
                current = c
            } else {
                flush()
                current = (slot, b)
            }
        }
        flush()
        return out
    }

    var html: HTML {
        let peak = power.map(\.max).max(), low = power.map(\.min).min()
        let total = power.reduce(0.0) { $0 + $1.mean } / Double(Swift.max(power.count, 1))
        let summary: HTML = power.isEmpty ? .empty
            : "<p class=\"muted\">Last 24 h: min \(ConsoleFormat.number(low, decimals: 1)) W · mean \(ConsoleFormat.number(total, decimals: 1)) W · max \(ConsoleFormat.number(peak, decimals: 1)) W (15-minute buckets; band min–max, line mean, dashed max)</p>"
        return """
        <h2>Power, last 24 hours</h2>
        \(SVGChart.band(power, from: from, to: to, unit: "W", label: "power"))
        \(summary)
        <h2>Energy per day, last 30 days</h2>
        \(SVGChart.bars(energyDays, unit: "kWh", label: "energy"))
        <p class="muted">Total: \(ConsoleFormat.number(energyDays.reduce(0) { $0 + $1.value }, decimals: 3)) kWh</p>
        """
    }
}
