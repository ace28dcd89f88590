import Testing

@testable import HubDomain

@Suite struct TimeTests {
    @Test func rendersISO8601() {
        #expect(ISO8601.format(micros: 0) == "1970-01-01T00:00:00.000000Z")
        #expect(ISO8601.format(micros: t0) == "2026-11-22T18:00:00.000000Z")
        #expect(ISO8601.format(micros: t0 + 1) == "2026-11-22T18:00:00.000001Z")
        #expect(ISO8601.format(micros: -1) == "1969-12-31T23:59:59.999999Z")
        #expect(ISO8601.format(micros: 951_782_400_000_000) == "2000-02-29T00:00:00.000000Z")
        #expect(ISO8601.format(seconds: Int64(UInt32.max)) == "2106-02-07T06:28:15.000000Z")
    }

    @Test func parsesISO8601() {
        #expect(ISO8601.parse("2026-11-22T18:00:00Z") == t0)
        #expect(ISO8601.parse("2026-11-22T18:00:00.5Z") == t0 + 500_000)
        #expect(ISO8601.parse("2026-11-22T18:00:00.123456Z") == t0 + 123_456)
        #expect(ISO8601.parse("2026-11-22T19:30:00+01:30") == t0)
        #expect(ISO8601.parse("2026-11-22T13:00:00-05:00") == t0)
        #expect(ISO8601.parse("1969-12-31T23:59:59.999999Z") == -1)
        #expect(ISO8601.parse("2024-02-29T00:00:00Z") != nil)
        for bad in [
            "2026-11-22T18:00:00", "2026-11-22 18:00:00Z", "2026-11-22T18:00:00.Z",
            "2026-11-22T18:00:00.1234567Z", "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z",
            "2026-11-22T24:00:00Z", "2026-11-22T18:60:00Z", "2026-11-22T18:00:60Z",
            "2026-11-22T18:00:00+0100", "2026-11-22T18:00:00+01:00x", "2026-11-22T18:00:00ZZ", "",
            "２026-11-22T18:00:00Z", "2026-11-00T18:00:00Z"
        ] {
            #expect(ISO8601.parse(bad) == nil, "\(bad) should be rejected")
        }
    }

    @Test func roundTripsManyTimes() {
        var t: Int64 = -62_135_596_800_000_000  // 0001-01-01
        while t < 253_402_300_799_000_000 {  // 9999-12-31
            #expect(ISO8601.parse(ISO8601.format(micros: t)) == t)
            t += 7_777_777_777_777
        }
    }

    @Test func civilDates() {
        #expect(Civil.daysFromCivil(year: 1970, month: 1, day: 1) == 0)
        #expect(Civil.daysFromCivil(year: 2000, month: 3, day: 1) == 11017)
        #expect(Civil.civilFromDays(-1) == (1969, 12, 31))
        #expect(Civil.dayKey(dayNumber: Civil.dayNumber(micros: t0)) == "2026-11-22")
        #expect(Civil.dayKey(dayNumber: Civil.dayNumber(micros: -1)) == "1969-12-31")
        #expect(Civil.parseDate("2020-02-29") != nil)
        #expect(Civil.parseDate("2021-02-29") == nil)
        #expect(Civil.parseDate("2021-2-1") == nil)
        for d: Int64 in stride(from: -800_000, to: 800_000, by: 997) {
            let (y, m, dd) = Civil.civilFromDays(d)
            #expect(Civil.daysFromCivil(year: y, month: m, day: dd) == d)
        }
    }

    @Test func identifiers() {
        #expect(Identifier.isValid("plug-1_A"))
        #expect(Identifier.isValid(String(repeating: "a", count: 64)))
        #expect(!Identifier.isValid(String(repeating: "a", count: 65)))
        #expect(!Identifier.isValid(""))
        #expect(!Identifier.isValid("a b"))
        #expect(!Identifier.isValid("a/b"))
        #expect(!Identifier.isValid("é"))
    }
}
