import DriverAPI
import HubDomain
import HubEngine
import Hummingbird

/// `GET /discovered`: devices announced on the broker and not registered (each adopted with one
/// button: `register_device` with the configuration the driver found), and beacons no admitted
/// animal wears (each admitted with the form prefilled).
struct DiscoveredPage {
    let devices: [DiscoveredDevice]
    /// `[{"beacon","room","last_seen","reports"}]` as `request/beacons/unknown` answers.
    let beacons: [(beacon: String, room: String, lastSeen: String, reports: Int)]
    /// False when the hub runs without MQTT (nothing can be discovered).
    let listening: Bool

    var page: ConsolePage {
        ConsolePage(
            title: "Discovered", section: .discovered,
            body: """
                \(listening ? HTML.empty : "<p class=\"error-box\">This hub runs without MQTT: devices and beacons are discovered on the broker.</p>")
                <h2>Devices</h2>
                \(deviceList)
                <h2>Unknown beacons</h2>
                \(beaconList)
                """)
    }

    var deviceList: HTML {
        guard !devices.isEmpty else { return "<p class=\"muted\">No unregistered devices announced themselves.</p>" }
        return "<div class=\"grid\">\(devices.map(Self.card))</div>"
    }

    static func card(_ d: DiscoveredDevice) -> HTML {
        let config = (try? JSONValue.parse(Array(d.settingsJSON.utf8))) ?? .object([])
        var command: [(String, JSONValue)] = [
            ("command", "register_device"), ("id", .string(d.suggestedId)), ("driver", .string(d.driver)),
            ("name", .string(d.name)), ("config", config)
        ]
        if let hardwareId = d.hardwareId { command.append(("hardware_id", .string(hardwareId))) }
        return """
            <section class="card" data-discovered="\(d.suggestedId)"><h3>\(d.name)</h3><dl>
            <dt>Driver</dt><dd>\(d.driver)</dd><dt>Id</dt><dd><code>\(d.suggestedId)</code></dd>
            <dt>Hardware</dt><dd>\(d.hardwareId ?? "–")</dd><dt>Settings</dt><dd class="mono">\(d.settingsJSON)</dd></dl>
            <button class="primary" data-after="reload" data-command="\(ConsoleFormat.command(command))">Adopt</button></section>
            """
    }

    var beaconList: HTML {
        guard !beacons.isEmpty else { return "<p class=\"muted\">No unknown beacons heard.</p>" }
        let rows = beacons.map { b -> HTML in
            """
            <tr><td class="mono">\(b.beacon)</td><td>\(b.room)</td><td>\(b.lastSeen)</td><td>\(b.reports)</td>\
            <td><a class="button" href="/animals\(URLText.query([("beacon", b.beacon)]))#admit">Admit an animal with it</a></td></tr>
            """
        }
        return """
            <div class="scroll"><table><thead><tr><th>Beacon</th><th>Room</th><th>Last heard</th><th>Reports</th><th></th></tr></thead>
            <tbody>\(rows)</tbody></table></div>
            """
    }
}

extension ConsoleRoutes {
    func discoveredPage() async -> Response {
        guard routes.link != nil else { return DiscoveredPage(devices: [], beacons: [], listening: false).page.response }
        let devices = await routes.drivers.discovered()
        let unknown = await routes.bridges.unknown
        let beacons = unknown.sorted { $0.value.lastSeen > $1.value.lastSeen }.map {
            (beacon: $0.key, room: $0.value.room, lastSeen: ConsoleFormat.time($0.value.lastSeen), reports: $0.value.reports)
        }
        return DiscoveredPage(devices: devices, beacons: beacons, listening: true).page.response
    }
}
