import Foundation
import Testing

@testable import HubDomain

private let minute: Int64 = 60_000_000
private let hour: Int64 = 60 * minute
private let day: Int64 = 24 * hour

/// Folds readings of `p`'s power, each `(offset from t0 in µs, value)`, with the log time equal to the measurement time.
private func powered(_ readings: [(Int64, Double)], quantity: Quantity = .power) -> HubState {
    var s = HubState()
    register("p", &s)
    for (offset, value) in readings {
        run(.recordReading(subject: .device("p"), quantity: quantity, value: value, measuredAt: t0 + offset), &s, at: t0 + offset)
    }
    return s
}

private func buckets(
    _ s: HubState, _ subject: String = "device/p", _ quantity: String = "power", from: Int64, to: Int64,
    _ bucket: String
) throws -> [HistoryBucket] {
    let q = try HistoryQuery.parse(
        subject: subject, quantity: quantity, from: ISO8601.format(micros: from),
        to: ISO8601.format(micros: to), bucket: bucket)
    guard case .buckets(let b) = try s.history(q) else { Issue.record("not buckets"); return [] }
    return b
}

private func refusal(
    _ s: HubState, _ subject: String = "device/p", _ quantity: String = "power", from: String, to: String,
    _ bucket: String
) -> String? {
    do {
        _ = try s.history(try HistoryQuery.parse(subject: subject, quantity: quantity, from: from, to: to, bucket: bucket))
        return nil
    } catch {
        return error.code
    }
}

/// `(start, count, min, max, mean, last)` rows, for comparing with a table.
private func rows(_ b: [HistoryBucket]) -> [[Double]] {
    b.map { [Double($0.start - t0) / Double(minute), Double($0.count), $0.min, $0.max, $0.mean, $0.last] }
}

@Suite struct HistoryBucketingTests {
    @Test func minuteHourAndDayBucketsHoldCountMinMaxMeanLast() throws {
        // t0 is 2026-11-22T18:00:00Z. The clock ends at 1 h 2 min (the last reading's log time).
        let s = powered([(0, 10), (15_000_000, 30), (minute - 15_000_000, 20), (minute, 5), (hour + minute, 7), (hour + 2 * minute, 7)])
        let m = try buckets(s, from: t0, to: t0 + 2 * hour, "1m")
        // 10 for 15 s, 30 for 30 s, 20 for 15 s: a mean of 22.5; the last is the one measured last.
        #expect(rows(Array(m.prefix(2))) == [[0, 3, 10, 30, 22.5, 20], [1, 1, 5, 5, 5, 5]])
        // Minutes with no reading carry the value held in: count 0, that value as min, max, mean and last.
        #expect(rows([m[2], m[59]]) == [[2, 0, 5, 5, 5, 5], [59, 0, 5, 5, 5, 5]])
        #expect(rows(Array(m.suffix(2))) == [[61, 1, 7, 7, 7, 7], [62, 1, 7, 7, 7, 7]])
        #expect(m.count == 63)
        // The hour: 22.5 for a minute, 5 for 59; then 5 for a minute and 7 for one.
        #expect(rows(try buckets(s, from: t0, to: t0 + 2 * hour, "1h")) == [[0, 4, 5, 30, (22.5 + 5 * 59) / 60, 5], [60, 2, 7, 7, 6, 7]])
        // The day bucket starts at midnight UTC, 18 hours before t0.
        let d = try buckets(s, from: t0, to: t0 + 1, "1d")
        #expect(d.count == 1 && d[0].count == 6 && d[0].covered == hour + 2 * minute && d[0].min == 5 && d[0].max == 30 && d[0].last == 7)
        #expect(abs(d[0].mean - (22.5 + 5 * 60 + 7) / 62) < 1e-12)
    }

    @Test func theRangeStartsAtTheBucketHoldingFromAndEndsBeforeTo() throws {
        let s = powered([(0, 1), (minute, 2), (2 * minute, 3), (3 * minute, 4)])
        // from inside minute 1 takes minute 1; to on minute 3's start leaves it out.
        #expect(try buckets(s, from: t0 + minute + 5, to: t0 + 3 * minute, "1m").map(\.last) == [2, 3])
        #expect(try buckets(s, from: t0 + minute + 5, to: t0 + 3 * minute + 1, "1m").map(\.last) == [2, 3, 4])
    }

    @Test func aReadingMeasuredEarlierButLoggedLaterCountsButIsNotTheLast() throws {
        let s = powered([(10_000_000, 50), (5_000_000, 80), (3 * minute, 1), (minute, 9)])
        let b = try buckets(s, from: t0, to: t0 + hour, "1m")
        // The late readings (80, 9) count in their minutes but do not weigh: 50 held from 10 s to 3 min.
        #expect(rows(b) == [[0, 2, 50, 80, 50, 50], [1, 1, 9, 9, 50, 9], [2, 0, 50, 50, 50, 50], [3, 1, 1, 1, 1, 1]])
        #expect(try buckets(s, from: t0, to: t0 + hour, "1h").first?.last == 1)
    }

    @Test func animalsVitalsAreKeptPerQuantity() throws {
        var s = HubState()
        run(.admitAnimal(admission("rex")), &s)
        run(.recordReading(subject: .animal("rex"), quantity: .temperature, value: 38.5, measuredAt: t0), &s)
        run(.recordReading(subject: .animal("rex"), quantity: .heartRate, value: 90, measuredAt: t0), &s)
        run(.recordReading(subject: .animal("rex"), quantity: .temperature, value: 39.1, measuredAt: t0 + hour), &s, at: t0 + hour)
        let temps = try buckets(s, "animal/rex", "temperature", from: t0 - day, to: t0 + day, "1d")
        #expect(temps.map(\.count) == [2])
        // 38.5 held for the hour; 39.1 has held no time yet (the clock is at its measurement).
        #expect(temps[0].mean == 38.5 && temps[0].max == 39.1)
        #expect(try buckets(s, "animal/rex", "heart_rate", from: t0, to: t0 + day, "1h").map(\.last) == [90])
        #expect(try buckets(s, "animal/rex", "temperature", from: t0 + 2 * hour, to: t0 + day, "1h").isEmpty)
    }
}

/// A model for one series (`hub replay --history`) folds that series only; its clock moves with every event.
@Test func aModelForOneSeriesFoldsOnlyThatSeries() {
    var model = HistoryModel(only: HistorySeriesKey(subject: .device("p"), quantity: .power))
    let readings: [(Subject, Quantity, Int64)] = [
        (.device("p"), .power, 0), (.device("q"), .power, minute),
        (.device("p"), .voltage, 2 * minute), (.animal("rex"), .heartRate, 3 * day)
    ]
    for (i, (subject, quantity, offset)) in readings.enumerated() {
        model.apply(
            .readingRecorded(ReadingRecorded(subject: subject, quantity: quantity, value: 1, measuredAt: t0 + offset)),
            context: EventContext(sequence: UInt64(i + 1), timestamp: t0 + offset, actor: "t"))
    }
    #expect(model.seriesCount == 1)
    #expect(model.knows(.device("p")) && !model.knows(.device("q")) && !model.knows(.animal("rex")))
    #expect(model.now == t0 + 3 * day)
}

@Suite struct HistoryRetentionTests {
    @Test func minuteBucketsOlderThanSevenDaysArePrunedAndRefused() throws {
        let s = powered([(0, 1), (hour, 2), (7 * day + 30 * minute, 3)])
        let p = s.history.series[0]
        // The reading at t0 fell out of the minute ring (older than 7 days at the clock of the last
        // one): the ring holds the 7 days the value 2 was held in, and no more...
        let horizon = HistoryResolution.minute.horizon(now: t0 + 7 * day + 30 * minute)
        #expect(p.minute.count == HistoryResolution.minute.retainedBuckets && p.minute.start(at: 0) == horizon)
        #expect(p.hour.count == 7 * 24 + 1 && p.day.count == 8)
        // ...and a range reaching before the horizon is refused rather than shown half empty.
        #expect(refusal(s, from: ISO8601.format(micros: t0), to: ISO8601.format(micros: t0 + day), "1m") == "not_retained")
        #expect(try buckets(s, from: t0 + 7 * day, to: t0 + 8 * day, "1m").filter { $0.count > 0 }.map(\.last) == [3])
        #expect(try buckets(s, from: t0, to: t0 + 8 * day, "1h").filter { $0.count > 0 }.map(\.last) == [1, 2, 3])
        // The horizon is the model's clock (the newest log time), not the series' newest reading.
        var later = s
        later.apply(.deviceRenamed(DeviceRenamed(device: "p", name: "x")), context: ctx(99, t0 + 400 * day))
        #expect(
            refusal(later, from: ISO8601.format(micros: t0 + 30 * day), to: ISO8601.format(micros: t0 + 31 * day), "1h") == "not_retained")
        #expect(try buckets(later, from: t0, to: t0 + 8 * day, "1d").filter { $0.count > 0 }.count == 2)  // days are kept for ever
    }

    @Test func aFullRingKeepsItsNewestBucketsAndNoMore() {
        var model = HistoryModel()
        let key = HistorySeriesKey(subject: .device("p"), quantity: .power)
        let limit = HistoryResolution.minute.retainedBuckets
        for i in 0..<(limit + 500) {
            model.record(key, value: Double(i), measuredAt: t0 + Int64(i) * minute, now: t0 + Int64(i) * minute)
        }
        let column = model.series[0].minute
        #expect(column.count == limit && column.capacity == limit)
        #expect(column.start(at: 0) == HistoryResolution.minute.bucket(of: t0) + 500)
        // A reading older than everything the full ring holds is dropped from it, not squeezed in.
        model.record(key, value: -1, measuredAt: t0 + 10 * minute)
        #expect(model.series[0].minute == column)
        // 177 hour buckets in a ring of 256, 9 day buckets in one of 16.
        #expect(model.storageBytes == (limit + 256 + 16) * HistoryModel.bytesPerBucket)
    }

    /// A series that has reported once holds two slots per resolution (one bucket and room for the
    /// next), not a ring sized for a busy series: a thousand plugs' first readings cost kilobytes, not megabytes.
    @Test func aNewSeriesStartsWithTwoSlotsPerResolution() {
        var model = HistoryModel()
        model.record(HistorySeriesKey(subject: .device("p"), quantity: .power), value: 1, measuredAt: t0, now: t0)
        #expect(model.storageBytes == 3 * 2 * HistoryModel.bytesPerBucket)
    }

    @Test func anInsertIntoAFullRingDropsTheOldest() {
        let limit = HistoryResolution.minute.retainedBuckets
        var column = HistoryColumn(limit: limit)
        let b0 = HistoryResolution.minute.bucket(of: t0)
        // Every other minute, so there are gaps to insert into.
        for i in 0..<limit { column.add(bucket: b0 + Int64(2 * i), value: 1, at: t0 + Int64(2 * i) * minute) }
        let first = column.start(at: 0)
        column.add(bucket: b0 + 3, value: 2, at: t0 + 3 * minute)
        #expect(column.count == limit)
        #expect(column.start(at: 0) == first + 2)
        #expect(column.start(at: 0) == b0 + 2)
        #expect(column.start(at: 1) == b0 + 3)
        #expect(column.bucket(at: 1, width: minute).last == 2)
        // Time held goes into a gap the same way, as a bucket with no reading.
        column.weigh(bucket: b0 + 5, value: 4, micros: minute)
        #expect(column.count == limit && column.start(at: 0) == b0 + 3 && column.start(at: 2) == b0 + 5)
        #expect(
            column.bucket(at: 2, width: minute)
                == HistoryBucket(
                    start: (b0 + 5) * minute, count: 0, min: 4, max: 4, sum: 0, last: 4,
                    weighted: 4 * Double(minute), covered: minute))
    }
}

@Suite struct HistoryEnergyTests {
    @Test func energyPerDayComesFromTheLedgerAcrossACounterReset() throws {
        var s = HubState()
        register("k", &s)
        // Day 1 (2026-11-22): 100 -> 150 Wh. Day 2: the counter resets to 20, then 50; then drops to 10 with no reset event.
        for (offset, value) in [(Int64(0), 100.0), (hour, 150), (day, 20), (day + hour, 50)] {
            run(.recordReading(subject: .device("k"), quantity: .energy, value: value, measuredAt: t0 + offset), &s, at: t0 + offset)
        }
        s.apply(
            .readingRecorded(ReadingRecorded(subject: .device("k"), quantity: .energy, value: 10, measuredAt: t0 + 2 * day)),
            context: ctx(50, t0 + 2 * day))
        #expect(s.energy["k"]?.resets == 1)
        let q = try HistoryQuery.parse(
            subject: "device/k", quantity: "energy", from: "2026-11-01T00:00:00Z",
            to: "2026-12-01T00:00:00Z", bucket: "1d")
        let midnight = Civil.dayNumber(micros: t0) * Civil.microsPerDay
        #expect(
            try s.history(q)
                == .energy([
                    EnergyDay(start: midnight, wh: 50), EnergyDay(start: midnight + day, wh: 50),
                    EnergyDay(start: midnight + 2 * day, wh: 10)
                ]))
        // The same figures as the ledger's own days: one rule, not two.
        #expect(s.energy["k"]?.dailyWh == ["2026-11-22": 50, "2026-11-23": 50, "2026-11-24": 10])
        // Counter values are not bucketed as readings.
        #expect(s.history.seriesCount == 0)
        #expect(refusal(s, "device/k", "energy", from: "2026-11-22T00:00:00Z", to: "2026-11-23T00:00:00Z", "1h") == "bad_bucket")
    }
}

@Suite struct HistoryRefusalTests {
    static let s = powered([(0, 1)])

    @Test(arguments: [
        ("device/p", "power", "2026-11-22T19:00:00Z", "2026-11-22T18:00:00Z", "1h", "bad_range"),
        ("device/p", "power", "2026-11-22T18:00:00Z", "2026-11-22T18:00:00Z", "1h", "bad_range"),
        ("device/p", "power", "yesterday", "2026-11-22T18:00:00Z", "1h", "bad_range"),
        ("device/p", "power", "2026-11-22T18:00:00Z", "2026-11-31T00:00:00Z", "1h", "bad_range"),
        ("device/nope", "power", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "1h", "unknown_subject"),
        ("animal/p", "power", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "1h", "unknown_subject"),
        ("kettle", "power", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "1h", "unknown_subject"),
        ("device/p/x", "power", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "1h", "unknown_subject"),
        ("device/p", "watts", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "1h", "unknown_quantity"),
        ("device/p", "power", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "5m", "bad_bucket"),
        ("device/p", "power", "2026-11-22T00:00:00Z", "2026-11-23T00:00:00Z", "1H", "bad_bucket"),
        ("device/p", "power", "2026-11-22T18:00:00Z", "2026-11-29T18:00:00Z", "1m", "too_many_buckets"),
        ("device/p", "power", "1990-01-01T00:00:00Z", "2026-11-23T00:00:00Z", "1h", "too_many_buckets"),
        ("device/p", "power", "2026-11-14T00:00:00Z", "2026-11-15T00:00:00Z", "1m", "not_retained"),
        ("device/p", "power", "2025-11-01T00:00:00Z", "2025-11-02T00:00:00Z", "1h", "not_retained")
    ])
    func refused(_ subject: String, _ quantity: String, _ from: String, _ to: String, _ bucket: String, _ expected: String) {
        #expect(refusal(Self.s, subject, quantity, from: from, to: to, bucket) == expected)
    }

    @Test func acceptedEdgesAnswer() throws {
        // Exactly 10,000 buckets is allowed; a day is kept for ever even long ago; a known device with no readings answers [].
        #expect(refusal(Self.s, from: "2026-11-16T00:00:00Z", to: "2026-11-22T22:40:00Z", "1m") == nil)
        #expect(refusal(Self.s, from: "2000-01-01T00:00:00Z", to: "2026-11-23T00:00:00Z", "1d") == nil)
        #expect(try buckets(Self.s, "device/p", "voltage", from: t0, to: t0 + day, "1h").isEmpty)
    }

    @Test func theMessageSaysWhat() throws {
        do {
            _ = try HistoryQuery.parse(subject: "device/p", quantity: "power", from: "2026-11-22 18:00", to: "x", bucket: "1h")
            Issue.record("accepted")
        } catch {
            #expect(error.message == "\"from\": \"2026-11-22 18:00\" is not an ISO-8601 time (2026-11-22T18:00:00Z) or date (2026-11-22)")
        }
        // A date alone is its start, UTC.
        let q = try HistoryQuery.parse(subject: "device/p", quantity: "power", from: "2026-11-22", to: "2026-11-23", bucket: "1d")
        #expect(q.from == Civil.dayNumber(micros: t0) * Civil.microsPerDay && q.bucketCount == 1)
    }
}

@Suite struct HistorySnapshotTests {
    static func events() -> [(HubEvent, Int64)] {
        var out: [(HubEvent, Int64)] = [
            (.deviceRegistered(DeviceRegistered(device: "p", driver: "v", name: "P", config: "{}", hardwareId: nil)), t0)
        ]
        // 9 days of readings every 7 minutes (the minute ring prunes), two quantities, one animal.
        var t = t0
        var i = 0
        while t < t0 + 9 * day {
            out.append(
                (.readingRecorded(ReadingRecorded(subject: .device("p"), quantity: .power, value: Double(i % 97), measuredAt: t)), t))
            if i % 5 == 0 {
                out.append(
                    (
                        .readingRecorded(
                            ReadingRecorded(
                                subject: .animal("rex"), quantity: .temperature, value: 38 + Double(i % 7) / 10,
                                measuredAt: t - 3 * minute)), t
                    ))
            }
            t += 7 * minute
            i += 1
        }
        return out
    }

    @Test func aSnapshotRoundTripEqualsTheRefoldAndKeepsFoldingAlike() throws {
        let all = Self.events()
        let half = all.count / 2
        var live = HubState()
        for (n, (e, ts)) in all[..<half].enumerated() { live.apply(e, context: ctx(UInt64(n + 1), ts)) }
        var restored = try JSONDecoder().decode(HubState.self, from: try JSONEncoder().encode(live))
        #expect(restored == live)
        for (n, (e, ts)) in all[half...].enumerated() {
            live.apply(e, context: ctx(UInt64(half + n + 1), ts))
            restored.apply(e, context: ctx(UInt64(half + n + 1), ts))
        }
        var refold = HubState()
        for (n, (e, ts)) in all.enumerated() { refold.apply(e, context: ctx(UInt64(n + 1), ts)) }
        #expect(restored == refold && live == refold)
        #expect(restored.history.seriesCount == 2)
        let q = HistoryQuery(subject: .device("p"), quantity: .power, from: t0 + 8 * day, to: t0 + 9 * day, resolution: .minute)
        #expect(try restored.history(q) == refold.history(q))
        // The model differs once one reading differs.
        var other = refold
        other.history.record(HistorySeriesKey(subject: .device("p"), quantity: .power), value: 1, measuredAt: t0 + 8 * day)
        #expect(other != refold)
    }

    @Test func damagedBytesAreRefusedNamingTheField() {
        var model = HistoryModel()
        model.record(HistorySeriesKey(subject: .device("p"), quantity: .power), value: 1, measuredAt: t0, now: t0)
        let bytes = model.encodedBytes()
        #expect((try? HistoryModel(encodedBytes: bytes)) == model)
        #expect(throws: DecodingFailure.self) { try HistoryModel(encodedBytes: Array(bytes.dropLast())) }
        #expect(throws: DecodingFailure.self) { try HistoryModel(encodedBytes: bytes + [0]) }
        var badVersion = bytes
        badVersion[0] = 9
        #expect(throws: DecodingFailure.self) { try HistoryModel(encodedBytes: badVersion) }
        for text in ["", "QQ==", "AAEC", "aGVsbG8gd29ybGQ="] {
            #expect(Base64.decode(Base64.encode(Array(text.utf8))) == Array(text.utf8))
        }
        #expect(Base64.encode(Array("hello world".utf8)) == "aGVsbG8gd29ybGQ=")
        #expect(Base64.decode("a*==") == nil)
    }
}
