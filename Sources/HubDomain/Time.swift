// Times are Int64 microseconds since the Unix epoch, UTC. Pure arithmetic, no Foundation.

/// Civil (proleptic Gregorian, UTC) calendar arithmetic on day numbers and microsecond times.
public enum Civil {
    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    public static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400  // [0, 399]
        let mp = (month + 9) % 12  // March = 0
        let doy = (153 * mp + 2) / 5 + day - 1  // [0, 365]
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy  // [0, 146096]
        return era * 146097 + doe - 719468
    }

    /// The civil date of a day number (Howard Hinnant's civil_from_days).
    public static func civilFromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

    /// Whether `y` is a leap year in the Gregorian calendar.
    public static func isLeapYear(_ y: Int64) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    /// The days in `month` (1 to 12) of `year`.
    public static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Floor division.
    @inline(__always)
    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    /// Microseconds in a second.
    public static let microsPerSecond: Int64 = 1_000_000
    /// Microseconds in a (UTC) day.
    public static let microsPerDay: Int64 = 86_400_000_000

    /// The UTC day number (days since 1970-01-01) of a time in microseconds.
    public static func dayNumber(micros: Int64) -> Int64 { floorDiv(micros, microsPerDay) }

    /// "YYYY-MM-DD" for a day number.
    public static func dayKey(dayNumber: Int64) -> String {
        let (y, m, d) = civilFromDays(dayNumber)
        var out: [UInt8] = []
        out.reserveCapacity(11)
        appendYear(y, to: &out)
        out.append(UInt8(ascii: "-")); appendDigits(m, 2, to: &out)
        out.append(UInt8(ascii: "-")); appendDigits(d, 2, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses "YYYY-MM-DD" into a day number; nil when malformed or not a real date.
    public static func parseDate(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            let y = digits(b, 0, 4), let m = digits(b, 5, 2), let d = digits(b, 8, 2),
            (1...12).contains(m), d >= 1, d <= daysInMonth(year: y, month: m)
        else { return nil }
        return daysFromCivil(year: y, month: m, day: d)
    }

    /// Appends `v` (not negative) as `width` decimal digits, zero-padded, written in place: no
    /// array of its own (every logged event's time is rendered this way, for the event feed, the
    /// exports and the audit tree's leaves).
    static func appendDigits(_ v: Int64, _ width: Int, to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width))
        var x = v
        var i = start + width - 1
        while i >= start {
            out[i] = UInt8(ascii: "0") + UInt8(x % 10)
            x /= 10
            i -= 1
        }
    }

    static func appendYear(_ y: Int64, to out: inout [UInt8]) {
        if y >= 0 && y <= 9999 {
            appendDigits(y, 4, to: &out)
        } else {
            // Outside ISO-8601's basic range: signed expanded year.
            out.append(y < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            let a = y < 0 ? -y : y
            out.append(contentsOf: Array(String(a).utf8))
        }
    }

    static func digits(_ b: [UInt8], _ start: Int, _ count: Int) -> Int64? {
        guard start + count <= b.count else { return nil }
        var v: Int64 = 0
        for i in start..<(start + count) {
            let c = b[i]
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            v = v * 10 + Int64(c - UInt8(ascii: "0"))
        }
        return v
    }
}

/// ISO 8601 UTC times: rendering and strict parsing.
public enum ISO8601 {
    /// Renders `2026-11-22T18:00:00.000000Z`.
    public static func format(micros: Int64) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(27)
        write(micros: micros, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends ``format(micros:)``'s text to `out` (no string of its own).
    public static func write(micros: Int64, to out: inout [UInt8]) {
        let days = Civil.floorDiv(micros, Civil.microsPerDay)
        let rem = micros - days * Civil.microsPerDay  // [0, microsPerDay)
        let (y, m, d) = Civil.civilFromDays(days)
        let secs = rem / Civil.microsPerSecond
        let frac = rem % Civil.microsPerSecond
        Civil.appendYear(y, to: &out)
        out.append(UInt8(ascii: "-")); Civil.appendDigits(m, 2, to: &out)
        out.append(UInt8(ascii: "-")); Civil.appendDigits(d, 2, to: &out)
        out.append(UInt8(ascii: "T")); Civil.appendDigits(secs / 3600, 2, to: &out)
        out.append(UInt8(ascii: ":")); Civil.appendDigits((secs / 60) % 60, 2, to: &out)
        out.append(UInt8(ascii: ":")); Civil.appendDigits(secs % 60, 2, to: &out)
        out.append(UInt8(ascii: ".")); Civil.appendDigits(frac, 6, to: &out)
        out.append(UInt8(ascii: "Z"))
    }

    /// Renders whole Unix seconds.
    public static func format(seconds: Int64) -> String { format(micros: seconds * Civil.microsPerSecond) }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.f{1,6}](Z|±hh:mm)` into microseconds since the epoch, UTC.
    /// Returns nil for anything else (including out-of-range fields).
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            b[10] == UInt8(ascii: "T"), b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let y = Civil.digits(b, 0, 4), let mo = Civil.digits(b, 5, 2), let d = Civil.digits(b, 8, 2),
            let h = Civil.digits(b, 11, 2), let mi = Civil.digits(b, 14, 2), let s = Civil.digits(b, 17, 2),
            (1...12).contains(mo), d >= 1, d <= Civil.daysInMonth(year: y, month: mo),
            h <= 23, mi <= 59, s <= 59
        else { return nil }
        var i = 19
        var frac: Int64 = 0
        if b[i] == UInt8(ascii: ".") {
            i += 1
            var n = 0
            while i < b.count, b[i] >= UInt8(ascii: "0"), b[i] <= UInt8(ascii: "9") {
                n += 1
                guard n <= 6 else { return nil }
                frac = frac * 10 + Int64(b[i] - UInt8(ascii: "0"))
                i += 1
            }
            guard n >= 1 else { return nil }
            for _ in n..<6 { frac *= 10 }
        }
        guard i < b.count else { return nil }
        var offsetSeconds: Int64 = 0
        switch b[i] {
        case UInt8(ascii: "Z"):
            i += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard b.count - i == 6, b[i + 3] == UInt8(ascii: ":"),
                let oh = Civil.digits(b, i + 1, 2), let om = Civil.digits(b, i + 4, 2),
                oh <= 23, om <= 59
            else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (b[i] == UInt8(ascii: "-") ? -1 : 1)
            i += 6
        default:
            return nil
        }
        guard i == b.count else { return nil }
        let days = Civil.daysFromCivil(year: y, month: mo, day: d)
        let secs = days * 86_400 + h * 3600 + mi * 60 + s - offsetSeconds
        return secs * Civil.microsPerSecond + frac
    }
}
