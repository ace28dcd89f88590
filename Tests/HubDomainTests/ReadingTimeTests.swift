import Testing

@testable import HubDomain

private let minute: Int64 = 60_000_000
private let hour: Int64 = 60 * minute

private func reading(_ subject: Subject, _ quantity: Quantity, _ value: Double, _ measuredAt: Int64) -> HubCommand {
    .recordReading(subject: subject, quantity: quantity, value: value, measuredAt: measuredAt)
}

/// "Latest" is the reading measured latest; one measured before it (logged late) goes to the history only.
@Suite struct LatestByMeasurementTests {
    /// The case: 92 bpm measured 10 minutes ago, then 83 bpm measured an hour ago, shows 92.
    @Test func anAnimalsVitalsShowTheLastMeasuredNotTheLastReceived() throws {
        var s = HubState()
        run(.admitAnimal(admission("rex")), &s, at: t0 - 2 * hour)
        run(reading(.animal("rex"), .heartRate, 92, t0 - 10 * minute), &s, at: t0)
        run(reading(.animal("rex"), .heartRate, 83, t0 - hour), &s, at: t0 + minute)
        run(reading(.animal("rex"), .temperature, 38.2, t0 - 5 * minute), &s, at: t0 + minute)
        run(reading(.animal("rex"), .temperature, 39.0, t0 - 30 * minute), &s, at: t0 + 2 * minute)
        #expect(s.animals["rex"]?.heartRate == ReadingValue(value: 92, measuredAt: t0 - 10 * minute))
        #expect(s.animals["rex"]?.temperature == ReadingValue(value: 38.2, measuredAt: t0 - 5 * minute))
        // Both are in the history.
        let q = HistoryQuery(subject: .animal("rex"), quantity: .heartRate, from: t0 - 2 * hour, to: t0, resolution: .hour)
        guard case .buckets(let b) = try s.history(q) else { Issue.record("no buckets"); return }
        #expect(b.reduce(0) { $0 + $1.count } == 2)
        // On equal times the later reading is the latest.
        run(reading(.animal("rex"), .heartRate, 95, t0 - 10 * minute), &s, at: t0 + 3 * minute)
        #expect(s.animals["rex"]?.heartRate?.value == 95)
    }

    @Test func aDevicesLastReadingIsTheLastMeasured() {
        var s = HubState()
        register("p", &s)
        run(reading(.device("p"), .power, 1800, t0), &s, at: t0)
        run(reading(.device("p"), .power, 5, t0 - minute), &s, at: t0 + 1)
        #expect(s.devices["p"]?.lastReading(.power) == ReadingValue(value: 1800, measuredAt: t0))
        run(reading(.device("p"), .power, 7, t0 + 1), &s, at: t0 + 2)
        #expect(s.devices["p"]?.lastReading(.power)?.value == 7)
    }
}

/// Readings dated outside an animal's stay, or beyond the clock skew past the hub's clock, are
/// refused with the times named; nothing is recorded.
@Suite struct ReadingTimeRefusalTests {
    static func admitted() -> HubState {
        var s = HubState()
        run(.admitAnimal(admission("rex")), &s, at: t0)
        register("p", &s)
        return s
    }

    /// Triage: vitals taken before the admission form was saved belong to the stay, up to the
    /// triage window (6 h) before it; earlier ones are refused with both times.
    @Test func aReadingMeasuredBeforeTheAdmissionIsTriageWithinTheWindowAndRefusedBeyond() {
        var s = Self.admitted()
        #expect(code(reading(.animal("rex"), .heartRate, 90, t0 - minute), s, now: t0 + hour) == nil)
        #expect(code(reading(.animal("rex"), .heartRate, 90, t0 - 6 * hour), s, now: t0 + hour) == nil)
        let decision = decide(reading(.animal("rex"), .heartRate, 90, t0 - 6 * hour - minute), state: s, now: t0 + hour)
        #expect(
            decision.rejection
                == Rejection(
                    code: "reading_before_admission",
                    message:
                        "heart_rate reading for animal \"rex\" was measured at 2026-11-22T11:59:00.000000Z, before its admission at 2026-11-22T18:00:00.000000Z and more than 6 h before it (the triage window)"
                ))
        run(reading(.animal("rex"), .heartRate, 95, t0 - 10 * minute), &s, at: t0 + minute)
        #expect(s.animals["rex"]?.heartRate?.value == 95)
    }

    /// A re-admitted animal keeps its earlier stay (admission, discharge, last vitals); vitals of the
    /// earlier stay's time are not taken into the new one, even within the triage window.
    @Test func aReAdmissionKeepsTheEarlierStayAndItsTimeApart() {
        var first = admission("rex")
        first.observations = "Allergic to penicillin"
        var s = HubState()
        run(.admitAnimal(first), &s, at: t0)
        run(reading(.animal("rex"), .temperature, 39.4, t0 + minute), &s, at: t0 + minute)
        run(.dischargeAnimal(id: "rex", exitWeightKg: 11.5, veterinarian: "Dr. Lee", observations: "Well"), &s, at: t0 + hour)
        var second = admission("rex")
        second.motive = "vaccination"
        run(.admitAnimal(second), &s, at: t0 + 3 * hour)
        let rex = s.animals["rex"]!
        #expect(rex.admissions == 2 && rex.isAdmitted && rex.temperature == nil)
        #expect(rex.admission.motive == "vaccination")
        #expect(rex.earlierStays.count == 1)
        let stay = rex.earlierStays[0]
        #expect(stay.admission.observations == "Allergic to penicillin")
        #expect(stay.admittedAt == t0 && stay.dischargedAt == t0 + hour)
        #expect(stay.discharge?.veterinarian == "Dr. Lee" && stay.discharge?.exitWeightKg == 11.5)
        #expect(stay.temperature?.value == 39.4)
        // Between the stays: triage of the new one; during the first: refused.
        #expect(code(reading(.animal("rex"), .temperature, 38, t0 + 2 * hour), s, now: t0 + 4 * hour) == nil)
        let during = decide(reading(.animal("rex"), .temperature, 38, t0 + 30 * minute), state: s, now: t0 + 4 * hour)
        #expect(during.rejection?.code == "reading_before_admission")
        #expect(during.rejection?.message.hasSuffix("within its earlier stay (discharged at 2026-11-22T19:00:00.000000Z)") == true)
    }

    @Test func aReadingMeasuredAfterTheDischargeIsRefused() {
        var s = Self.admitted()
        run(.dischargeAnimal(id: "rex", exitWeightKg: 11, veterinarian: nil, observations: nil), &s, at: t0 + hour)
        let decision = decide(reading(.animal("rex"), .temperature, 38, t0 + 2 * hour), state: s, now: t0 + 2 * hour)
        #expect(
            decision.rejection
                == Rejection(
                    code: "reading_after_discharge",
                    message:
                        "temperature reading for animal \"rex\" was measured at 2026-11-22T20:00:00.000000Z, after its discharge at 2026-11-22T19:00:00.000000Z"
                ))
        // Measured during the stay, but the animal is gone: refused as before.
        #expect(code(reading(.animal("rex"), .temperature, 38, t0 + minute), s, now: t0 + 2 * hour) == "animal_not_admitted")
    }

    @Test func aReadingFromBeyondTheClockSkewIsRefused() {
        let s = Self.admitted()
        let skew = DomainLimits.standard.readingClockSkew
        #expect(skew == 60_000_000)
        #expect(code(reading(.device("p"), .power, 1, t0 + hour + skew), s, now: t0 + hour) == nil)
        #expect(code(reading(.animal("rex"), .heartRate, 80, t0 + hour + skew), s, now: t0 + hour) == nil)
        let decision = decide(reading(.device("p"), .power, 1, t0 + hour + skew + 1), state: s, now: t0 + hour)
        #expect(
            decision.rejection
                == Rejection(
                    code: "reading_in_future",
                    message:
                        "power reading for device \"p\" is dated 2026-11-22T19:01:00.000001Z, more than 60 s after the hub's clock (2026-11-22T19:00:00.000000Z)"
                ))
        #expect(code(reading(.animal("rex"), .heartRate, 80, t0 + 2 * hour), s, now: t0 + hour) == "reading_in_future")
    }
}
