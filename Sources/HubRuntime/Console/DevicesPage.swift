import HubDomain

/// `GET /`: every device with its switch, state, mode, pending command, availability and its
/// reason, power and energy; the groups and scenes with their buttons; all off. Each device's
/// fields carry `data-field` names the live updates fill in place.
struct DevicesPage {
    let snapshot: DevicesSnapshot

    var page: ConsolePage {
        ConsolePage(title: "Devices", section: .devices, live: ["device/", "group/", "scene/"], body: """
        <div class="row"><button class="danger" data-action="all-off" data-confirm="Switch every device off?" \
        data-command="\(ConsoleFormat.command([("command", "apply_scene"), ("id", "all-off")]))">All off</button>
        <span class="muted">\(snapshot.devices.count) devices</span></div>
        <h2>Devices</h2>
        \(snapshot.devices.isEmpty ? "<p class=\"muted\">No devices yet: add them in the configuration file, or adopt one under <a href=\"/discovered\">Discovered</a>.</p>" : .empty)
        <div class="grid">\(snapshot.devices.map(Self.card))</div>
        <h2>Groups</h2>
        \(groups)
        <h2>Scenes</h2>
        \(scenes)
        """)
    }

    static func card(_ row: DevicesSnapshot.Row) -> HTML {
        let d = row.record
        return """
        <section class="card" data-device="\(d.id)" data-state="\(d.switchState.rawValue)">
        <h3><a href="/devices/\(URLText.component(d.id))">\(d.name)</a><span class="state" data-field="state">\(ConsoleFormat.switchText(d.switchState))</span></h3>
        \(fields(d, lifetimeWh: row.lifetimeWh))
        \(switchButtons(d.id))
        </section>
        """
    }

    /// The device's live fields (also on the device's own page); voltage and current for a device
    /// that has reported them.
    static func fields(_ d: DeviceRecord, lifetimeWh: Double?) -> HTML {
        let availability = StatePayloads.availability(d)
        var meter = ""
        if let v = d.lastReadings.voltage {
            meter += "<dt>Voltage</dt><dd data-field=\"voltage\">\(ConsoleFormat.number(v.value, decimals: 1)) V</dd>"
        }
        if let a = d.lastReadings.current {
            meter += "<dt>Current</dt><dd data-field=\"current\">\(ConsoleFormat.number(a.value, decimals: 3)) A</dd>"
        }
        return """
        <dl>
        <dt>Mode</dt><dd data-field="mode">\(d.mode.name)</dd>
        <dt>Pending</dt><dd class="pending" data-field="pending">\(ConsoleFormat.pending(d.pending))</dd>
        <dt>Availability</dt><dd><span data-field="availability" class="\(availability == "offline" ? "offline" : "")">\(availability)</span> <span class="muted" data-field="reason">\(d.availabilityReason)</span></dd>
        <dt>Power</dt><dd data-field="power">\(ConsoleFormat.power(d.lastReadings.power))</dd>
        <dt>Energy</dt><dd data-field="energy">\(ConsoleFormat.kWh(lifetimeWh))</dd>\(meter)
        <dt>Driver</dt><dd class="muted">\(d.driver) · <code>\(d.id)</code></dd>
        </dl>
        <p class="offline" data-field="failure">\(ConsoleFormat.failure(d.lastFailure))</p>
        """
    }

    static func switchButtons(_ id: String) -> HTML {
        func button(_ action: String, _ state: String, _ label: String, _ kind: String = "") -> HTML {
            "<button class=\"\(kind)\" data-action=\"\(action)\" data-command=\"\(ConsoleFormat.command([("command", "switch"), ("id", .string(id)), ("state", .string(state))]))\">\(label)</button>"
        }
        return "<div class=\"row\">\(button("toggle", "TOGGLE", "Switch", "primary"))\(button("on", "ON", "On"))\(button("off", "OFF", "Off"))</div>"
    }

    var groups: HTML {
        guard !snapshot.groups.isEmpty else { return "<p class=\"muted\">No groups defined.</p>" }
        return "<div class=\"grid\">\(snapshot.groups.map(Self.group))</div>"
    }

    static func group(_ g: GroupRecord) -> HTML {
        let members = g.members.joined(separator: ", ")
        return "<section class=\"card\" data-group=\"\(g.id)\"><h3>\(g.name.isEmpty ? g.id : g.name)</h3><p class=\"muted\">\(members)</p>\(groupButtons(g.id))</section>"
    }

    static func groupButtons(_ id: String) -> HTML {
        let buttons = [("ON", "On"), ("OFF", "Off"), ("TOGGLE", "Switch")].map { state, label -> HTML in
            "<button data-command=\"\(ConsoleFormat.command([("command", "switch_group"), ("id", .string(id)), ("state", .string(state))]))\">\(label)</button>"
        }
        return "<div class=\"row\">\(buttons)</div>"
    }

    var scenes: HTML {
        guard !snapshot.scenes.isEmpty else { return "<p class=\"muted\">No scenes defined.</p>" }
        return "<div class=\"grid\">\(snapshot.scenes.map(Self.scene))</div>"
    }

    static func scene(_ s: SceneRecord) -> HTML {
        """
        <section class="card" data-scene="\(s.id)"><h3>\(s.name.isEmpty ? s.id : s.name)</h3>
        <p class="muted">\(s.targets.map { "\($0.device) \($0.state.name)" }.joined(separator: ", "))</p>
        <div class="row"><button class="primary" data-command="\(ConsoleFormat.command([("command", "apply_scene"), ("id", .string(s.id))]))">Apply</button></div></section>
        """
    }
}
