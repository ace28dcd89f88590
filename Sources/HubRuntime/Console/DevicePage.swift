import HubDomain

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

    let snapshot: Snapshot
    let charts: DeviceCharts
    /// The device's recent events, or why they could not be read.
    let events: Result<LogScan.Page, LogUnreadable>
    let now: Int64

    var page: ConsolePage {
        let d = snapshot.record
        let removed: HTML = d.removed ? "<p class=\"error-box\">This device was removed \(ConsoleFormat.time(d.removedAt)).</p>" : .empty
        return ConsolePage(title: d.name, section: .devices, body: """
        \(removed)
        <section class="card" data-device="\(d.id)" data-state="\(d.switchState.rawValue)">
        <h3>State <span class="state" data-field="state">\(ConsoleFormat.switchText(d.switchState))</span></h3>
        \(DevicesPage.fields(d, lifetimeWh: snapshot.lifetimeWh))
        \(DevicesPage.switchButtons(d.id))
        </section>
        \(charts.html)
        \(activations)
        <h2>Recent events</h2>
        \(recentEvents)
        """)
    }

    var recentEvents: HTML {
        switch events {
        case .failure(let unreadable):
            return "<p class=\"error-box\">\(unreadable.message)</p>"
        case .success(let page):
            let older: HTML = page.nextBefore.map {
                "<p><a href=\"/audit\(URLText.query([("stream", "device/" + snapshot.record.id), ("before", String($0))]))\">Older events in the audit timeline</a></p>"
            } ?? .empty
            return "\(EventTable(entries: page.entries, showStream: false).html)\n\(older)"
        }
    }

    var activations: HTML {
        let id = snapshot.record.id
        let list = snapshot.activations
        let conflicts = ScheduleMath.conflicts(in: list, from: now / 1_000_000)
        let conflictNote: HTML = conflicts.isEmpty ? .empty : """
            <div class="error-box">\(conflicts.map { c -> HTML in "<div>“\(c.first)” and “\(c.second)” overlap from \(ConsoleFormat.time(c.at * 1_000_000))</div>" })</div>
            """
        let divergence: HTML = snapshot.divergence.map { d -> HTML in
            "<div class=\"error-box\">The device holds other activations than the log (\(d.found.map(\.name).joined(separator: ", "))); not reconciled.</div>"
        } ?? .empty
        let rows = list.map { a -> HTML in
            let inConflict = conflicts.contains { $0.first == a.name || $0.second == a.name }
            let fill = ConsoleFormat.command([("op", "update"), ("name", .string(a.name)), ("start", .string(ISO8601.format(seconds: a.start))),
                                              ("length", .number(Double(a.lengthMinutes))), ("period", .number(Double(a.periodMinutes)))])
            let remove = ConsoleFormat.command([("command", "set_activation"), ("device", .string(id)), ("op", "remove"), ("name", .string(a.name))])
            return """
            <tr class="\(inConflict ? "pending" : "")"><td>\(a.name)\(inConflict ? " ⚠" : "")</td><td>\(ConsoleFormat.time(a.start * 1_000_000))</td><td>\(Int(a.lengthMinutes)) min</td>\
            <td>\(Self.repeatText(a))</td><td><div class="row"><button data-fill="\(fill)" data-target="activation-form">Edit</button>\
            <button class="danger" data-confirm="Delete this activation?" data-after="reload" data-command="\(remove)">Delete</button></div></td></tr>
            """
        }
        let table: HTML = list.isEmpty ? "<p class=\"muted\">No activations.</p>" : """
            <div class="scroll"><table><thead><tr><th>Name</th><th>Start (UTC)</th><th>Length</th><th>Repeats</th><th></th></tr></thead>
            <tbody>\(rows)</tbody></table></div>
            """
        return """
        <h2>Activations</h2>
        \(conflictNote)\(divergence)\(table)
        <h3>Add or change an activation</h3>
        <form id="activation-form" class="inline" data-after="reload" data-command="\(ConsoleFormat.command([("command", "set_activation"), ("device", .string(id))]))">
        <label>Action<select name="op"><option value="add">add</option><option value="update">update</option></select></label>
        <label>Name<input name="name" required maxlength="20"></label>
        <label>Start (ISO-8601 UTC)<input name="start" placeholder="\(ISO8601.format(seconds: (now / 1_000_000 / 60 + 60) * 60))"></label>
        <label>Length (minutes)<input name="length" data-type="number" inputmode="numeric" size="6"></label>
        <label>Period (minutes, 0 once)<input name="period" data-type="number" inputmode="numeric" size="6"></label>
        <button type="submit" class="primary">Save</button>
        </form>
        """
    }

    static func repeatText(_ a: Activation) -> String {
        if let daily = a.daily { return "daily " + daily.jsonValue.serialized() }
        if a.periodMinutes == 0 { return "once" }
        return "every \(a.periodMinutes) min"
    }
}

/// A list of logged events: sequence, time, stream, type, actor, command id and the event's fields
/// (its cause among them).
struct EventTable {
    let entries: [LogScan.Entry]
    var showStream = true

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

    var html: HTML {
        guard !entries.isEmpty else { return "<p class=\"muted\">No events.</p>" }
        let rows = entries.map { e -> HTML in
            let stream: HTML = showStream ? "<td><a href=\"/audit\(URLText.query([("stream", e.stream)]))\">\(e.stream)</a></td>" : .empty
            return """
            <tr><td>\(e.sequence)</td><td>\(ConsoleFormat.time(e.timestamp))</td>\(stream)<td>\(e.type)</td><td>\(e.actor)</td>\
            <td class="mono">\(e.commandId ?? "")</td><td class="mono">\(e.data.map(Self.summary) ?? "(a type this hub cannot read)")</td></tr>
            """
        }
        return """
        <div class="scroll"><table><thead><tr><th>Seq</th><th>Time (UTC)</th>\(showStream ? "<th>Stream</th>" : HTML.empty)<th>Type</th><th>Actor</th>\
        <th>Command id</th><th>Data (cause)</th></tr></thead><tbody>\(rows)</tbody></table></div>
        """
    }
}
