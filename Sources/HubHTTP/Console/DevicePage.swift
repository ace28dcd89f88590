import HubDomain
import HubEngine
import HubSchedule

/// `GET /devices/{id}`: the device's live fields and switch, its power and energy charts, its
/// activations (add, edit, delete; overlaps shown) and its recent events with actor and cause.
struct DevicePage {
    struct Snapshot: Sendable {
        var record: DeviceRecord
        var lifetimeWh: Double?
        var activations: [Activation]
        var divergence: ActivationsDiverged?

        init?(_ state: HubState, id: String) {
            guard let record = state.devices[id] else { return nil }
            self.record = record
            lifetimeWh = state.energy[id]?.lifetimeWh
            activations = state.activations[id]
            divergence = state.activations.unresolved[id]
        }
    }

    /// Events the page shows (newest first), and keeps as the live updates add new ones.
    static let recentEvents = 30

    /// Whether the page's "Recent events" lists an event of this type: all but readings (the
    /// charts show those).
    static func lists(type: String) -> Bool { type != EventType.readingRecorded.rawValue }

    let snapshot: Snapshot
    let charts: DeviceCharts
    /// The device's recent events, or why they could not be read.
    let events: Result<LogScan.Page, LogUnreadable>
    let now: Int64

    var page: ConsolePage {
        let d = snapshot.record
        let removed: HTML = d.removed ? "<p class=\"error-box\">This device was removed \(ConsoleFormat.time(d.removedAt)).</p>" : .empty
        return ConsolePage(
            title: d.name, section: .devices,
            body: """
                \(removed)
                <section class="card" data-device="\(d.id)" data-state="\(d.switchState.rawValue)">
                <h3>State <span class="state" data-field="state">\(ConsoleFormat.switchText(d.switchState))</span></h3>
                \(lastRequest)
                \(DevicesPage.fields(d, lifetimeWh: snapshot.lifetimeWh))
                \(DevicesPage.switchButtons(d.id))
                </section>
                \(d.removed ? HTML.empty : manage)
                \(charts.html)
                \(activations)
                <h2>Recent events</h2>
                \(recentEvents)
                """)
    }

    /// Who asked for the device's latest switch among its recent events, and why when that was
    /// declared: "Switched on by mqtt:alice, automation.porch_lights, 2026-11-27 18:00:02". The
    /// element is there (empty, not shown) when none is among them: the live updates fill it
    /// (`event: request`) when a switch is asked for while the page is open.
    var lastRequest: HTML {
        guard case .success(let page) = events,
            let e = page.entries.first(where: { $0.type == EventType.switchRequested.rawValue }),
            case .string(let state)? = e.data?["state"]
        else { return "<p class=\"muted\" data-field=\"last-request\"></p>" }
        let line = SwitchRequestLine(state: state, actor: Attribution(actor: e.actor, cause: e.cause).stored, timestamp: e.timestamp)
        return "<p class=\"muted\" data-field=\"last-request\">\(line.text)</p>"
    }

    /// Rename the device, or remove it (its history stays in the log).
    var manage: HTML {
        let d = snapshot.record
        let rename = ConsoleFormat.command([("command", "rename_device"), ("id", .string(d.id))])
        let remove = ConsoleFormat.command([("command", "remove_device"), ("id", .string(d.id))])
        return """
            <section class="card row">
            <form id="rename-form" class="inline" data-after="reload" data-command="\(rename)">
            <label>Name<input name="name" required maxlength="64" size="32" value="\(d.name)"></label>
            <button type="submit">Rename</button>
            </form>
            <button type="button" class="danger" data-action="remove" data-after="reload" \
            data-confirm="Remove “\(d.name)”? Its history stays in the log." data-command="\(remove)">Remove device</button></section>
            """
    }

    var recentEvents: HTML {
        switch events {
        case .failure(let unreadable):
            return "<p class=\"error-box\">\(unreadable.message)</p>"
        case .success(let page):
            let older: HTML =
                page.nextBefore.map {
                    "<p><a href=\"/audit\(URLText.query([("stream", "device/" + snapshot.record.id), ("before", String($0))]))\">Older events in the audit timeline</a></p>"
                } ?? .empty
            return "\(EventTable(entries: page.entries, showStream: false, liveFor: snapshot.record.id).html)\n\(older)"
        }
    }

    var activations: HTML {
        let id = snapshot.record.id
        let list = snapshot.activations
        let conflicts = ScheduleMath.conflicts(in: list, from: now / 1_000_000)
        let conflictNote: HTML =
            conflicts.isEmpty
            ? .empty
            : """
            <div class="error-box">\(conflicts.map { c -> HTML in "<div>“\(c.first)” and “\(c.second)” overlap from \(ConsoleFormat.time(c.at * 1_000_000))</div>" })</div>
            """
        let divergence: HTML =
            snapshot.divergence.map { d -> HTML in
                "<div class=\"error-box\">The device holds other activations than the log (\(d.found.map(\.name).joined(separator: ", "))); not reconciled.</div>"
            } ?? .empty
        let rows = list.map { a -> HTML in
            let inConflict = conflicts.contains { $0.first == a.name || $0.second == a.name }
            let remove = ConsoleFormat.command([
                ("command", "set_activation"), ("device", .string(id)), ("op", "remove"), ("name", .string(a.name))
            ])
            return """
                <tr class="\(inConflict ? "pending" : "")" data-activation="\(a.name)"><td>\(a.name)\(inConflict ? " ⚠" : "")</td>\
                <td>\(LocalTime.current.minuteText(a.start * 1_000_000))</td><td>\(Period.text(minutes: Int(a.lengthMinutes)))</td>\
                <td>\(Self.repeatText(a))</td><td><div class="row"><button type="button" data-action="edit" data-fill="\(Self.fill(a))" data-target="activation-form">Edit</button>\
                <button class="danger" data-action="delete" data-confirm="Delete the activation “\(a.name)”?" data-after="reload" data-command="\(remove)">Delete</button></div></td></tr>
                """
        }
        let table: HTML =
            list.isEmpty
            ? "<p class=\"muted\">No activations.</p>"
            : """
            <div class="scroll"><table><thead><tr><th>Name</th><th>Starts</th><th>Length</th><th>Repeats</th><th></th></tr></thead>
            <tbody>\(rows)</tbody></table></div>
            """
        return """
            <h2>Activations</h2>
            \(conflictNote)\(divergence)\(table)
            <h3>Add or change an activation</h3>
            \(Self.activationForm(device: id, now: now))
            """
    }

    /// The activation form: a name, a start picked in the household's time, a length, and how it
    /// repeats (once, every N minutes, or daily at a local time on chosen weekdays).
    static func activationForm(device id: String, now: Int64) -> HTML {
        let zone = LocalTime.current.name
        let nextHour = (now / 3_600_000_000 + 1) * 3_600_000_000
        let days = DailyRepeat.dayNames.map { day -> HTML in
            "<label class=\"check\"><input type=\"checkbox\" name=\"repeat.days\" value=\"\(day)\">\(day)</label>"
        }
        return """
            <form id="activation-form" class="stack card" data-after="reload" data-command="\(ConsoleFormat.command([("command", "set_activation"), ("device", .string(id))]))">
            <label>Action<select name="op"><option value="add">add a new one</option><option value="update">change the one named</option></select></label>
            <label>Name<input name="name" required maxlength="20"></label>
            <label>Starts (\(zone))<input name="start" type="datetime-local" data-type="local" value="\(LocalTime.current.pickerValue(nextHour))"></label>
            <label>Length (minutes)<input name="length" type="number" min="1" max="65535" data-type="number" inputmode="numeric"></label>
            <label>Repeats<select name="repeats" data-modes><option value="once">once</option><option value="every">every few minutes</option>\
            <option value="daily">daily at a time</option></select></label>
            <fieldset data-mode="once" class="plain"><input type="hidden" name="period" value="0" data-type="number"></fieldset>
            <fieldset data-mode="every" class="plain"><label>Every (minutes)<input name="period" type="number" min="1" max="65535" data-type="number" inputmode="numeric"></label></fieldset>
            <fieldset data-mode="daily" class="plain wide"><label>At (\(zone))<input name="repeat.at" type="time" required></label>\
            <div class="row"><span class="muted">On (none ticked: every day)</span>\(days)</div>\
            <input type="hidden" name="repeat.time_zone" value="\(zone)"></fieldset>
            <div class="wide"><button type="submit" class="primary">Save</button></div>
            </form>
            """
    }

    /// What "Edit" puts in the form for `a`.
    static func fill(_ a: Activation) -> String {
        var fields: [(String, JSONValue)] = [
            ("op", "update"), ("name", .string(a.name)),
            ("start", .string(LocalTime.current.pickerValue(a.start * 1_000_000))),
            ("length", .number(Double(a.lengthMinutes)))
        ]
        if let daily = a.daily {
            fields += [
                ("repeats", "daily"), ("repeat.at", .string(daily.timeText)),
                ("repeat.days", .array(daily.weekdays == DailyRepeat.everyDay ? [] : daily.dayList.map { .string($0) }))
            ]
        } else if a.periodMinutes > 0 {
            fields += [("repeats", "every"), ("period", .number(Double(a.periodMinutes)))]
        } else {
            fields += [("repeats", "once")]
        }
        return ConsoleFormat.command(fields)
    }

    /// `once`, `every 2 hours`, `daily at 18:00 (Europe/Lisbon)`, `daily at 07:30 (Europe/Lisbon) on mon, fri`.
    static func repeatText(_ a: Activation) -> String {
        if let daily = a.daily {
            let days = daily.weekdays == DailyRepeat.everyDay ? "" : " on " + daily.dayList.joined(separator: ", ")
            return "daily at \(daily.timeText) (\(daily.timeZone))" + days
        }
        if a.periodMinutes == 0 { return "once" }
        return "every " + Period.text(minutes: Int(a.periodMinutes))
    }
}

/// A list of logged events: sequence, time, stream, type, actor, command id and the event's fields
/// (its cause among them).
struct EventTable {
    let entries: [LogScan.Entry]
    var showStream = true
    /// The device whose events the live updates add at the top (`tbody data-events`), newest
    /// first, keeping ``DevicePage/recentEvents`` rows; nil: a table that does not follow the log.
    var liveFor: String? = nil

    /// An event's fields as `name: value` pairs, the empty ones left out.
    static func summary(_ data: JSONValue) -> String {
        guard case .object(let pairs) = data else { return data.serialized() }
        return pairs.compactMap { key, value -> String? in
            switch value {
            case .null: return nil
            case .string(let s): return "\(key): \(s)"
            default: return "\(key): \(value.serialized())"
            }
        }.joined(separator: " · ")
    }

    /// The actor, and under it the declared cause when there is one.
    static func actor(_ e: LogScan.Entry) -> HTML {
        guard let cause = e.cause else { return "\(e.actor)" }
        return "\(e.actor)<br><span class=\"muted mono\" data-field=\"cause\">\(cause)</span>"
    }

    /// One event's row.
    static func row(_ e: LogScan.Entry, showStream: Bool) -> HTML {
        let stream: HTML = showStream ? "<td><a href=\"/audit\(URLText.query([("stream", e.stream)]))\">\(e.stream)</a></td>" : .empty
        return """
            <tr data-seq="\(e.sequence)"><td>\(e.sequence)</td><td>\(ConsoleFormat.time(e.timestamp))</td>\(stream)<td>\(e.type)</td><td>\(Self.actor(e))</td>\
            <td class="mono">\(e.commandId ?? "")</td><td class="mono">\(e.data.map(Self.summary) ?? "(a type this hub cannot read)")</td></tr>
            """
    }

    var html: HTML {
        let none: HTML = "<p class=\"muted\" data-events-none>No events.</p>"
        guard !entries.isEmpty || liveFor != nil else { return none }
        let rows = entries.map { Self.row($0, showStream: showStream) }
        let live: HTML = liveFor.map { " data-events=\"\($0)\" data-keep=\"\(DevicePage.recentEvents)\"" } ?? .empty
        return """
            \(entries.isEmpty ? none : HTML.empty)<div class="scroll"\(entries.isEmpty ? " hidden" : "")><table><thead><tr><th>Seq</th><th>Time</th>\(showStream ? "<th>Stream</th>" : HTML.empty)<th>Type</th><th>Actor</th>\
            <th>Command id</th><th>Data (cause)</th></tr></thead><tbody\(live)>\(rows)</tbody></table></div>
            """
    }
}
