import Foundation
import HubDomain
import Synchronization

/// One run of an activation: the load is wanted on during [start, end) (Unix seconds, UTC).
public struct ScheduleWindow: Sendable, Equatable {
    /// Start, Unix seconds (inclusive).
    public var start: Int64
    /// End, Unix seconds (exclusive).
    public var end: Int64
    /// Creates a window.
    public init(start: Int64, end: Int64) { self.start = start; self.end = end }
}

/// Two activations of one device whose windows overlap.
public struct ActivationConflict: Sendable, Equatable {
    /// One activation's name.
    public var first: String
    /// The other's name.
    public var second: String
    /// The first instant (at or after the search's `from`) at which both want the load on.
    public var at: Int64
    /// Creates a conflict.
    public init(first: String, second: String, at: Int64) { self.first = first; self.second = second; self.at = at }
}

/// Pure schedule arithmetic for activations (no clock, no I/O; Foundation only for time zones).
///
/// Rules:
/// - Windows are half-open, [start, start + 60*lengthMinutes). A zero-length activation has no windows.
/// - One-shot (`daily == nil`, period 0): the single window at `start`.
/// - Periodic (`daily == nil`, period > 0): windows at `start + k*60*period`, k >= 0, computed with integer
///   division (constant time however far `t` is from `start`). A window end beyond `Int64.max` is clamped.
/// - Daily (`daily != nil`, period ignored): on every local date (in `daily.timeZone`) whose ISO weekday the
///   rule runs on, at local `minuteOfDay`; only starts >= `a.start` count. Daylight saving:
///   - a local time inside a spring-forward gap is read with the offset in force *before* the gap, so it
///     lands the length of the gap later on the wall clock (02:30 in a 02:00->03:00 gap starts at 03:30);
///   - a local time that occurs twice (fall back) means its first occurrence.
///   Daily windows exist only for years 1...9999 and an invalid time zone yields none.
/// - Several windows of one activation may overlap (length > period); they are reported as they are.
public enum ScheduleMath {

    // MARK: Time zones

    /// Whether `identifier` names a time zone in this system's tz database.
    public static func isValidTimeZone(_ identifier: String) -> Bool {
        timeZone(identifier) != nil
    }

    private static let zoneCache = Mutex<[String: TimeZone?]>([:])

    static func timeZone(_ identifier: String) -> TimeZone? {
        if let cached = zoneCache.withLock({ $0[identifier] }) { return cached }
        let zone = identifier.isEmpty ? nil : TimeZone(identifier: identifier)
        zoneCache.withLock { cache in
            if cache.count >= 512 { cache.removeAll() }  // bound memory against junk identifiers
            cache[identifier] = .some(zone)
        }
        return zone
    }

    // MARK: Public queries

    /// The window of `a` containing `t` (start <= t < end); if several overlap t, the one that started last.
    public static func window(of a: Activation, containing t: Int64) -> ScheduleWindow? {
        guard let s = Schedule(a) else { return nil }
        // Ends grow with starts, so the latest start at or before t is the only candidate.
        guard let start = s.latestStart(atOrBefore: Int128(t)) else { return nil }
        let w = s.window(start)
        return w.end > t ? w : nil
    }

    /// The latest window of `a` that ended at or before `t` (end <= t).
    public static func lastEnded(of a: Activation, atOrBefore t: Int64) -> ScheduleWindow? {
        guard let s = Schedule(a) else { return nil }
        guard let start = s.latestStart(atOrBefore: Int128(t) - s.length) else { return nil }
        return s.window(start)
    }

    /// The first window start or window end strictly after `t` (nil: none ever again, e.g. a past one-shot).
    public static func nextTransition(of a: Activation, after t: Int64) -> Int64? {
        guard let s = Schedule(a) else { return nil }
        let nextStart = s.earliestStart(after: Int128(t))
        // The first window ending after t is the first one starting after t - length.
        let nextEnd = s.earliestStart(after: Int128(t) - s.length).map { s.window($0).end }
        switch (nextStart, nextEnd) {
        case let (x?, y?): return min(x, y)
        case let (x?, nil): return x
        case let (nil, y?): return y > t ? y : nil  // an end clamped to Int64.max may not be after t
        case (nil, nil): return nil
        }
    }

    /// The windows of `a` that overlap [from, to), in order, at most `limit`.
    public static func windows(of a: Activation, overlapping from: Int64, _ to: Int64, limit: Int = 1000) -> [ScheduleWindow] {
        guard from < to, limit > 0, let s = Schedule(a) else { return [] }
        var result: [ScheduleWindow] = []
        var next = s.earliestStart(after: Int128(from) - s.length)  // first window ending after `from`
        while let start = next, start < to, result.count < limit {
            result.append(s.window(start))
            next = s.earliestStart(after: Int128(start))
        }
        return result
    }

    /// Pairs of activations in `list` whose windows overlap within [from, from + days*86400): each pair once
    /// (`first` earlier in `list` than `second`), with the first instant at or after `from` at which both
    /// want the load on. Ordered by `at`, then by position in `list`. Adjacent windows (one ends exactly
    /// when the other starts) are not a conflict; windows of one activation overlapping each other are not either.
    public static func conflicts(in list: [Activation], from: Int64, days: Int = 14) -> [ActivationConflict] {
        let horizon = horizonEnd(from: from, days: days)
        let schedules = list.map(Schedule.init)
        var found: [(at: Int64, i: Int, j: Int)] = []
        for i in list.indices {
            guard let si = schedules[i] else { continue }
            for j in list.indices where j > i {
                guard let sj = schedules[j] else { continue }
                if let at = firstOverlap(si, sj, from: from, to: horizon) { found.append((at, i, j)) }
            }
        }
        found.sort { ($0.at, $0.i, $0.j) < ($1.at, $1.i, $1.j) }
        return found.map { ActivationConflict(first: list[$0.i].name, second: list[$0.j].name, at: $0.at) }
    }

    /// Same, for a candidate against the others (for the answer to an add/update): `first` is always the
    /// candidate. Others with the candidate's name are skipped (they are the version an update replaces).
    public static func conflicts(of candidate: Activation, with others: [Activation], from: Int64, days: Int = 14) -> [ActivationConflict] {
        guard let sc = Schedule(candidate) else { return [] }
        let horizon = horizonEnd(from: from, days: days)
        var found: [(at: Int64, j: Int)] = []
        for (j, other) in others.enumerated() where other.name != candidate.name {
            guard let so = Schedule(other) else { continue }
            if let at = firstOverlap(sc, so, from: from, to: horizon) { found.append((at, j)) }
        }
        found.sort { ($0.at, $0.j) < ($1.at, $1.j) }
        return found.map { ActivationConflict(first: candidate.name, second: others[$0.j].name, at: $0.at) }
    }

    // MARK: Internals

    private static func horizonEnd(from: Int64, days: Int) -> Int64 {
        let end = Int128(from) + Int128(max(days, 0)) * 86_400
        return Int64(clamping: end)
    }

    /// The first instant in [from, to) covered by a window of both `a` and `b`.
    ///
    /// Both window sequences have increasing starts and increasing ends, so a window that ends before the
    /// other's current window starts can overlap none of the other's later windows either: skip straight to
    /// the first window that ends after that start (constant time per step).
    static func firstOverlap(_ a: Schedule, _ b: Schedule, from: Int64, to: Int64) -> Int64? {
        guard from < to else { return nil }
        var x = a.earliestStart(after: Int128(from) - a.length)
        var y = b.earliestStart(after: Int128(from) - b.length)
        while let xs = x, let ys = y, xs < to, ys < to {
            let wa = a.window(xs), wb = b.window(ys)
            if wa.end <= wb.start {
                x = a.earliestStart(after: Int128(wb.start) - a.length)
            } else if wb.end <= wa.start {
                y = b.earliestStart(after: Int128(wa.start) - b.length)
            } else {
                return max(wa.start, wb.start, from)
            }
        }
        return nil
    }

    /// An activation reduced to its sequence of window starts. Starts are strictly increasing and every
    /// window has the same length, so ends are increasing too.
    struct Schedule {
        enum Kind {
            case oneShot
            case periodic(period: Int128)
            case daily(zone: TimeZone, minuteOfDay: Int64, weekdays: UInt8)
        }
        let origin: Int64
        /// Seconds.
        let length: Int128
        let kind: Kind

        init?(_ a: Activation) {
            guard a.lengthMinutes > 0 else { return nil }
            origin = a.start
            length = Int128(a.lengthMinutes) * 60
            if let d = a.daily {
                let mask = d.weekdays & DailyRepeat.everyDay
                guard mask != 0, d.minuteOfDay < 1440, let zone = ScheduleMath.timeZone(d.timeZone) else { return nil }
                kind = .daily(zone: zone, minuteOfDay: Int64(d.minuteOfDay), weekdays: mask)
            } else if a.periodMinutes == 0 {
                kind = .oneShot
            } else {
                kind = .periodic(period: Int128(a.periodMinutes) * 60)
            }
        }

        func window(_ start: Int64) -> ScheduleWindow {
            ScheduleWindow(start: start, end: Int64(clamping: Int128(start) + length))
        }

        /// The latest window start <= x.
        func latestStart(atOrBefore x: Int128) -> Int64? {
            switch kind {
            case .oneShot:
                return x >= Int128(origin) ? origin : nil
            case .periodic(let p):
                guard x >= Int128(origin) else { return nil }
                let k = (x - Int128(origin)) / p  // non-negative, so truncation is floor
                return Int64(exactly: Int128(origin) + k * p)
            case .daily(let zone, let minute, let mask):
                return Daily(zone: zone, minute: minute, mask: mask, origin: origin).latestStart(atOrBefore: x)
            }
        }

        /// The earliest window start > x.
        func earliestStart(after x: Int128) -> Int64? {
            switch kind {
            case .oneShot:
                return x < Int128(origin) ? origin : nil
            case .periodic(let p):
                guard x >= Int128(origin) else { return origin }
                let k = (x - Int128(origin)) / p + 1
                return Int64(exactly: Int128(origin) + k * p)
            case .daily(let zone, let minute, let mask):
                return Daily(zone: zone, minute: minute, mask: mask, origin: origin).earliestStart(after: x)
            }
        }
    }

    /// Daily starts. Local dates are counted as days since 1970-01-01 (a Thursday) in the zone.
    struct Daily {
        let zone: TimeZone
        let minute: Int64
        let mask: UInt8
        let origin: Int64

        /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: outside, no daily windows.
        static let minInstant: Int64 = -62_135_596_800
        static let maxInstant: Int64 = 253_402_300_799

        func offset(at instant: Int64) -> Int64 {
            Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
        }

        func runs(day: Int64) -> Bool {
            let isoWeekday = Int(((day % 7 + 7) % 7 + 3) % 7) + 1  // day 0 = Thursday = 4
            return mask & (1 << UInt8(isoWeekday - 1)) != 0
        }

        /// The local calendar day containing `instant`.
        func localDay(of instant: Int64) -> Int64 {
            let local = instant + offset(at: instant)
            return local >= 0 ? local / 86_400 : -((-local + 86_399) / 86_400)
        }

        /// The instant at which the wall clock of the zone shows `wall` (seconds since 1970-01-01T00:00 local).
        /// Repeated wall time: the first occurrence. Skipped wall time: read with the offset before the gap.
        func instant(ofWall wall: Int64) -> Int64 {
            // Offsets in force within a day either side cover any transition near this wall time.
            var candidates = [offset(at: wall - 86_400), offset(at: wall), offset(at: wall + 86_400)]
            candidates.sort()
            var valid: Int64? = nil
            for o in candidates where offset(at: wall - o) == o {
                valid = min(valid ?? .max, wall - o)
            }
            if let valid { return valid }
            // In a gap (the offset grew): the smaller offset is the one before the gap.
            return wall - candidates[0]
        }

        func start(day: Int64) -> Int64 {
            instant(ofWall: day * 86_400 + minute * 60)
        }

        func latestStart(atOrBefore x: Int128) -> Int64? {
            let lowest = max(origin, Self.minInstant)
            guard x >= Int128(lowest) else { return nil }
            let t = Int64(min(x, Int128(Self.maxInstant)))
            var day = localDay(of: t) + 1
            for _ in 0..<10 {  // at most 6 days in a row do not run
                if runs(day: day) {
                    let s = start(day: day)
                    if s < lowest { return nil }  // starts only get earlier going back
                    if s <= t { return s }
                }
                day -= 1
            }
            return nil
        }

        func earliestStart(after x: Int128) -> Int64? {
            guard x < Int128(Self.maxInstant) else { return nil }
            let floor = max(Int128(origin) - 1, Int128(Self.minInstant) - 1)  // > Int64.min
            let t = Int64(max(x, floor))
            var day = localDay(of: t) - 1
            for _ in 0..<10 {
                if runs(day: day) {
                    let s = start(day: day)
                    if s > Self.maxInstant { return nil }
                    if s > t { return s }
                }
                day += 1
            }
            return nil
        }
    }
}
