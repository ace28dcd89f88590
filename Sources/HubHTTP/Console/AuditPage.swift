import HubDomain
import HubEngine
import HubLog

/// `GET /audit`: the event timeline filtered by stream, type, actor and time (newest first, a page
/// at a time); the head of the hash chain, and on request the whole chain verified; and the read
/// models as of a chosen sequence or time, as `hub replay --until` prints them.
struct AuditPage {
    /// The query parameters, as given.
    struct Filter: Sendable {
        var stream = "", type = "", actor = "", from = "", to = "", before = "", asOf = ""
        var verify = false

        /// Why a parameter cannot be used, naming it; nil when all are fine.
        func problem() -> String? {
            if !from.isEmpty, Self.time(from) == nil { return "from: \"\(from)\" is not a time (2026-11-22T18:00) or date (2026-11-22)" }
            if !to.isEmpty, Self.time(to) == nil { return "to: \"\(to)\" is not a time (2026-11-22T18:00) or date (2026-11-22)" }
            if !before.isEmpty, UInt64(before) == nil { return "before: \"\(before)\" is not a sequence number" }
            if !asOf.isEmpty, asOfBound == nil {
                return "as of: \"\(asOf)\" is neither a sequence number nor a time (2026-11-22T18:00)"
            }
            return nil
        }

        /// The replay's bound: a sequence number, an ISO-8601 time with its offset, or a time as a
        /// person types it, in the household's zone (``LocalTime/current``).
        var asOfBound: LogBound? {
            if let bound = try? LogBound(parsing: asOf) { return bound }
            return LocalTime.current.micros(picked: asOf).flatMap { try? LogBound(parsing: ISO8601.format(micros: $0)) }
        }

        /// An ISO-8601 time with its offset, or a picker's local time or a date in the household's
        /// zone (``LocalTime/current``).
        static func time(_ text: String) -> Int64? {
            ISO8601.parse(text) ?? LocalTime.current.micros(picked: text)
        }

        /// Whether a record passes the filter (`stream` ending in `/` is a prefix: `device/`).
        func matcher() -> @Sendable (RecordView) -> Bool {
            let from = Self.time(self.from), to = Self.time(self.to)
            let stream = self.stream, type = self.type, actor = self.actor
            let typeBytes = Array(type.utf8)
            return { r in
                if !type.isEmpty, !r.typeEquals(typeBytes) { return false }
                if !stream.isEmpty {
                    let s = r.stream
                    if stream.hasSuffix("/") ? !s.hasPrefix(stream) : s != stream { return false }
                }
                if !actor.isEmpty, Attribution(stored: r.actor).actor != actor { return false }
                if let from, r.timestamp < from { return false }
                if let to, r.timestamp > to { return false }
                return true
            }
        }

        var queryPairs: [(String, String?)] {
            [("stream", stream), ("type", type), ("actor", actor), ("from", from), ("to", to)]
        }
    }

    /// What verifying the chain found.
    enum Verdict: Sendable {
        case sound(records: UInt64, headHash: String, note: String?)
        case broken(String)
    }

    let filter: Filter
    let problem: String?
    let timeline: LogScan.Page?
    let lastSequence: UInt64
    let headHash: String?
    let verdict: Verdict?
    let actors: [String]
    let streams: [String]
    /// `hub replay --until`'s tables, when asked for.
    let asOf: String?

    var page: ConsolePage {
        ConsolePage(
            title: "Audit", section: .audit,
            body: """
                \(problem.map { "<p class=\"error-box\">\($0)</p>" as HTML } ?? .empty)
                <h2>The log</h2>
                \(chain)
                <h2>Timeline</h2>
                \(form)
                \(timelineHTML)
                <h2 id="as-of">Read models as of a point</h2>
                <form class="inline" method="get" action="/audit#as-of">
                <label>Sequence, or a time (\(LocalTime.current.name))<input name="asof" value="\(filter.asOf)" placeholder="\(lastSequence) or 2026-11-22T18:00"></label>
                <button type="submit">Replay</button></form>
                \(asOf.map { "<div class=\"scroll\"><pre class=\"mono\">\($0)</pre></div>" as HTML } ?? .empty)
                """)
    }

    var chain: HTML {
        let verdictHTML: HTML
        switch verdict {
        case .sound(let records, let hash, let note)?:
            verdictHTML =
                "<p class=\"ok-box\">Log sound: all \(records) events checked, every frame and the whole hash chain. Head hash <code>\(hash)</code>\(note.map { " (\($0))" } ?? "")</p>"
        case .broken(let reason)?:
            verdictHTML = "<p class=\"error-box\">The log does not verify: \(reason)</p>"
        case nil:
            verdictHTML = "<p><a class=\"button\" href=\"/audit?verify=1\">Verify the whole chain now</a></p>"
        }
        return """
            <p>\(lastSequence) events; head of the hash chain: <code>\(headHash ?? "–")</code>. Keep it: a later verify that does not \
            reach the same hash means the log was cut or rewritten.</p>
            \(verdictHTML)
            """
    }

    var form: HTML {
        let types =
            ["<option value=\"\">any</option>" as HTML]
            + EventType.allCases.map { t -> HTML in
                "<option\(t.rawValue == filter.type ? " selected" : "")>\(t.rawValue)</option>"
            }
        return """
            <form class="inline" method="get" action="/audit">
            <label>Stream<input name="stream" value="\(filter.stream)" list="streams" placeholder="device/lamp or device/"></label>
            <datalist id="streams">\(streams.map { "<option value=\"\($0)\">" as HTML })</datalist>
            <label>Type<select name="type">\(types)</select></label>
            <label>Actor<input name="actor" value="\(filter.actor)" list="actors"></label>
            <datalist id="actors">\(actors.map { "<option value=\"\($0)\">" as HTML })</datalist>
            <label>From (\(LocalTime.current.name))<input name="from" type="datetime-local" value="\(filter.from)"></label>
            <label>To (\(LocalTime.current.name))<input name="to" type="datetime-local" value="\(filter.to)"></label>
            <button type="submit" class="primary">Filter</button> <a class="button" href="/audit">Clear</a>
            </form>
            """
    }

    var timelineHTML: HTML {
        guard let timeline else { return .empty }
        let older: HTML =
            timeline.nextBefore.map { next in
                "<a class=\"button\" href=\"/audit\(URLText.query(filter.queryPairs + [("before", String(next))]))\">Older</a>"
            } ?? "<span class=\"muted\">Start of the log reached.</span>"
        let newest: HTML =
            filter.before.isEmpty ? .empty : "<a class=\"button\" href=\"/audit\(URLText.query(filter.queryPairs))\">Newest</a>"
        return """
            <p class="muted">\(timeline.entries.count) events shown, newest first\(filter.before.isEmpty ? "" : ", from sequence \(filter.before) back") \
            (\(timeline.scanned) records read).</p>
            \(EventTable(entries: timeline.entries).html)
            <div class="row">\(newest)\(older)</div>
            """
    }
}
