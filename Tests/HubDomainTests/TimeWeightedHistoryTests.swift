import Testing

@testable import HubDomain

private let second: Int64 = 1_000_000
private let minute: Int64 = 60 * second
private let hour: Int64 = 60 * minute

/// The hour bucket holding `t0` and its minute buckets, after `readings` of device `p`'s power
/// (each `(offset from t0, value)`, logged when measured) and the clock moved to `t0 + clock`.
private func folded(_ readings: [(Int64, Double)], clock: Int64, offline: Int64? = nil) -> HubState {
    var s = HubState()
    run(.registerDevice(id: "p", driver: "virtual", name: "P", config: "{}", hardwareId: nil), &s, at: t0 - hour)
    var events: [(Int64, HubEvent)] = readings.map {
        ($0.0, .readingRecorded(ReadingRecorded(subject: .device("p"), quantity: .power, value: $0.1, measuredAt: t0 + $0.0)))
    }
    if let offline { events.append((offline, .availabilityChanged(AvailabilityChanged(device: "p", available: false, reason: "gone")))) }
    for (offset, event) in events.sorted(by: { $0.0 < $1.0 }) { s.apply(event, context: ctx(s.lastSequence + 1, t0 + offset)) }
    s.apply(.deviceRenamed(DeviceRenamed(device: "p", name: "later")), context: ctx(s.lastSequence + 1, t0 + clock))
    return s
}

private func buckets(_ s: HubState, _ resolution: HistoryResolution, from: Int64 = t0, to: Int64 = t0 + hour) throws -> [HistoryBucket] {
    guard
        case .buckets(let b) = try s.history(
            HistoryQuery(
                subject: .device("p"), quantity: .power, from: from, to: to,
                resolution: resolution))
    else { return [] }
    return b
}

/// A bucket's `mean` weighs each value by how long it held (until the next reading, or the device
/// going offline), over the part of the bucket that had a value; buckets covered only by a value
/// carried in from before are answered with count 0.
@Suite struct TimeWeightedMeanTests {
    /// A heater: 0 W at :00, 1800 W at :01, 0 W at :59. 58 minutes of 1800 W in the hour: 1,740 W, not 600.
    @Test func aHeaterOnFor58MinutesOfTheHourMeans1740W() throws {
        let s = folded([(0, 0), (minute, 1800), (59 * minute, 0)], clock: hour + 5 * minute)
        let h = try buckets(s, .hour)
        #expect(h.count == 1)
        #expect(h[0].mean == 1740)
        #expect(h[0].count == 3 && h[0].min == 0 && h[0].max == 1800 && h[0].last == 0)
        #expect(h[0].covered == hour)
        // Minutes with no reading carry the heater's 1800 W in: count 0, and the held value as min, max, last and mean.
        let m = try buckets(s, .minute)
        #expect(m.count == 60)
        #expect(
            m[30]
                == HistoryBucket(
                    start: t0 + 30 * minute, count: 0, min: 1800, max: 1800, sum: 0, last: 1800,
                    weighted: 1800 * Double(minute), covered: minute))
        #expect(m.map(\.mean) == [0] + Array(repeating: 1800, count: 58) + [0])
        #expect(m.map(\.count) == [1, 1] + Array(repeating: 0, count: 57) + [1])
    }

    /// A kettle, logged once on change at a steady 1,808 W: 1,808 W, not 904.
    @Test func aKettleSteadyAt1808WLoggedOnceMeans1808W() throws {
        let s = folded([(-30 * second, 0), (0, 1808)], clock: 2 * hour)
        let h = try buckets(s, .hour)
        #expect(h.map(\.mean) == [1808])
        #expect(h.map(\.count) == [1])
        // The minute before: 30 s off, 30 s on.
        #expect(try buckets(s, .minute, from: t0 - minute, to: t0).map(\.mean) == [0])
        #expect(try buckets(s, .minute, from: t0 - minute, to: t0 + 2 * minute).map(\.mean) == [0, 1808, 1808])
    }

    /// The open tail counts: the value held from the newest reading up to the model's clock.
    @Test func theOpenTailCountsUpToTheModelsClock() throws {
        let s = folded([(0, 100), (10 * minute, 400)], clock: 20 * minute)
        let h = try buckets(s, .hour)
        #expect(h[0].covered == 20 * minute)
        #expect(h[0].mean == 250)
        // Minutes after the clock hold nothing yet.
        #expect(try buckets(s, .minute).count == 20)
        // A reading measured at the clock has held no time: its bucket answers the mean of its readings.
        let now = folded([(0, 100), (10 * minute, 400)], clock: 10 * minute)
        #expect(try buckets(now, .minute, from: t0 + 10 * minute, to: t0 + 11 * minute).map(\.mean) == [400])
    }

    /// A device reported offline ends its held value at that event's record time.
    @Test func goingOfflineEndsTheHeldValue() throws {
        let s = folded([(0, 1000)], clock: 2 * hour, offline: 15 * minute)
        let h = try buckets(s, .hour)
        #expect(h[0].covered == 15 * minute && h[0].mean == 1000)
        #expect(try buckets(s, .minute).count == 15)
        #expect(try buckets(s, .hour, from: t0 + hour, to: t0 + 2 * hour).isEmpty)
        // The next reading holds again from when it was measured.
        var back = s
        back.apply(
            .readingRecorded(ReadingRecorded(subject: .device("p"), quantity: .power, value: 10, measuredAt: t0 + 2 * hour)),
            context: ctx(back.lastSequence + 1, t0 + 2 * hour))
        back.apply(.deviceRenamed(DeviceRenamed(device: "p", name: "x")), context: ctx(back.lastSequence + 1, t0 + 2 * hour + 30 * minute))
        #expect(try buckets(back, .hour, from: t0, to: t0 + 3 * hour).map(\.mean) == [1000, 10])
        #expect(try buckets(back, .hour, from: t0, to: t0 + 3 * hour).map(\.covered) == [15 * minute, 30 * minute])
    }

    /// A reading measured before the series' newest (logged late) counts in its bucket's count,
    /// min, max and last, and leaves the weighting alone: the span it falls in was weighed already.
    @Test func aLateReadingCountsButDoesNotReweigh() throws {
        var s = folded([(0, 100), (30 * minute, 200)], clock: 40 * minute)
        s.apply(
            .readingRecorded(ReadingRecorded(subject: .device("p"), quantity: .power, value: 900, measuredAt: t0 + 10 * minute)),
            context: ctx(s.lastSequence + 1, t0 + 41 * minute))
        s.apply(.deviceRenamed(DeviceRenamed(device: "p", name: "y")), context: ctx(s.lastSequence + 1, t0 + hour))
        let h = try buckets(s, .hour)
        #expect(h[0].mean == 150)
        #expect(h[0].count == 3 && h[0].max == 900 && h[0].last == 200)
        let late = try buckets(s, .minute, from: t0 + 10 * minute, to: t0 + 11 * minute)
        #expect(late.map(\.count) == [1] && late.map(\.last) == [900] && late.map(\.mean) == [100])
    }

    /// The held value is part of the model's snapshot form: restored, it folds on as the original.
    @Test func theHeldValueSurvivesTheSnapshotCodec() throws {
        let s = folded([(0, 1000)], clock: 5 * minute)
        let restored = try HistoryModel(encodedBytes: s.history.encodedBytes())
        #expect(restored == s.history)
        #expect(restored.hold(HistorySeriesKey(subject: .device("p"), quantity: .power)) == HistoryHold(value: 1000, since: t0, newest: t0))
        #expect(
            restored.buckets(HistorySeriesKey(subject: .device("p"), quantity: .power), .hour, from: t0, to: t0 + hour)
                == s.history.buckets(HistorySeriesKey(subject: .device("p"), quantity: .power), .hour, from: t0, to: t0 + hour))
    }
}

/// The rule itself, as a table.
@Test func theHoldRule() {
    var hold = HistoryHold()
    #expect(hold.take(5, at: 10) == (nil, true))
    #expect(hold.take(7, at: 20).closed == HistoryHold.Span(value: 5, from: 10, to: 20))
    #expect(hold.take(1, at: 15) == (nil, false))  // late: nothing closes, 7 still holds
    #expect(hold.tail(now: 25) == HistoryHold.Span(value: 7, from: 20, to: 25))
    #expect(hold.take(8, at: 20) == (nil, true))  // same time: the later reading's value holds
    #expect(hold.end(at: 30) == HistoryHold.Span(value: 8, from: 20, to: 30))
    #expect(hold.tail(now: 40) == nil && hold.end(at: 50) == nil)
    #expect(hold.take(2, at: 60) == (nil, true))  // after an end: nothing held to close
}
