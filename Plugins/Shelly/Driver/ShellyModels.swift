import DriverAPI

/// The Gen2+ component a device entry reads: a relay (`switch:<n>`, with or without a meter) or a
/// meter without a relay (`pm1:<n>`, `em1:<n>` with `em1data:<n>`, `em:<n>` with `emdata:<n>`).
public enum ShellyComponent: String, Sendable, Equatable, CaseIterable {
    /// `switch:<n>`: a relay; its status carries `apower`, `voltage`, `current`, `aenergy` when the model meters.
    case `switch`
    /// `pm1:<n>`: a power meter without a relay (PM Mini): `apower`, `voltage`, `current`, `aenergy`, `ret_aenergy`.
    case pm1
    /// `em1:<n>`: one energy meter channel (`act_power`, `voltage`, `current`), its energy in `em1data:<n>`.
    case em1
    /// `em:<n>`: a three-phase energy meter (`total_act_power`, `total_current`), its energy in `emdata:<n>`.
    case em

    /// Whether it has a relay the hub can switch.
    public var switchable: Bool { self == .switch }

    /// The status key of channel `channel` (`switch:0`, `em1:1`).
    func key(_ channel: Int) -> String { "\(rawValue):\(channel)" }

    /// The key of the component holding the energy counters, when they are apart (`em1data:1`, `emdata:0`).
    func dataKey(_ channel: Int) -> String? {
        switch self {
        case .switch, .pm1: return nil
        case .em1: return "em1data:\(channel)"
        case .em: return "emdata:\(channel)"
        }
    }

    /// The quantities this component reports (`meter`: whether a `switch` meters).
    func readings(gen1: Bool, meter: Bool) -> Set<Quantity> {
        switch self {
        case .switch where !meter: return []
        case .switch where gen1: return [.power, .energy]
        case .switch, .pm1, .em1: return [.power, .voltage, .current, .energy]
        // Three phases: no one voltage.
        case .em: return [.power, .current, .energy]
        }
    }
}

/// What the hub needs to know of a Shelly model: the component its entry reads, whether its relay
/// meters, and how many channels it has. Read from the model number in an announcement
/// (`SHSW-1`, `SNSW-001X16EU`) or from the model part of the device's default id (`shellyplus1` of
/// `shellyplus1-e465b8f3028c`).
///
/// The table is built from what real devices report (`Shelly.GetDeviceInfo` `model` and `id`,
/// Gen1 `/shelly` `type`, and whether their status carries `apower`): the captures of
/// Luligu/matterbridge-shelly `src/mock/*.json` (commit bba3c45ceea7beda2569194227800869a6a88415)
/// and home-assistant-libs/aioshelly `fixtures/` (commit ea7a88f477a162fd26bca65e66498253a02d322d).
public struct ShellyModel: Sendable, Equatable {
    /// The component a device entry of this model reads.
    public var component: ShellyComponent
    /// Whether its relay has a power meter (always true for `pm1`, `em1`, `em`).
    public var meter: Bool
    /// Its relays (or meter channels).
    public var channels: Int

    /// A model.
    /// - Parameters:
    ///   - component: The component its entry reads.
    ///   - meter: Whether its relay meters.
    ///   - channels: How many channels it has.
    public init(component: ShellyComponent, meter: Bool, channels: Int = 1) {
        self.component = component
        self.meter = meter
        self.channels = channels
    }

    private static let relay = ShellyModel(component: .switch, meter: false)
    private static let metered = ShellyModel(component: .switch, meter: true)

    /// (id kind, model numbers, model).
    private static let table: [(kind: String, models: [String], model: ShellyModel)] = [
        // Gen1
        ("shelly1", ["SHSW-1"], relay),
        ("shelly1pm", ["SHSW-PM"], metered),
        ("shelly1l", ["SHSW-L"], metered),
        ("shellyplug-s", ["SHPLG-S"], metered),
        ("shellyswitch25", ["SHSW-25"], ShellyModel(component: .switch, meter: true, channels: 2)),
        // Gen2 and later, relays
        ("shellyplus1", ["SNSW-001X16EU"], relay),
        ("shellyplus1pm", ["SNSW-001P16EU"], metered),
        ("shellyplus2pm", ["SNSW-002P16EU", "SNSW-102P16EU"], ShellyModel(component: .switch, meter: true, channels: 2)),
        ("shelly1mini", ["SNSW-001X8EU"], relay),
        ("shelly1pmmini", ["SNSW-001P8EU"], metered),
        ("shelly1minig3", ["S3SW-001X8EU"], relay),
        ("shelly1pmminig3", ["S3SW-001P8EU"], metered),
        ("shelly1minig4", ["S4SW-001X8EU"], relay),
        ("shelly1pmminig4", ["S4SW-001P8EU"], metered),
        ("shelly1g3", ["S3SW-001X16EU"], relay),
        ("shelly1pmg3", ["S3SW-001P16EU"], metered),
        ("shelly1g4", ["S4SW-001X16EU"], relay),
        ("shelly1pmg4", ["S4SW-001P16EU"], metered),
        ("shelly2lg3", ["S3SW-0A2X4EUL"], ShellyModel(component: .switch, meter: false, channels: 2)),
        ("shelly2pmg3", ["S3SW-002P16EU"], ShellyModel(component: .switch, meter: true, channels: 2)),
        ("shelly2pmg4", ["S4SW-002P16EU"], ShellyModel(component: .switch, meter: true, channels: 2)),
        ("shellyplusplugs", ["SNPL-00112EU"], metered),
        ("shellyplusplugit", ["SNPL-00110IT"], metered),
        ("shellypluspluguk", ["SNPL-00112UK"], metered),
        ("shellyplugsg3", ["S3PL-00112EU"], metered),
        ("shellyazplug", ["S3PL-10112EU"], metered),
        ("shellyoutdoorsg3", ["S3PL-20112EU"], metered),
        ("shellypro1pm", ["SPSW-001PE16EU", "SPSW-201PE16EU"], metered),
        ("shellypro2pm", ["SPSW-002PE16EU", "SPSW-202PE16EU"], ShellyModel(component: .switch, meter: true, channels: 2)),
        ("shellypro3", ["SPSW-003XE16EU"], ShellyModel(component: .switch, meter: false, channels: 3)),
        ("shellypro4pm", ["SPSW-004PE16EU", "SPSW-104PE16EU"], ShellyModel(component: .switch, meter: true, channels: 4)),
        ("shellypstripg4", ["S4PL-00416EU"], ShellyModel(component: .switch, meter: true, channels: 4)),
        // Meters without a relay (the EM Gen3 and Pro EM-50 have a contactor output besides; their entry reads the meter)
        ("shellypmminig3", ["S3PM-001PCEU16"], ShellyModel(component: .pm1, meter: true)),
        ("shellyemminig4", ["S4EM-001PXCEU16"], ShellyModel(component: .em1, meter: true)),
        ("shellyemg3", ["S3EM-002CXCEU"], ShellyModel(component: .em1, meter: true)),
        ("shellyproem50", ["SPEM-002CEBEU50"], ShellyModel(component: .em1, meter: true)),
        // Its default profile is triphase (`em:0`); in the monophase profile it has `em1:0` to `em1:2`.
        ("shellypro3em", ["SPEM-003CEBEU"], ShellyModel(component: .em, meter: true)),
        ("shelly3em63g3", ["S3EM-003CXCEU63"], ShellyModel(component: .em, meter: true))
    ]

    /// The model with this model number (`SHSW-1`, `SNSW-001P16EU`; any case), nil when unknown.
    /// - Parameter modelNumber: The `model` of an announcement or `Shelly.GetDeviceInfo`.
    /// - Returns: The model, or nil.
    public static func byModelNumber(_ modelNumber: String) -> ShellyModel? {
        let wanted = modelNumber.uppercased()
        return table.first { $0.models.contains(wanted) }?.model
    }

    /// The model a device's default id names (`shellyplus1-e465b8f3028c`, `shelly1-34945472A643`,
    /// `shellyplug-s-7AB1C2`: the part before the last `-`, any case), nil when unknown or when the
    /// id is not of that form (a custom MQTT prefix such as `shellies/plus1pm`).
    /// - Parameter id: A device id or topic prefix.
    /// - Returns: The model, or nil.
    public static func byDeviceId(_ id: String) -> ShellyModel? {
        guard let dash = id.lastIndex(of: "-"), !id.contains("/") else { return nil }
        let kind = id[..<dash].lowercased()
        return table.first { $0.kind == kind }?.model
    }
}
