import HubDomain
import HubEngine

/// Charts drawn on the server as SVG (no script, no library): a min/mean/max band over time, and
/// bars per day.
enum SVGChart {
    static let width = 720.0, height = 240.0
    static let left = 48.0, right = 10.0, top = 12.0, bottom = 26.0

    /// One point of a band chart.
    struct Band {
        var start: Int64
        var min: Double
        var mean: Double
        var max: Double
    }

    /// How a band chart draws its points.
    struct Style {
        /// Draw each point's value held until the next point (a reading holds until the next), as
        /// steps; else join the points with lines.
        var steps = false
        /// Keep 0 on the y axis (power); else fit the axis to the data (a temperature of 38-39 °C).
        var includeZero = true
        /// Write the value beside each dot when there are at most this many points.
        var labelUpTo = 0
        /// Decimals of the values written.
        var decimals = 1
    }

    /// A shaded min..max band with the mean as a line and the max dashed, over `[from, to)` (µs);
    /// ticks in the household's time (``LocalTime/current``).
    static func band(_ points: [Band], from: Int64, to: Int64, unit: String, label: String, style: Style = Style()) -> HTML {
        guard !points.isEmpty, to > from else { return "<p class=\"muted\">No \(label) readings in this range.</p>" }
        let (low, high) = axisRange(min: points.map(\.min).min() ?? 0, max: points.map(\.max).max() ?? 1, includeZero: style.includeZero)
        func x(_ t: Int64) -> Double {
            left + (width - left - right) * Double(Swift.min(Swift.max(t, from), to) - from) / Double(to - from)
        }
        func y(_ v: Double) -> Double { top + (height - top - bottom) * (1 - (v - low) / max(high - low, 1e-9)) }
        // With steps, a point's value holds from its start to the next point's start (the last to `to`).
        func line(_ value: (Band) -> Double) -> [String] {
            guard style.steps else { return points.map { "\(f(x($0.start))),\(f(y(value($0))))" } }
            return points.enumerated().flatMap { i, p -> [String] in
                let end = i + 1 < points.count ? points[i + 1].start : to
                return ["\(f(x(p.start))),\(f(y(value(p))))", "\(f(x(end))),\(f(y(value(p))))"]
            }
        }
        let upper = line(\.max), lower = Array(line(\.min).reversed())
        let mean = line(\.mean).joined(separator: " ")
        let maxLine = upper.joined(separator: " ")
        let band = (upper + lower).joined(separator: " ")
        let long = to - from > 2 * Civil.microsPerDay
        let ticks = stride(from: 0, through: 4, by: 1).map { i -> HTML in
            let t = from + (to - from) * Int64(i) / 4
            let anchor = i == 0 ? "start" : i == 4 ? "end" : "middle"
            return "<text x=\"\(f(x(t)))\" y=\"\(f(height - 8))\" text-anchor=\"\(anchor)\">\(LocalTime.current.tick(t, long: long))</text>"
        }
        let labels: HTML =
            points.count <= style.labelUpTo
            ? HTML.join(
                points.map { p -> HTML in
                    "<text class=\"value\" x=\"\(f(x(p.start)))\" y=\"\(f(y(p.mean) - 7))\" text-anchor=\"middle\">\(ConsoleFormat.number(p.mean, decimals: style.decimals))</text>"
                }) : .empty
        return """
            <svg class="chart" viewBox="0 0 \(f(width)) \(f(height))" role="img" aria-label="\(label): min, mean and max per bucket">
            \(axes(low: low, high: high, y: y))
            <polygon class="band" points="\(band)"/>
            <polyline class="max" points="\(maxLine)"/>
            <polyline class="mean" points="\(mean)"/>
            \(points.count <= 120 ? dots(points, unit: unit, x: x, y: y) : .empty)
            \(labels)
            \(ticks)
            <text x="\(f(left))" y="\(f(top - 2))">\(unit)</text>
            </svg>
            """
    }

    /// The y axis's range: from 0 (when `includeZero`) or just below the lowest value, to just
    /// above the highest, on round steps; a flat series gets a little room above and below.
    static func axisRange(min lowest: Double, max highest: Double, includeZero: Bool) -> (Double, Double) {
        var lo = includeZero ? Swift.min(0, lowest) : lowest, hi = includeZero ? Swift.max(0, highest) : highest
        if hi - lo < 1e-9 {
            let room = Swift.max(abs(hi) * 0.05, 1)
            lo -= room; hi += room
            if includeZero, lowest >= 0 { lo = Swift.max(lo, 0) }
        }
        let step = niceCeiling((hi - lo) / 4)
        var low = (lo / step).rounded(.down) * step, high = (hi / step).rounded(.up) * step
        if !includeZero {  // a little air, so no point sits on the frame
            if lowest - low < step * 0.25 { low -= step }
            if high - highest < step * 0.25 { high += step }
        }
        return (low, high)
    }

    /// One bar per day (`label` under each, a few of them shown).
    static func bars(_ values: [(label: String, value: Double)], unit: String, label: String) -> HTML {
        guard values.contains(where: { $0.value > 0 }) else { return "<p class=\"muted\">No \(label) recorded in this range.</p>" }
        let high = niceCeiling(values.map(\.value).max() ?? 1)
        let slot = (width - left - right) / Double(values.count)
        func y(_ v: Double) -> Double { top + (height - top - bottom) * (1 - v / high) }
        let bars = values.enumerated().map { i, item -> HTML in
            let x = left + slot * Double(i) + slot * 0.15
            let h = (height - bottom) - y(item.value)
            let tick: HTML =
                i % max(1, values.count / 6) == 0
                ? "<text x=\"\(f(x + slot * 0.35))\" y=\"\(f(height - 8))\" text-anchor=\"middle\">\(item.label)</text>" : .empty
            return """
                <rect class="bar" x="\(f(x))" y="\(f(y(item.value)))" width="\(f(slot * 0.7))" height="\(f(max(h, 0)))"><title>\(item.label): \(ConsoleFormat.number(item.value, decimals: 3)) \(unit)</title></rect>\(tick)
                """
        }
        return """
            <svg class="chart" viewBox="0 0 \(f(width)) \(f(height))" role="img" aria-label="\(label) per day">
            \(axes(low: 0, high: high, y: y))
            \(bars)
            <text x="\(f(left))" y="\(f(top - 2))">\(unit)</text>
            </svg>
            """
    }

    /// Grid lines and their labels on round steps from `low` to `high` (at most 6).
    static func axes(low: Double, high: Double, y: (Double) -> Double) -> HTML {
        let step = niceCeiling((high - low) / 5)
        let first = (low / step).rounded(.up)
        let count = Int(((high - low) / step).rounded(.down)) + 1
        return HTML.join(
            (0..<Swift.min(Swift.max(count, 1), 7)).compactMap { i -> HTML? in
                let v = (first + Double(i)) * step
                guard v <= high + step * 1e-9 else { return nil }
                return """
                    <line class="grid" x1="\(f(left))" x2="\(f(width - right))" y1="\(f(y(v)))" y2="\(f(y(v)))"/><text x="\(f(left - 4))" y="\(f(y(v) + 4))" text-anchor="end">\(ConsoleFormat.number(v, decimals: decimals(step * 4)))</text>
                    """
            })
    }

    /// A dot per point (hover: its values), when there are few enough to see.
    static func dots(_ points: [Band], unit: String, x: (Int64) -> Double, y: (Double) -> Double) -> HTML {
        HTML.join(
            points.map { p -> HTML in
                let text =
                    "\(ConsoleFormat.time(p.start)): min \(ConsoleFormat.number(p.min, decimals: 1)), mean "
                    + "\(ConsoleFormat.number(p.mean, decimals: 1)), max \(ConsoleFormat.number(p.max, decimals: 1)) \(unit)"
                return "<circle class=\"dot\" cx=\"\(f(x(p.start)))\" cy=\"\(f(y(p.mean)))\" r=\"2.5\"><title>\(text)</title></circle>"
            })
    }

    /// Enough decimals to tell the axis's steps apart.
    static func decimals(_ span: Double) -> Int {
        span >= 40 ? 0 : span >= 4 ? 1 : span >= 0.4 ? 2 : 3
    }

    /// 1, 2 or 5 times a power of ten, at or above `value`.
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        var magnitude = 1.0
        while magnitude * 10 <= value { magnitude *= 10 }
        while magnitude > value { magnitude /= 10 }
        for step in [1.0, 2, 5, 10] where step * magnitude >= value { return step * magnitude }
        return 10 * magnitude
    }

    /// A coordinate with one decimal.
    static func f(_ v: Double) -> String {
        let tenths = (v * 10).rounded()
        guard tenths.isFinite else { return "0" }
        let n = Int(tenths)
        let sign = n < 0 ? "-" : ""
        return "\(sign)\(abs(n) / 10).\(abs(n) % 10)"
    }
}
