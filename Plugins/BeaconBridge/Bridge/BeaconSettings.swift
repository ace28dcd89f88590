import DriverAPI
import Foundation

/// The bridge's settings (a JSON object; unknown keys are errors, empty text = all defaults).
///
/// | key | default | meaning |
/// |---|---|---|
/// | `espresense_prefix` | `"espresense"` | ESPresense base topic (`<p>/devices/<id>/<room>`) |
/// | `gateway_prefix` | `"home"` | OpenMQTTGateway / Theengs base topic (`<p>/<gateway>/BTtoMQTT/<mac>`) |
/// | `gateway_rooms` | `{}` | gateway name -> room (an unlisted gateway is its own room) |
/// | `beacon_ids` | `{}` | raw id / MAC / iBeacon uuid -> configured beacon id |
/// | `path_loss` | 2.7 | n of the log-distance model (1...6) |
/// | `window_seconds` | 10 | smoothing window per (beacon, room) (0.5...600) |
/// | `hysteresis_m` | 1.0 | a challenger room must be nearer by this many metres ... |
/// | `hysteresis_db` | — | ... or by this many dB (distance ratio 10^(dB/10n)); exclusive with `hysteresis_m` |
/// | `hysteresis_confirmations` | 2 | ... on this many consecutive fresh samples of the challenger (1...100) |
/// | `unseen_seconds` | 300 | silence after which `unseen` is reported (1...604800) |
/// | `present_every_seconds` | 30 | at most one `present` per beacon per this period (1...86400) |
/// | `max_beacons` | 5000 | tracked beacons; the least recently heard are dropped beyond it (1...1000000) |
public struct BeaconSettings: Sendable, Equatable {
    /// How much nearer a challenger room must be before a beacon moves to it.
    public enum Hysteresis: Sendable, Equatable {
        /// Challenger distance + metres < current room's distance.
        case metres(Double)
        /// Current room's distance / challenger distance > 10^(dB / (10 n)).
        case decibels(Double)
    }

    /// `espresense_prefix`.
    public var espresensePrefix = "espresense"
    /// `gateway_prefix`.
    public var gatewayPrefix = "home"
    /// `gateway_rooms`: gateway name to room.
    public var gatewayRooms: [String: String] = [:]
    /// `beacon_ids`: raw id, MAC or uuid to the configured beacon id.
    public var beaconIds: [String: String] = [:]
    /// `path_loss`: n of the log-distance model (1...6).
    public var pathLoss = 2.7
    /// `window_seconds`: the smoothing window per (beacon, room) (0.5...600).
    public var windowSeconds = 10.0
    /// `hysteresis_m` or `hysteresis_db`.
    public var hysteresis = Hysteresis.metres(1.0)
    /// `hysteresis_confirmations`: consecutive fresh samples a challenger needs (1...100).
    public var confirmations = 2
    /// `unseen_seconds`: silence after which `unseen` is reported (1...604800).
    public var unseenSeconds = 300.0
    /// `present_every_seconds`: at most one `present` per beacon per this period (1...86400).
    public var presentEverySeconds = 30.0
    /// `max_beacons`: beacons tracked at most (1...1000000).
    public var maxBeacons = 5000

    /// The JSON keys the settings accept.
    public static let keys: Set<String> = [
        "espresense_prefix", "gateway_prefix", "gateway_rooms", "beacon_ids", "path_loss", "window_seconds",
        "hysteresis_m", "hysteresis_db", "hysteresis_confirmations", "unseen_seconds", "present_every_seconds", "max_beacons"
    ]

    /// The defaults (the table above).
    public init() {}

    /// Parses and checks the settings JSON (errors are `DriverError`s naming the key).
    public init(json: String) throws {
        let s = try DriverSettings(
            DriverConfiguration(deviceId: "beacon-bridge", driver: "beacons", settingsJSON: json),
            allowed: Self.keys)
        espresensePrefix = try Self.topicPrefix(s, "espresense_prefix", default: espresensePrefix)
        gatewayPrefix = try Self.topicPrefix(s, "gateway_prefix", default: gatewayPrefix)
        pathLoss = try s.double("path_loss", default: pathLoss, in: 1...6)
        windowSeconds = try s.double("window_seconds", default: windowSeconds, in: 0.5...600)
        if s.has("hysteresis_m") && s.has("hysteresis_db") {
            throw DriverError("beacons settings: give \"hysteresis_m\" or \"hysteresis_db\", not both")
        }
        if s.has("hysteresis_db") {
            hysteresis = .decibels(try s.double("hysteresis_db", default: 0, in: 0...40))
        } else {
            hysteresis = .metres(try s.double("hysteresis_m", default: 1.0, in: 0...100))
        }
        confirmations = try s.int("hysteresis_confirmations", default: confirmations, in: 1...100)
        unseenSeconds = try s.double("unseen_seconds", default: unseenSeconds, in: 1...604_800)
        presentEverySeconds = try s.double("present_every_seconds", default: presentEverySeconds, in: 1...86_400)
        maxBeacons = try s.int("max_beacons", default: maxBeacons, in: 1...1_000_000)
        gatewayRooms = try s.stringMap("gateway_rooms")
        beaconIds = try s.stringMap("beacon_ids")
    }

    private static func topicPrefix(_ s: DriverSettings, _ key: String, default value: String) throws -> String {
        let p = try s.string(key, default: value)
        guard !p.contains("+"), !p.contains("#"), !p.hasPrefix("/"), !p.hasSuffix("/"), !p.contains("//") else {
            throw DriverError("beacons setting \"\(key)\" must be a topic prefix without wildcards or empty levels")
        }
        return p
    }

    /// The MQTT filters of the bridge.
    public var mqttScope: [String] { ["\(espresensePrefix)/devices/#", "\(gatewayPrefix)/+/BTtoMQTT/#"] }

    /// A parser with these settings.
    public var parser: BeaconParser {
        BeaconParser(
            espresensePrefix: espresensePrefix, gatewayPrefix: gatewayPrefix, gatewayRooms: gatewayRooms,
            beaconIds: beaconIds, pathLoss: pathLoss)
    }
}
