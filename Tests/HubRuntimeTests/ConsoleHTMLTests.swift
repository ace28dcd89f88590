import DriverAPI
import HubDomain
import Testing
@testable import HubRuntime

/// The console's HTML builder: interpolated text is escaped in text and in attributes, markup
/// composed from `HTML` values is kept.
struct ConsoleHTMLTests {
    @Test func interpolatedTextIsEscapedAndMarkupKept() {
        let name = #"<b>"Tom" & 'Jerry'</b>"#
        let cell: HTML = "<td title=\"\(name)\">\(name)</td>"
        #expect(cell.text == "<td title=\"&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;\">&lt;b&gt;&quot;Tom&quot; &amp; &#39;Jerry&#39;&lt;/b&gt;</td>")
        let inner: HTML = "<em>\(name)</em>"
        let outer: HTML = "<p>\(inner)</p>"
        #expect(outer.text.hasPrefix("<p><em>&lt;b&gt;"))
    }

    @Test func aDeviceAnnouncedOnTheBrokerCannotInjectMarkup() {
        let hostile = DiscoveredDevice(suggestedId: "plug-1", driver: "tasmota", name: #""><img src=x onerror=alert(1)>"#,
                                       settingsJSON: #"{"topic":"</script><script>alert(2)</script>"}"#, hardwareId: "<i>")
        let card = DiscoveredPage.card(hostile).text
        #expect(!card.contains("<img") && !card.contains("<script>") && !card.contains("<i>"))
        #expect(card.contains("&lt;img src=x onerror=alert(1)&gt;"))
    }

    @Test func linksEncodeTheirValues() {
        #expect(URLText.query([("stream", "device/a b"), ("type", ""), ("actor", "http:x&y")]) == "?stream=device%2Fa%20b&actor=http%3Ax%26y")
        #expect(URLText.query([("stream", nil)]) == "")
    }

    @Test func chartScalesAreRound() {
        #expect(SVGChart.niceCeiling(1793.5) == 2000)
        #expect(SVGChart.niceCeiling(0.077) == 0.1)
        #expect(SVGChart.niceCeiling(38.6) == 50)
        #expect(SVGChart.niceCeiling(0) == 1)
        #expect(SVGChart.f(-12.34) == "-12.3")
    }

    @Test func minuteBucketsFoldIntoQuarterHours() {
        let from: Int64 = 0, minute: Int64 = 60_000_000
        let buckets = [HistoryBucket(start: 0, count: 1, min: 10, max: 10, sum: 10, last: 10),
                       HistoryBucket(start: 14 * minute, count: 3, min: 5, max: 40, sum: 60, last: 5),
                       HistoryBucket(start: 15 * minute, count: 1, min: 7, max: 7, sum: 7, last: 7)]
        let bands = DeviceCharts.fold(buckets, from: from)
        #expect(bands.count == 2)
        #expect(bands[0].min == 5 && bands[0].max == 40 && bands[0].mean == 17.5)
        #expect(bands[1].mean == 7)
    }
}
