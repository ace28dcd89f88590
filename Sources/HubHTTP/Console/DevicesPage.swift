import HubDomain
import HubEngine

/// `GET /`: every device with its switch, state, mode, pending command, availability and its
/// reason, power and energy; the groups and scenes with their buttons; all off. Each device's
/// fields carry `data-field` names the live updates fill in place.
struct DevicesPage {
    let snapshot: DevicesSnapshot
    /// The drivers this hub links (`virtual`, `powerplug`, `kasa`, ...), for the add form.
    var drivers: [String] = []

    var page: ConsolePage {
        ConsolePage(
            title: "Devices", section: .devices, live: ["device/", "group/", "scene/"],
            body: """
                <div class="row"><button class="danger" data-action="all-off" data-confirm="Switch every device off?" \
                data-command="\(ConsoleFormat.command([("command", "apply_scene"), ("id", "all-off")]))">All off</button>
                <span class="muted">\(snapshot.devices.count) devices</span></div>
                <h2>Devices</h2>
                \(snapshot.devices.isEmpty ? "<p class=\"muted\">No devices yet: add them in the configuration file, or adopt one under <a href=\"/discovered\">Discovered</a>.</p>" : .empty)
                <div class="grid">\(snapshot.devices.map(Self.card))</div>
                <h3>Add a device</h3>
                \(addForm)
                <h2>Groups</h2>
                \(groups)
                <h3>Define or change a group</h3>
                \(groupForm)
                <h2>Scenes</h2>
                \(scenes)
                <h3>Define or change a scene</h3>
                \(sceneForm)
                """)
    }

    /// `register_device`: an id, a name, a driver and the driver's settings (JSON).
    var addForm: HTML {
        let options = drivers.map { d -> HTML in "<option value=\"\(d)\"\(d == "virtual" ? " selected" : "")>\(d)</option>" }
        return """
            <form id="add-device-form" class="stack card" data-after="reload" data-command="\(ConsoleFormat.command([("command", "register_device")]))">
            <label>Id (letters, digits, - and _)<input name="id" required pattern="[A-Za-z0-9_-]{1,64}"></label>
            <label>Name<input name="name" required maxlength="64"></label>
            <label>Driver<select name="driver">\(options)</select></label>
            <label class="wide">Settings (JSON, as the driver's documentation says; empty for none)\
            <textarea name="config" data-type="json" placeholder="{&quot;host&quot;: &quot;192.168.1.40&quot;}"></textarea></label>
            <div class="wide"><button type="submit" class="primary">Add device</button></div>
            </form>
            """
    }

    /// `define_group`: an id, a name and the member devices (ticked); "Edit" on a group fills it.
    var groupForm: HTML {
        let boxes = snapshot.devices.map { row -> HTML in
            "<label class=\"check\"><input type=\"checkbox\" name=\"members\" value=\"\(row.record.id)\">\(row.record.name)</label>"
        }
        return """
            <form id="group-form" class="stack card" data-after="reload" data-command="\(ConsoleFormat.command([("command", "define_group")]))">
            <label>Id<input name="id" required pattern="[A-Za-z0-9_-]{1,64}"></label>
            <label>Name<input name="name" maxlength="64"></label>
            <div class="wide row"><span class="muted">Members</span>\(boxes)</div>
            <div class="wide"><button type="submit" class="primary">Save group</button></div>
            </form>
            """
    }

    /// `define_scene`: an id, a name and, for each device, on, off or not in the scene.
    var sceneForm: HTML {
        let rows = snapshot.devices.map { row -> HTML in
            """
            <label>\(row.record.name)<select name="states.\(row.record.id)"><option value="">not in the scene</option>\
            <option value="ON">on</option><option value="OFF">off</option></select></label>
            """
        }
        return """
            <form id="scene-form" class="stack card" data-after="reload" data-command="\(ConsoleFormat.command([("command", "define_scene")]))">
            <label>Id<input name="id" required pattern="[A-Za-z0-9_-]{1,64}"></label>
            <label>Name<input name="name" maxlength="64"></label>
            \(rows)
            <div class="wide"><button type="submit" class="primary">Save scene</button></div>
            </form>
            """
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
        let availability = StateJSON.availability(d)
        var meter: [HTML] = []
        if let v = d.lastReadings.voltage {
            meter.append("<dt>Voltage</dt><dd data-field=\"voltage\">\(ConsoleFormat.number(v.value, decimals: 1)) V</dd>")
        }
        if let a = d.lastReadings.current {
            meter.append("<dt>Current</dt><dd data-field=\"current\">\(ConsoleFormat.number(a.value, decimals: 3)) A</dd>")
        }
        return """
            <dl>
            <dt>Mode</dt><dd data-field="mode">\(d.mode.name)</dd>
            <dt>Pending</dt><dd class="pending" data-field="pending">\(ConsoleFormat.pending(d.pending))</dd>
            <dt>Availability</dt><dd><span data-field="availability" class="\(availability == "offline" ? "offline" : "")">\(availability)</span> <span class="muted" data-field="reason">\(d.availabilityReason)</span></dd>
            <dt>Power</dt><dd data-field="power">\(ConsoleFormat.power(d.lastReadings.power))</dd>
            <dt>Energy</dt><dd data-field="energy">\(ConsoleFormat.kWh(lifetimeWh))</dd>\(meter)
            <dt>Driver</dt><dd class="muted">\(d.driver) · <code>\(d.id)</code></dd>\(strip(d))
            </dl>
            <p class="offline" data-field="failure">\(ConsoleFormat.failure(d.lastFailure))</p>
            """
    }

    /// For an outlet: which strip it is on (`Outlet 2 of Desk strip`).
    static func strip(_ d: DeviceRecord) -> HTML {
        guard let o = d.outlet else { return "" }
        return "\n<dt>Strip</dt><dd data-field=\"strip\">Outlet \(o.number) of \(o.stripName) · <code>\(o.strip)</code></dd>"
    }

    static func switchButtons(_ id: String) -> HTML {
        func button(_ action: String, _ state: String, _ label: String, _ kind: String = "") -> HTML {
            "<button class=\"\(kind)\" data-action=\"\(action)\" data-command=\"\(ConsoleFormat.command([("command", "switch"), ("id", .string(id)), ("state", .string(state))]))\">\(label)</button>"
        }
        return
            "<div class=\"row\">\(button("toggle", "TOGGLE", "Switch", "primary"))\(button("on", "ON", "On"))\(button("off", "OFF", "Off"))</div>"
    }

    var groups: HTML {
        guard !snapshot.groups.isEmpty else { return "<p class=\"muted\">No groups defined.</p>" }
        return "<div class=\"grid\">\(snapshot.groups.map(Self.group))</div>"
    }

    static func group(_ g: GroupRecord) -> HTML {
        let members = g.members.joined(separator: ", ")
        let fill = ConsoleFormat.command([
            ("id", .string(g.id)), ("name", .string(g.name)), ("members", .array(g.members.map { .string($0) }))
        ])
        let remove = ConsoleFormat.command([("command", "remove_group"), ("id", .string(g.id))])
        return """
            <section class="card" data-group="\(g.id)"><h3>\(g.name.isEmpty ? g.id : g.name)</h3><p class="muted">\(members)</p>\(groupButtons(g.id))
            <div class="row"><button type="button" data-action="edit" data-fill="\(fill)" data-target="group-form">Edit</button>\
            <button type="button" class="danger" data-action="remove" data-after="reload" data-confirm="Remove the group “\(g.name.isEmpty ? g.id : g.name)”?" \
            data-command="\(remove)">Remove</button></div></section>
            """
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
        <div class="row"><button class="primary" data-action="apply" data-command="\(ConsoleFormat.command([("command", "apply_scene"), ("id", .string(s.id))]))">Apply</button>\
        <button type="button" data-action="edit" data-fill="\(sceneFill(s))" data-target="scene-form">Edit</button>\
        <button type="button" class="danger" data-action="remove" data-after="reload" data-confirm="Remove the scene “\(s.name.isEmpty ? s.id : s.name)”?" \
        data-command="\(ConsoleFormat.command([("command", "remove_scene"), ("id", .string(s.id))]))">Remove</button></div></section>
        """
    }

    /// What "Edit" puts in the scene form: every device's select, set to its state in the scene or emptied.
    static func sceneFill(_ s: SceneRecord) -> String {
        var fields: [(String, JSONValue)] = [("id", .string(s.id)), ("name", .string(s.name))]
        for t in s.targets { fields.append(("states." + t.device, .string(t.state.name.uppercased()))) }
        return ConsoleFormat.command(fields)
    }
}
