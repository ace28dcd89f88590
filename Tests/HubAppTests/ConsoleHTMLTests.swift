import DriverAPI
import Foundation
import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The console's HTML builder: interpolated text is escaped in text and in attributes, markup
/// composed from `HTML` values is kept.
struct ConsoleHTMLTests {
    @Test func interpolatedTextIsEscapedAndMarkupKept() {
        let name = #"<b>"Tom" & 'Jerry'</b>"#
        let cell: HTML = "<td title=\"\(name)\">\(name)</td>"
        #expect(
            cell.text
                == "<td title=\"&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;\">&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;</td>"
        )
        let inner: HTML = "<em>\(name)</em>"
        let outer: HTML = "<p>\(inner)</p>"
        #expect(outer.text.hasPrefix("<p><em>&lt;b&gt;"))
    }

    @Test func aDeviceAnnouncedOnTheBrokerCannotInjectMarkup() {
        let hostile = DiscoveredDevice(
            suggestedId: "plug-1", driver: "tasmota", name: #""><img src=x onerror=alert(1)>"#,
            settingsJSON: #"{"topic":"</script><script>alert(2)</script>"}"#, hardwareId: "<i>")
        let card = DiscoveredPage.card(hostile).text
        #expect(!card.contains("<img") && !card.contains("<script>") && !card.contains("<i>"))
        #expect(card.contains("&lt;img src=x onerror=alert(1)&gt;"))
    }

    @Test func linksEncodeTheirValues() {
        #expect(
            URLText.query([("stream", "device/a b"), ("type", ""), ("actor", "http:x&y")]) == "?stream=device%2Fa%20b&actor=http%3Ax%26y")
        #expect(URLText.query([("stream", nil)]) == "")
    }

    @Test func chartScalesAreRound() {
        #expect(SVGChart.niceCeiling(1793.5) == 2000)
        #expect(SVGChart.niceCeiling(0.077) == 0.1)
        #expect(SVGChart.niceCeiling(38.6) == 50)
        #expect(SVGChart.niceCeiling(0) == 1)
        #expect(SVGChart.f(-12.34) == "-12.3")
    }

    @Test func timesAreShownAndReadInTheHouseholdsZone() throws {
        let berlin = LocalTime(zone: try #require(TimeZone(identifier: "Europe/Berlin")))
        // Winter: UTC+1; summer: UTC+2; a date alone is its local midnight.
        #expect(berlin.micros(picked: "2030-01-15T18:00") == ISO8601.parse("2030-01-15T17:00:00Z"))
        #expect(berlin.micros(picked: "2030-07-15T18:00:30") == ISO8601.parse("2030-07-15T16:00:30Z"))
        #expect(berlin.micros(picked: "2030-07-15") == ISO8601.parse("2030-07-14T22:00:00Z"))
        #expect(berlin.micros(picked: "2030-02-30T10:00") == nil)
        #expect(berlin.micros(picked: "2030-01-15T25:00") == nil)
        #expect(berlin.micros(picked: "yesterday") == nil)
        let summer = try #require(ISO8601.parse("2030-07-15T16:00:00Z"))
        #expect(berlin.text(summer) == "2030-07-15 18:00:00")
        #expect(berlin.pickerValue(summer) == "2030-07-15T18:00")
        #expect(berlin.text(nil) == "–")
        #expect(Period.text(minutes: 120) == "2 hours" && Period.text(minutes: 1) == "1 minute" && Period.text(minutes: 90) == "90 minutes")
        #expect(Period.text(minutes: 1440) == "1 day" && Period.text(minutes: 10_080) == "1 week")
    }

    @Test func theValueAxisIsFittedToVitalsAndKeepsZeroForPower() {
        let (low, high) = SVGChart.axisRange(min: 38.2, max: 39.1, includeZero: false)
        #expect(low < 38.2 && low >= 37, "low \(low)")
        #expect(high > 39.1 && high <= 40.5, "high \(high)")
        let one = SVGChart.axisRange(min: 92, max: 92, includeZero: false)
        #expect(one.0 < 92 && one.1 > 92 && one.1 - one.0 <= 20, "\(one)")
        #expect(SVGChart.axisRange(min: 1808, max: 1808, includeZero: true) == (0, 2000))
    }

    @Test func thePowerSummaryIsWeightedByTheTimeEachValueHeld() {
        let minute: Int64 = 60_000_000
        // 0 W held 1 minute, 1800 W held 3 minutes (two buckets, one carried in with no reading),
        // and a reading just taken at the clock (nothing held yet): (0 + 3 x 1800) / 4 = 1350 W.
        let buckets = [
            HistoryBucket(start: 0, count: 1, min: 0, max: 0, sum: 0, last: 0, weighted: 0, covered: minute),
            HistoryBucket(
                start: minute, count: 1, min: 1800, max: 1800, sum: 1800, last: 1800,
                weighted: 1800 * Double(minute), covered: minute),
            HistoryBucket(
                start: 2 * minute, count: 0, min: 1800, max: 1800, sum: 0, last: 1800,
                weighted: 2 * 1800 * Double(minute), covered: 2 * minute),
            HistoryBucket(start: 4 * minute, count: 1, min: 5, max: 5, sum: 5, last: 5, weighted: 0, covered: 0)
        ]
        let charts = DeviceCharts(power: [], minutes: buckets, energyDays: [], from: 0, to: 5 * minute)
        #expect(charts.meanPower == 1350)
        #expect(DeviceCharts(power: [], minutes: [], energyDays: [], from: 0, to: minute).meanPower == nil)
    }

    @Test func aHeldValueIsDrawnAsASteps() throws {
        let minute: Int64 = 60_000_000
        let points = [SVGChart.Band(start: 0, min: 0, mean: 0, max: 0), SVGChart.Band(start: minute, min: 1800, mean: 1800, max: 1800)]
        let html = SVGChart.band(points, from: 0, to: 60 * minute, unit: "W", label: "power", style: SVGChart.Style(steps: true)).text
        let mean = try #require(html.firstMatch(of: /class="mean" points="([^"]*)"/)).1
        let ys = mean.split(separator: " ").map { $0.split(separator: ",")[1] }
        // 0 W held from :00 to :01, then 1800 W held to the end of the range.
        #expect(ys.count == 4)
        #expect(ys[0] == ys[1] && ys[2] == ys[3] && ys[1] != ys[2])
        let xs = mean.split(separator: " ").map { $0.split(separator: ",")[0] }
        #expect(xs[1] == xs[2], "the step rises where the second reading starts")
        #expect(xs.last == Substring(SVGChart.f(SVGChart.width - SVGChart.right)), "the last value holds to the range's end")
    }
}
