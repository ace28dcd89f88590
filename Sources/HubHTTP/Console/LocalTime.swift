import Foundation
import HubDomain
import HubEngine

/// The household's clock face: every time the console shows, and every time a person types into
/// it, is in the hub's time zone (`time_zone` in the configuration; the system's by default).
/// The log keeps UTC; only the console reads and writes local wall time.
package struct LocalTime: Sendable {
    let zone: TimeZone

    package init(zone: TimeZone) { self.zone = zone }

    /// The zone the page being rendered shows times in (set by ``ConsoleRoutes`` around each
    /// console request from the configuration).
    @TaskLocal static var current = LocalTime.system

    /// The system's zone (`TZ`, then `/etc/localtime`), UTC when it cannot be told.
    package static var system: LocalTime { LocalTime(zone: TimeZone.current) }

    /// The zone's IANA name, `Europe/Lisbon`.
    var name: String { zone.identifier }

    /// The wall-clock fields of `micros` in the zone.
    func parts(_ micros: Int64) -> (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let seconds = micros >= 0 ? micros / 1_000_000 : (micros - 999_999) / 1_000_000
        let date = Date(timeIntervalSince1970: Double(seconds))
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return (c.year ?? 1970, c.month ?? 1, c.day ?? 1, c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }

    /// `2026-11-27 18:05:09`, or `–` for nil.
    func text(_ micros: Int64?) -> String {
        guard let micros else { return "–" }
        let p = parts(micros)
        return "\(date(p)) \(two(p.hour)):\(two(p.minute)):\(two(p.second))"
    }

    /// `2026-11-27 18:05`: a time a person set (an activation's start), to the minute.
    func minuteText(_ micros: Int64) -> String {
        let p = parts(micros)
        return "\(date(p)) \(two(p.hour)):\(two(p.minute))"
    }

    /// A date-time picker's value (`<input type="datetime-local">`): `2026-11-27T18:05`.
    func pickerValue(_ micros: Int64) -> String {
        let p = parts(micros)
        return "\(date(p))T\(two(p.hour)):\(two(p.minute))"
    }

    /// The instant a person means by a picker's `2026-11-27T18:05` (seconds allowed) or a date
    /// `2026-11-27` (its local midnight) in the zone; nil for anything else. In a repeated hour
    /// (clocks going back) the first is meant; in a skipped hour, the time after the change.
    func micros(picked text: String) -> Int64? {
        let parts = text.split(separator: "T", maxSplits: 1, omittingEmptySubsequences: false)
        let day = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard day.count == 3, day[0].count == 4, day[1].count == 2, day[2].count == 2,
            let y = Int(day[0]), let mo = Int(day[1]), let d = Int(day[2])
        else { return nil }
        var h = 0, mi = 0, se = 0
        if parts.count == 2 {
            let clock = parts[1].split(separator: ":", omittingEmptySubsequences: false)
            guard (2...3).contains(clock.count), clock.allSatisfy({ $0.count == 2 }), let hh = Int(clock[0]), let mm = Int(clock[1]),
                let ss = clock.count == 3 ? Int(clock[2]) : 0, hh < 24, mm < 60, ss < 60
            else { return nil }
            (h, mi, se) = (hh, mm, ss)
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(year: y, month: mo, day: d, hour: h, minute: mi, second: se)
        guard (1...12).contains(mo), (1...31).contains(d), let date = calendar.date(from: components) else { return nil }
        let back = calendar.dateComponents([.day], from: date)
        guard back.day == d else { return nil }  // 2026-02-30
        return Int64(date.timeIntervalSince1970.rounded()) * 1_000_000
    }

    /// A chart's tick: `18:00` within two days, else `11-27`.
    func tick(_ micros: Int64, long: Bool) -> String {
        let p = parts(micros)
        return long ? "\(two(p.month))-\(two(p.day))" : "\(two(p.hour)):\(two(p.minute))"
    }

    private func date(_ p: (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int)) -> String {
        "\(p.year)-\(two(p.month))-\(two(p.day))"
    }

    private func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
}

/// Lengths of time in words: `1 minute`, `90 minutes`, `2 hours`, `1 day`, `1 week`.
enum Period {
    static func text(minutes: Int) -> String {
        func unit(_ n: Int, _ word: String) -> String { n == 1 ? "1 \(word)" : "\(n) \(word)s" }
        if minutes > 0, minutes % 10_080 == 0 { return unit(minutes / 10_080, "week") }
        if minutes > 0, minutes % 1440 == 0 { return unit(minutes / 1440, "day") }
        if minutes > 0, minutes % 60 == 0 { return unit(minutes / 60, "hour") }
        return unit(minutes, "minute")
    }
}
