import Foundation
import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT
@testable import HubSchedule

/// Unix seconds of a UTC civil time (independent of Foundation: days-from-civil).
private func utc(_ y: Int, _ m: Int, _ d: Int, _ h: Int = 0, _ mi: Int = 0, _ s: Int = 0) -> Int64 {
    let yy = m <= 2 ? y - 1 : y
    let era = (yy >= 0 ? yy : yy - 399) / 400
    let yoe = yy - era * 400
    let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146_097 + doe - 719_468
    return Int64(days * 86_400 + h * 3600 + mi * 60 + s)
}

private func w(_ start: Int64, _ end: Int64) -> ScheduleWindow { ScheduleWindow(start: start, end: end) }

private func periodic(_ name: String = "p", start: Int64, length: UInt16, period: UInt16) -> Activation {
    Activation(name: name, start: start, lengthMinutes: length, periodMinutes: period)
}

private func daily(
    _ name: String = "d", start: Int64, at hhmm: String, length: UInt16,
    days: [String]? = nil, zone: String
) -> Activation {
    let rule = DailyRepeat(
        minuteOfDay: DailyRepeat.minute(of: hhmm)!,
        weekdays: days.map { DailyRepeat.weekdays(of: $0)! } ?? DailyRepeat.everyDay,
        timeZone: zone)
    return Activation(name: name, start: start, lengthMinutes: length, periodMinutes: 0, daily: rule)
}

/// Starts and ends strictly after `t`, `count` of them.
private func transitions(_ a: Activation, after t: Int64, count: Int) -> [Int64] {
    var out: [Int64] = []
    var t = t
    while out.count < count, let n = ScheduleMath.nextTransition(of: a, after: t) {
        out.append(n)
        t = n
    }
    return out
}

// MARK: - Test helper sanity

@Test func utcHelperMatchesKnownInstants() {
    #expect(utc(1970, 1, 1) == 0)
    #expect(utc(2100, 1, 1) == 4_102_444_800)
    #expect(utc(2026, 3, 29, 1) == 1_774_746_000)
    #expect(utc(1, 1, 1) == -62_135_596_800)
}

// MARK: - One-shot

@Test func oneShotBeforeInsideAfterAndBoundaries() {
    let s: Int64 = 1_000_000
    let a = periodic(start: s, length: 10, period: 0)
    let end = s + 600
    #expect(ScheduleMath.window(of: a, containing: s - 1) == nil)
    #expect(ScheduleMath.window(of: a, containing: s) == w(s, end))
    #expect(ScheduleMath.window(of: a, containing: s + 300) == w(s, end))
    #expect(ScheduleMath.window(of: a, containing: end - 1) == w(s, end))
    #expect(ScheduleMath.window(of: a, containing: end) == nil)
    #expect(ScheduleMath.window(of: a, containing: end + 10_000) == nil)

    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: s) == nil)
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: end - 1) == nil)
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: end) == w(s, end))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: .max) == w(s, end))

    #expect(ScheduleMath.nextTransition(of: a, after: .min) == s)
    #expect(ScheduleMath.nextTransition(of: a, after: s - 1) == s)
    #expect(ScheduleMath.nextTransition(of: a, after: s) == end)
    #expect(ScheduleMath.nextTransition(of: a, after: end - 1) == end)
    #expect(ScheduleMath.nextTransition(of: a, after: end) == nil)
    #expect(transitions(a, after: 0, count: 5) == [s, end])

    #expect(ScheduleMath.windows(of: a, overlapping: 0, s) == [])
    #expect(ScheduleMath.windows(of: a, overlapping: 0, s + 1) == [w(s, end)])
    #expect(ScheduleMath.windows(of: a, overlapping: end - 1, end + 5) == [w(s, end)])
    #expect(ScheduleMath.windows(of: a, overlapping: end, end + 5) == [])
    #expect(ScheduleMath.windows(of: a, overlapping: 0, .max, limit: 0) == [])
    #expect(ScheduleMath.windows(of: a, overlapping: end, s) == [])  // empty range
}

@Test func zeroLengthHasNoWindows() {
    for a in [
        periodic(start: 100, length: 0, period: 0), periodic(start: 100, length: 0, period: 5),
        daily(start: 0, at: "18:00", length: 0, zone: "UTC")
    ] {
        #expect(ScheduleMath.window(of: a, containing: 100) == nil)
        #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 1_000_000) == nil)
        #expect(ScheduleMath.nextTransition(of: a, after: 0) == nil)
        #expect(ScheduleMath.windows(of: a, overlapping: 0, 1_000_000) == [])
    }
}

// MARK: - Periodic

@Test func periodicBasicsAndTransitionSequence() {
    let a = periodic(start: 1000, length: 3, period: 10)  // [1000,1180), [1600,1780), ...
    #expect(ScheduleMath.window(of: a, containing: 999) == nil)
    #expect(ScheduleMath.window(of: a, containing: 1000) == w(1000, 1180))
    #expect(ScheduleMath.window(of: a, containing: 1179) == w(1000, 1180))
    #expect(ScheduleMath.window(of: a, containing: 1180) == nil)
    #expect(ScheduleMath.window(of: a, containing: 1599) == nil)
    #expect(ScheduleMath.window(of: a, containing: 1600) == w(1600, 1780))

    #expect(transitions(a, after: 0, count: 6) == [1000, 1180, 1600, 1780, 2200, 2380])
    #expect(transitions(a, after: 1000, count: 3) == [1180, 1600, 1780])
    #expect(transitions(a, after: 1180, count: 2) == [1600, 1780])
    #expect(transitions(a, after: 1599, count: 1) == [1600])

    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 1179) == nil)
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 1180) == w(1000, 1180))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 1779) == w(1000, 1180))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 1780) == w(1600, 1780))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 2300) == w(1600, 1780))

    #expect(
        ScheduleMath.windows(of: a, overlapping: 1179, 2201)
            == [w(1000, 1180), w(1600, 1780), w(2200, 2380)])
    #expect(ScheduleMath.windows(of: a, overlapping: 1180, 2200) == [w(1600, 1780)])
    #expect(ScheduleMath.windows(of: a, overlapping: 0, 100_000, limit: 2) == [w(1000, 1180), w(1600, 1780)])
}

@Test func periodicStartInFarPastIsConstantTime() {
    // Every minute for one minute since 1970: back-to-back windows; query in 2100.
    let a = periodic(start: 0, length: 1, period: 1)
    let t = utc(2100, 1, 1, 12, 34, 56)
    let ws = utc(2100, 1, 1, 12, 34)
    #expect(ScheduleMath.window(of: a, containing: t) == w(ws, ws + 60))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: t) == w(ws - 60, ws))
    #expect(ScheduleMath.nextTransition(of: a, after: t) == ws + 60)
    #expect(ScheduleMath.nextTransition(of: a, after: ws) == ws + 60)  // one ends, the next starts
    #expect(ScheduleMath.windows(of: a, overlapping: ws, ws + 180) == [w(ws, ws + 60), w(ws + 60, ws + 120), w(ws + 120, ws + 180)])

    // Awkward period, start before 1970, queried far ahead: k is about 10^9.
    let b = periodic(start: -1_000_003, length: 5, period: 7)
    let q = utc(2100, 6, 1)
    let k = (q - b.start) / 420
    let s = b.start + k * 420
    #expect(ScheduleMath.window(of: b, containing: q) == (q < s + 300 ? w(s, s + 300) : nil))
    #expect(ScheduleMath.window(of: b, containing: s) == w(s, s + 300))
    #expect(ScheduleMath.window(of: b, containing: s + 299) == w(s, s + 300))
    #expect(ScheduleMath.window(of: b, containing: s + 300) == nil)
    #expect(ScheduleMath.lastEnded(of: b, atOrBefore: s + 300) == w(s, s + 300))
    #expect(ScheduleMath.lastEnded(of: b, atOrBefore: s + 299) == w(s - 420, s - 120))
    #expect(transitions(b, after: s, count: 4) == [s + 300, s + 420, s + 720, s + 840])
}

@Test func longPeriods() {
    let p: Int64 = 65_535 * 60
    let a = periodic(start: 0, length: 60, period: 65_535)
    let t = utc(2030, 1, 1)
    let s = t / p * p
    #expect(ScheduleMath.window(of: a, containing: s + 3599) == w(s, s + 3600))
    #expect(ScheduleMath.window(of: a, containing: s + 3600) == nil)
    #expect(ScheduleMath.nextTransition(of: a, after: s + 3600) == s + p)
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: s + 3599) == w(s - p, s - p + 3600))

    // Longest length and period: back-to-back windows of 45.5 days.
    let b = periodic(start: 0, length: 65_535, period: 65_535)
    #expect(ScheduleMath.window(of: b, containing: t) == w(s, s + p))
    #expect(ScheduleMath.window(of: b, containing: s) == w(s, s + p))
    #expect(ScheduleMath.window(of: b, containing: s - 1) == w(s - p, s))
    #expect(ScheduleMath.nextTransition(of: b, after: t) == s + p)

    // Longest length, shortest period: 65535 windows overlap every instant.
    let c = periodic(start: 0, length: 65_535, period: 1)
    let m = t / 60 * 60
    #expect(ScheduleMath.window(of: c, containing: t + 1) == w(m, m + p))
    #expect(ScheduleMath.lastEnded(of: c, atOrBefore: t) == w(t - p, t))
    #expect(ScheduleMath.nextTransition(of: c, after: t) == t + 60)
    #expect(
        ScheduleMath.windows(of: c, overlapping: t, t + 1, limit: 3) == [
            w(t - p + 60, t + 60), w(t - p + 120, t + 120), w(t - p + 180, t + 180)
        ])
    #expect(ScheduleMath.windows(of: c, overlapping: t, t + 1, limit: 100_000).count == 65_535)
    // Early on, only the windows started since `start` exist.
    #expect(ScheduleMath.windows(of: c, overlapping: 0, 1).count == 1)
    #expect(ScheduleMath.windows(of: c, overlapping: 0, 121).count == 3)
}

@Test func overlappingWindowsWhenLengthExceedsPeriod() {
    let a = periodic(start: 0, length: 25, period: 10)  // [0,1500), [600,2100), [1200,2700), ...
    #expect(ScheduleMath.window(of: a, containing: 0) == w(0, 1500))
    #expect(ScheduleMath.window(of: a, containing: 599) == w(0, 1500))
    #expect(ScheduleMath.window(of: a, containing: 600) == w(600, 2100))  // started last
    #expect(ScheduleMath.window(of: a, containing: 1300) == w(1200, 2700))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 1499) == nil)
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 1500) == w(0, 1500))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: 2200) == w(600, 2100))
    #expect(transitions(a, after: -1, count: 8) == [0, 600, 1200, 1500, 1800, 2100, 2400, 2700])
    #expect(
        ScheduleMath.windows(of: a, overlapping: 1400, 1801)
            == [w(0, 1500), w(600, 2100), w(1200, 2700), w(1800, 3300)])
}

@Test func periodicMatchesBruteForce() {
    // Deterministic pseudo-random activations and instants against a naive enumeration of windows.
    var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next(_ n: Int64) -> Int64 {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int64((seed >> 33) % UInt64(n))
    }
    for _ in 0..<60 {
        let a = periodic(start: next(5000), length: UInt16(next(40) + 1), period: UInt16(next(30)))
        let p = Int64(a.periodMinutes) * 60, l = Int64(a.lengthMinutes) * 60
        let all: [ScheduleWindow] =
            p == 0
            ? [w(a.start, a.start + l)]
            : (0..<80).map { k in w(a.start + Int64(k) * p, a.start + Int64(k) * p + l) }
        for _ in 0..<25 {
            let t = next(a.start + 40 * max(p, 60))
            #expect(ScheduleMath.window(of: a, containing: t) == all.last { $0.start <= t && t < $0.end })
            #expect(ScheduleMath.lastEnded(of: a, atOrBefore: t) == all.last { $0.end <= t })
            let edges = all.flatMap { [$0.start, $0.end] }.filter { $0 > t }
            #expect(ScheduleMath.nextTransition(of: a, after: t) == edges.min())
            let to = t + next(3000) + 1
            #expect(ScheduleMath.windows(of: a, overlapping: t, to) == all.filter { $0.start < to && $0.end > t })
        }
    }
}

@Test func extremeInstantsDoNotOverflow() {
    let late = periodic(start: .max - 100, length: 65_535, period: 65_535)
    #expect(ScheduleMath.window(of: late, containing: .max - 1) == w(.max - 100, .max))  // end clamped
    #expect(ScheduleMath.window(of: late, containing: .max) == nil)
    let lateStart: Int64 = .max - 100
    #expect(ScheduleMath.nextTransition(of: late, after: lateStart - 1) == lateStart)
    #expect(ScheduleMath.nextTransition(of: late, after: .max - 100) == .max)
    #expect(ScheduleMath.nextTransition(of: late, after: .max) == nil)
    #expect(ScheduleMath.lastEnded(of: late, atOrBefore: .max) == nil)
    #expect(ScheduleMath.windows(of: late, overlapping: .min, .max) == [w(.max - 100, .max)])

    let early = periodic(start: .min, length: 1, period: 1)
    #expect(ScheduleMath.window(of: early, containing: .max - 100) == w(.max - 135, .max - 75))  // 2^64 - 1 = 15 mod 60
    #expect(ScheduleMath.lastEnded(of: early, atOrBefore: .min) == nil)
    #expect(ScheduleMath.lastEnded(of: early, atOrBefore: .min + 60) == w(.min, .min + 60))
    #expect(ScheduleMath.nextTransition(of: early, after: .max - 1) == .max)  // the last window's clamped end
    #expect(ScheduleMath.nextTransition(of: early, after: .max) == nil)
    #expect(ScheduleMath.windows(of: early, overlapping: .min, .max, limit: 2) == [w(.min, .min + 60), w(.min + 60, .min + 120)])
    #expect(ScheduleMath.conflicts(in: [late, early], from: .max - 200, days: 14).map(\.at) == [.max - 100])

    let d = daily(start: .min, at: "18:00", length: 60, zone: "Europe/Lisbon")
    #expect(ScheduleMath.window(of: d, containing: .max) == nil)
    #expect(ScheduleMath.window(of: d, containing: .min) == nil)
    #expect(ScheduleMath.nextTransition(of: d, after: .max) == nil)
    #expect(ScheduleMath.nextTransition(of: d, after: .min) == utc(1, 1, 1, 18) - Int64(-36 * 60 - 45))  // LMT -0:36:45
    #expect(ScheduleMath.windows(of: d, overlapping: .min, .max, limit: 1).count == 1)
}

// MARK: - Daily

@Test func timeZoneValidation() {
    #expect(ScheduleMath.isValidTimeZone("Europe/Lisbon"))
    #expect(ScheduleMath.isValidTimeZone("America/New_York"))
    #expect(ScheduleMath.isValidTimeZone("UTC"))
    #expect(!ScheduleMath.isValidTimeZone(""))
    #expect(!ScheduleMath.isValidTimeZone("Mars/Olympus_Mons"))
    #expect(!ScheduleMath.isValidTimeZone("Europe/Lisbon "))
    let bad = daily(start: 0, at: "18:00", length: 60, zone: "Mars/Olympus_Mons")
    #expect(ScheduleMath.window(of: bad, containing: utc(2026, 1, 1, 18, 30)) == nil)
    #expect(ScheduleMath.lastEnded(of: bad, atOrBefore: utc(2026, 1, 1)) == nil)
    #expect(ScheduleMath.nextTransition(of: bad, after: 0) == nil)
    #expect(ScheduleMath.windows(of: bad, overlapping: 0, utc(2027, 1, 1)) == [])
    #expect(ScheduleMath.conflicts(in: [bad, periodic(start: 0, length: 1, period: 1)], from: 0) == [])
}

@Test func dailyLisbonKeepsLocalTimeAcrossBothDSTChanges() {
    let a = daily(start: utc(2026, 1, 1), at: "18:00", length: 30, zone: "Europe/Lisbon")
    // Spring: WET (UTC+0) until 2026-03-29 01:00 UTC, then WEST (UTC+1).
    let spring = ScheduleMath.windows(of: a, overlapping: utc(2026, 3, 27), utc(2026, 3, 31)).map(\.start)
    #expect(spring == [utc(2026, 3, 27, 18), utc(2026, 3, 28, 18), utc(2026, 3, 29, 17), utc(2026, 3, 30, 17)])
    #expect(spring[2] - spring[1] == 23 * 3600)
    // Autumn: back to WET at 2026-10-25 01:00 UTC.
    let autumn = ScheduleMath.windows(of: a, overlapping: utc(2026, 10, 23), utc(2026, 10, 27)).map(\.start)
    #expect(autumn == [utc(2026, 10, 23, 17), utc(2026, 10, 24, 17), utc(2026, 10, 25, 18), utc(2026, 10, 26, 18)])
    #expect(autumn[2] - autumn[1] == 25 * 3600)

    #expect(ScheduleMath.window(of: a, containing: utc(2026, 3, 29, 17, 29)) == w(utc(2026, 3, 29, 17), utc(2026, 3, 29, 17, 30)))
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 3, 29, 18)) == nil)
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: utc(2026, 3, 29, 17, 29)) == w(utc(2026, 3, 28, 18), utc(2026, 3, 28, 18, 30)))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: utc(2026, 10, 25, 18, 29)) == w(utc(2026, 10, 24, 17), utc(2026, 10, 24, 17, 30)))
    #expect(
        transitions(a, after: utc(2026, 10, 24, 12), count: 4)
            == [utc(2026, 10, 24, 17), utc(2026, 10, 24, 17, 30), utc(2026, 10, 25, 18), utc(2026, 10, 25, 18, 30)])
}

@Test func dailyNewYorkKeepsLocalTimeAcrossBothDSTChanges() {
    let a = daily(start: utc(2026, 1, 1), at: "18:00", length: 60, zone: "America/New_York")
    // EST (UTC-5) until 2026-03-08 07:00 UTC, EDT (UTC-4) until 2026-11-01 06:00 UTC.
    let spring = ScheduleMath.windows(of: a, overlapping: utc(2026, 3, 7), utc(2026, 3, 10)).map(\.start)
    #expect(spring == [utc(2026, 3, 7, 23), utc(2026, 3, 8, 22), utc(2026, 3, 9, 22)])
    let autumn = ScheduleMath.windows(of: a, overlapping: utc(2026, 10, 31), utc(2026, 11, 3)).map(\.start)
    #expect(autumn == [utc(2026, 10, 31, 22), utc(2026, 11, 1, 23), utc(2026, 11, 2, 23)])
    #expect(autumn[1] - autumn[0] == 25 * 3600)
    #expect(
        transitions(a, after: utc(2026, 3, 7, 23, 30), count: 3)
            == [utc(2026, 3, 8, 0), utc(2026, 3, 8, 22), utc(2026, 3, 8, 23)])
}

@Test func dailyStartInSpringGapShiftsByTheGap() {
    // Lisbon 2026-03-29: local 01:00 -> 02:00. 01:30 does not exist: read with the pre-gap offset (UTC+0),
    // it is 01:30 UTC = 02:30 WEST.
    let a = daily(start: utc(2026, 3, 1), at: "01:30", length: 60, zone: "Europe/Lisbon")
    let starts = ScheduleMath.windows(of: a, overlapping: utc(2026, 3, 28), utc(2026, 3, 31)).map(\.start)
    #expect(starts == [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30)])
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 3, 29, 1, 29)) == nil)
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 3, 29, 1, 30)) == w(utc(2026, 3, 29, 1, 30), utc(2026, 3, 29, 2, 30)))

    // New York 2026-03-08: local 02:00 -> 03:00. 02:30 EST would be 07:30 UTC = 03:30 EDT.
    let b = daily(start: utc(2026, 3, 1), at: "02:30", length: 10, zone: "America/New_York")
    let nyStarts = ScheduleMath.windows(of: b, overlapping: utc(2026, 3, 7), utc(2026, 3, 10)).map(\.start)
    #expect(nyStarts == [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 30), utc(2026, 3, 9, 6, 30)])
    // A start exactly at the gap's beginning (02:00 local, does not exist) becomes 03:00 EDT = 07:00 UTC.
    let c = daily(start: utc(2026, 3, 1), at: "02:00", length: 10, zone: "America/New_York")
    #expect(ScheduleMath.nextTransition(of: c, after: utc(2026, 3, 8)) == utc(2026, 3, 8, 7))
}

@Test func dailyStartInRepeatedHourUsesFirstOccurrence() {
    // Lisbon 2026-10-25: 01:00..02:00 local happens twice (WEST 00:00-01:00 UTC, then WET 01:00-02:00 UTC).
    let a = daily(start: utc(2026, 10, 1), at: "01:30", length: 60, zone: "Europe/Lisbon")
    let starts = ScheduleMath.windows(of: a, overlapping: utc(2026, 10, 24), utc(2026, 10, 27)).map(\.start)
    #expect(starts == [utc(2026, 10, 24, 0, 30), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)])
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 10, 25, 1, 29)) == w(utc(2026, 10, 25, 0, 30), utc(2026, 10, 25, 1, 30)))
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 10, 25, 1, 30)) == nil)  // the second 01:30 is not a start

    // New York 2026-11-01: 01:00..02:00 local twice (EDT 05:00-06:00 UTC, then EST 06:00-07:00 UTC).
    let b = daily(start: utc(2026, 10, 1), at: "01:30", length: 15, zone: "America/New_York")
    let nyStarts = ScheduleMath.windows(of: b, overlapping: utc(2026, 10, 31), utc(2026, 11, 3)).map(\.start)
    #expect(nyStarts == [utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)])
}

@Test func dailyWeekdaysMask() {
    // Monday, Wednesday, Friday at 07:00 in Lisbon (winter, UTC+0). 2026-03-02 is a Monday.
    let a = daily(start: utc(2026, 3, 1), at: "07:00", length: 45, days: ["mon", "wed", "fri"], zone: "Europe/Lisbon")
    let starts = ScheduleMath.windows(of: a, overlapping: utc(2026, 3, 1), utc(2026, 3, 15)).map(\.start)
    #expect(starts == [2, 4, 6, 9, 11, 13].map { utc(2026, 3, $0, 7) })
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 3, 3, 7, 10)) == nil)  // Tuesday
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 3, 4, 7, 10)) == w(utc(2026, 3, 4, 7), utc(2026, 3, 4, 7, 45)))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: utc(2026, 3, 4, 7, 44)) == w(utc(2026, 3, 2, 7), utc(2026, 3, 2, 7, 45)))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: utc(2026, 3, 8, 23)) == w(utc(2026, 3, 6, 7), utc(2026, 3, 6, 7, 45)))
    #expect(ScheduleMath.nextTransition(of: a, after: utc(2026, 3, 6, 8)) == utc(2026, 3, 9, 7))  // Fri -> Mon

    // Sunday only (bit 6), in UTC.
    let sun = daily(start: 0, at: "12:00", length: 1, days: ["sun"], zone: "UTC")
    #expect(ScheduleMath.nextTransition(of: sun, after: utc(2026, 3, 2)) == utc(2026, 3, 8, 12))
    #expect(ScheduleMath.lastEnded(of: sun, atOrBefore: utc(2026, 3, 8, 12)) == w(utc(2026, 3, 1, 12), utc(2026, 3, 1, 12, 1)))
}

@Test func dailyWindowSpanningMidnight() {
    // 23:00 for two hours on Mondays only, New York (EST): Monday 2026-03-02 23:00 EST = Tuesday 04:00 UTC.
    let a = daily(start: utc(2026, 2, 1), at: "23:00", length: 120, days: ["mon"], zone: "America/New_York")
    let s = utc(2026, 3, 3, 4), e = utc(2026, 3, 3, 6)
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 3, 3, 5, 30)) == w(s, e))  // Tuesday 00:30 local
    #expect(ScheduleMath.window(of: a, containing: e) == nil)
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: e) == w(s, e))
    // The next Monday is after the change to EDT (UTC-4): 23:00 local = 03:00 UTC.
    #expect(transitions(a, after: utc(2026, 3, 2), count: 4) == [s, e, utc(2026, 3, 10, 3), utc(2026, 3, 10, 5)])
    #expect(ScheduleMath.windows(of: a, overlapping: utc(2026, 3, 3, 5), utc(2026, 3, 3, 5, 1)) == [w(s, e)])
}

@Test func dailyLongerThanADayOverlapsItself() {
    let a = daily(start: 0, at: "06:00", length: 2000, zone: "UTC")  // 33 h 20 min
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 5, 2, 7)) == w(utc(2026, 5, 2, 6), utc(2026, 5, 3, 15, 20)))
    #expect(ScheduleMath.window(of: a, containing: utc(2026, 5, 2, 5)) == w(utc(2026, 5, 1, 6), utc(2026, 5, 2, 15, 20)))
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: utc(2026, 5, 2, 16)) == w(utc(2026, 5, 1, 6), utc(2026, 5, 2, 15, 20)))
    #expect(transitions(a, after: utc(2026, 5, 2, 0), count: 3) == [utc(2026, 5, 2, 6), utc(2026, 5, 2, 15, 20), utc(2026, 5, 3, 6)])
    #expect(ScheduleMath.windows(of: a, overlapping: utc(2026, 5, 2, 5), utc(2026, 5, 2, 6, 1)).count == 2)
}

@Test func dailyFirstRunNotBeforeActivationStart() {
    let zone = "Europe/Lisbon"  // summer: UTC+1, 18:00 local = 17:00 UTC
    // Start exactly at a run: that run counts.
    let exact = daily(start: utc(2026, 6, 10, 17), at: "18:00", length: 60, zone: zone)
    #expect(ScheduleMath.nextTransition(of: exact, after: utc(2026, 6, 1)) == utc(2026, 6, 10, 17))
    #expect(ScheduleMath.window(of: exact, containing: utc(2026, 6, 10, 17)) == w(utc(2026, 6, 10, 17), utc(2026, 6, 10, 18)))
    // One second later: the first run is the next day, and the skipped window is not "current".
    let late = daily(start: utc(2026, 6, 10, 17, 0, 1), at: "18:00", length: 60, zone: zone)
    #expect(ScheduleMath.window(of: late, containing: utc(2026, 6, 10, 17, 30)) == nil)
    #expect(ScheduleMath.lastEnded(of: late, atOrBefore: utc(2026, 6, 11, 12)) == nil)
    #expect(ScheduleMath.nextTransition(of: late, after: .min) == utc(2026, 6, 11, 17))
    #expect(
        ScheduleMath.windows(of: late, overlapping: utc(2026, 6, 1), utc(2026, 6, 13)).map(\.start)
            == [utc(2026, 6, 11, 17), utc(2026, 6, 12, 17)])
    // periodMinutes is ignored for a daily rule.
    var withPeriod = exact
    withPeriod.periodMinutes = 5
    #expect(
        ScheduleMath.windows(of: withPeriod, overlapping: utc(2026, 6, 10), utc(2026, 6, 12))
            == ScheduleMath.windows(of: exact, overlapping: utc(2026, 6, 10), utc(2026, 6, 12)))
}

@Test func dailyFarFutureAndRange() {
    let a = daily(start: 0, at: "18:00", length: 60, zone: "America/New_York")
    // 2100-01-01 is a Friday; New York is on EST then: 18:00 = 23:00 UTC.
    #expect(ScheduleMath.nextTransition(of: a, after: utc(2100, 1, 1)) == utc(2100, 1, 1, 23))
    #expect(ScheduleMath.window(of: a, containing: utc(2100, 7, 1, 22, 30)) == w(utc(2100, 7, 1, 22), utc(2100, 7, 1, 23)))
    #expect(ScheduleMath.window(of: a, containing: utc(12000, 1, 1)) == nil)
    #expect(ScheduleMath.lastEnded(of: a, atOrBefore: utc(12000, 1, 1)) == w(utc(9999, 12, 31, 23), utc(10000, 1, 1)))
}

// MARK: - Conflicts

@Test func conflictsOverlappingAdjacentAndNone() {
    let from = utc(2026, 6, 1)
    let a = periodic("a", start: from + 3600, length: 60, period: 0)  // [01:00, 02:00)
    let b = periodic("b", start: from + 5400, length: 60, period: 0)  // [01:30, 02:30)
    let c = periodic("c", start: from + 9000, length: 30, period: 0)  // [02:30, 03:00): adjacent to b
    let d = periodic("d", start: from + 7200, length: 30, period: 0)  // [02:00, 02:30): adjacent to a, inside b
    #expect(ScheduleMath.conflicts(in: [a, b], from: from) == [ActivationConflict(first: "a", second: "b", at: from + 5400)])
    #expect(ScheduleMath.conflicts(in: [b, a], from: from) == [ActivationConflict(first: "b", second: "a", at: from + 5400)])
    #expect(ScheduleMath.conflicts(in: [b, c], from: from) == [])
    #expect(ScheduleMath.conflicts(in: [a, c], from: from) == [])
    #expect(ScheduleMath.conflicts(in: [a, d], from: from) == [])
    #expect(
        ScheduleMath.conflicts(in: [a, b, c, d], from: from) == [
            ActivationConflict(first: "a", second: "b", at: from + 5400),
            ActivationConflict(first: "b", second: "d", at: from + 7200)
        ])
    #expect(ScheduleMath.conflicts(in: [], from: from) == [])
    #expect(ScheduleMath.conflicts(in: [a], from: from) == [])
    // Already overlapping at `from`: reported at `from`.
    #expect(ScheduleMath.conflicts(in: [a, b], from: from + 6000) == [ActivationConflict(first: "a", second: "b", at: from + 6000)])
    // Over before `from`, or beyond the horizon: none.
    #expect(ScheduleMath.conflicts(in: [a, b], from: from + 7200) == [])
    #expect(ScheduleMath.conflicts(in: [a, b], from: from - 14 * 86_400, days: 14) == [])
    #expect(ScheduleMath.conflicts(in: [a, b], from: from - 14 * 86_400 + 5401, days: 14).count == 1)
    #expect(ScheduleMath.conflicts(in: [a, b], from: from, days: 0) == [])
}

@Test func conflictsPeriodicPairs() {
    let from = utc(2026, 6, 1)
    // Back-to-back hourly halves: never overlap.
    let even = periodic("even", start: from, length: 30, period: 60)
    let odd = periodic("odd", start: from + 1800, length: 30, period: 60)
    #expect(ScheduleMath.conflicts(in: [even, odd], from: from) == [])
    // Every 2 min vs every 3 min, 1 min each, offset by 1 min: 2k = 3j + 1 -> first at minute 4.
    let two = periodic("two", start: from, length: 1, period: 2)
    let three = periodic("three", start: from + 60, length: 1, period: 3)
    #expect(ScheduleMath.conflicts(in: [two, three], from: from) == [ActivationConflict(first: "two", second: "three", at: from + 240)])
    // A window overlapping itself is not a conflict.
    let selfOverlap = periodic("self", start: from, length: 25, period: 10)
    #expect(ScheduleMath.conflicts(in: [selfOverlap], from: from) == [])
    // Starting in the far past, queried now.
    let old = periodic("old", start: 7, length: 1, period: 1440)  // 00:00:07 UTC daily
    let noon = periodic("noon", start: from + 12 * 3600, length: 60, period: 1440)
    let midnight = periodic("midnight", start: from - 1800, length: 60, period: 1440)
    #expect(ScheduleMath.conflicts(in: [old, noon], from: from) == [])
    #expect(
        ScheduleMath.conflicts(in: [old, midnight], from: from + 3600) == [
            ActivationConflict(first: "old", second: "midnight", at: from + 86_400 + 7)
        ])
}

@Test func conflictsDailyVersusPeriodic() {
    let from = utc(2026, 3, 25)
    // 18:00 Lisbon for 30 min vs a fixed 24 h period at 18:15 UTC: they overlap while Lisbon is on UTC+0,
    // and stop overlapping after the DST change (18:00 local becomes 17:00 UTC).
    let d = daily("lamp", start: from, at: "18:00", length: 30, zone: "Europe/Lisbon")
    let p = periodic("heater", start: utc(2026, 3, 1, 18, 15), length: 30, period: 1440)
    #expect(
        ScheduleMath.conflicts(in: [d, p], from: from) == [
            ActivationConflict(first: "lamp", second: "heater", at: utc(2026, 3, 25, 18, 15))
        ])
    #expect(ScheduleMath.conflicts(in: [d, p], from: utc(2026, 3, 29)) == [])
    // And a periodic one at 17:15 UTC that only conflicts from the change on.
    let q = periodic("fan", start: utc(2026, 3, 1, 17, 15), length: 30, period: 1440)
    #expect(
        ScheduleMath.conflicts(in: [d, q], from: from) == [ActivationConflict(first: "lamp", second: "fan", at: utc(2026, 3, 29, 17, 15))])
    // Daily vs daily in different zones: 18:00 Lisbon (UTC+1 in summer) and 13:00 New York (UTC-4) are both 17:00 UTC.
    let ny = daily("ny", start: 0, at: "13:00", length: 5, days: ["sat"], zone: "America/New_York")
    #expect(
        ScheduleMath.conflicts(in: [d, ny], from: utc(2026, 6, 1)) == [
            ActivationConflict(first: "lamp", second: "ny", at: utc(2026, 6, 6, 17))
        ])
}

@Test func conflictsOfCandidate() {
    let from = utc(2026, 6, 1)
    let a = periodic("a", start: from + 3600, length: 60, period: 0)
    let b = periodic("b", start: from + 5400, length: 60, period: 0)
    let c = periodic("c", start: from + 9000, length: 30, period: 0)
    let candidate = periodic("x", start: from + 3000, length: 120, period: 0)  // [00:50, 02:50)
    #expect(
        ScheduleMath.conflicts(of: candidate, with: [c, a, b], from: from) == [
            ActivationConflict(first: "x", second: "a", at: from + 3600),
            ActivationConflict(first: "x", second: "b", at: from + 5400),
            ActivationConflict(first: "x", second: "c", at: from + 9000)
        ])
    // An update: the stored version with the same name is not a conflict with its replacement.
    var updated = a
    updated.start += 60
    #expect(ScheduleMath.conflicts(of: updated, with: [a, c], from: from) == [])
    #expect(ScheduleMath.conflicts(of: updated, with: [a, b], from: from) == [ActivationConflict(first: "a", second: "b", at: from + 5400)])
    #expect(ScheduleMath.conflicts(of: candidate, with: [], from: from) == [])
}

@Test func conflictsAreFastForDenseSchedules() {
    // Two every-other-minute schedules that interleave without touching for 14 days (~20k windows each),
    // plus a daily one: must stay well under the file's time budget.
    let from = utc(2026, 6, 1)
    let list = [
        periodic("even", start: 0, length: 1, period: 2),
        periodic("odd", start: 60, length: 1, period: 2),
        daily("d", start: 0, at: "12:00", length: 1, zone: "Europe/Lisbon")
    ]
    let clock = ContinuousClock()
    let elapsed = clock.measure {
        let found = ScheduleMath.conflicts(in: list, from: from)
        // 12:00 Lisbon (UTC+1) = 11:00 UTC, an even minute: touches "odd" on both sides without overlapping.
        #expect(found == [ActivationConflict(first: "even", second: "d", at: utc(2026, 6, 1, 11))])
    }
    #expect(elapsed < .milliseconds(500))
}
