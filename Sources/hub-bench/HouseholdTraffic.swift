import BeaconSimulator
import Foundation
import HubBench

/// The reference household of `hub-bench household`, at a given compression: 20 metered plugs
/// (7 Kasa HS110 polled by the hub, 7 Tasmota and 6 Shelly Plus 1PM on MQTT), each reporting every
/// 10 simulated seconds; 10 collars heard by 5 room nodes of the beacon bridge, each node reporting
/// each collar every 5 simulated seconds (10 messages a second in all), each animal changing room
/// every simulated hour; 4 schedules, each on for 1/15 of every simulated day; 200 switch
/// commands a simulated day to the 16 plugs without a schedule.
struct HouseholdTraffic {
    static let kasaCount = 7, tasmotaCount = 7, shellyCount = 6
    static let animals = 10, rooms = 5
    static let commandsPerDay = 200.0
    static let tasmotaTopic = "hh_tasmota"
    static let shellyBase = "shellyplus1pm-a0b0c0000000"

    let clock: HouseholdClock
    let brokerPort: Int
    let kasaBasePort: Int
    let httpPort: Int

    var kasaIds: [String] { (0..<Self.kasaCount).map { "kasa-\($0)" } }
    var tasmotaIds: [String] { (1...Self.tasmotaCount).map { "tasmota-\($0)" } }
    var shellyIds: [String] { (0..<Self.shellyCount).map { "shelly-\($0)" } }
    var plugIds: [String] { kasaIds + tasmotaIds + shellyIds }
    /// The plugs that carry a schedule; commands go to the others.
    var scheduledIds: [String] { ["kasa-0", "tasmota-1", "shelly-0", "kasa-1"] }
    var commandedIds: [String] { plugIds.filter { !scheduledIds.contains($0) } }

    /// Seconds between a plug's reports, real.
    var reportPeriod: Double { clock.real(10) }
    /// The readings' maximum interval (300 simulated seconds), at least the hub's floor of 1 s.
    var readingMaxInterval: Double { max(1, clock.real(300)) }
    /// Bridge settings scaled the same way, each held to the bridge's own lower bound.
    var bridgeWindow: Double { max(0.5, clock.real(10)) }
    var bridgeUnseen: Double { max(1, clock.real(300)) }
    var bridgePresentEvery: Double { max(1, clock.real(30)) }
    /// Messages per second per collar per room node, real (one every 5 simulated seconds).
    var beaconRate: Double { 0.2 * clock.speed }
    var moveEvery: Double { clock.real(3600) }
    /// Real seconds between two commands.
    var commandSpacing: Double { clock.daySeconds / Self.commandsPerDay }
    /// The schedules: each one's period is one simulated day, its length 1/15 of it (whole minutes).
    var schedulePeriodMinutes: Int { clock.dayMinutes }
    var scheduleLengthMinutes: Int { max(1, clock.dayMinutes / 15) }

    /// The collars' beacon ids, as `hub sim beacons` makes them (its default seed).
    var beaconIds: [String] {
        var options = BeaconSimulator.Options()
        options.animals = Self.animals
        options.rooms = Self.rooms
        return BeaconSimulator(options: options).beaconIds
    }

    /// `hub run --config` for this household.
    func configJSON() -> String {
        let kasa = (0..<Self.kasaCount).map {
            #"{"id":"kasa-\#($0)","driver":"kasa","name":"Kasa \#($0)","config":{"host":"127.0.0.1","port":\#(kasaBasePort + $0),"poll_interval":\#(reportPeriod)}}"#
        }
        let tasmota = (1...Self.tasmotaCount).map {
            #"{"id":"tasmota-\#($0)","driver":"tasmota","name":"Tasmota \#($0)","config":{"topic":"\#(Self.tasmotaTopic)_\#($0)"}}"#
        }
        let shelly = (0..<Self.shellyCount).map {
            #"{"id":"shelly-\#($0)","driver":"shelly","name":"Shelly \#($0)","config":{"id":"\#(Self.shellyId($0))","gen":2}}"#
        }
        let readings = ["power", "voltage", "current", "energy"].map { #""\#($0)":{"max_interval_seconds":\#(readingMaxInterval)}"# }
        return #"""
            {"mqtt":{"port":\#(brokerPort),"client_id":"household-hub"},
             "http":{"listen":"127.0.0.1:\#(httpPort)"},
             "devices":[\#((kasa + tasmota + shelly).joined(separator: ","))],
             "readings":{\#(readings.joined(separator: ","))},
             "beacons":{"window_seconds":\#(bridgeWindow),"unseen_seconds":\#(bridgeUnseen),"present_every_seconds":\#(bridgePresentEvery)}}
            """#
    }

    /// `shellyplus1pm-a0b0c0000000` counted up by `n`, as `hub sim shelly --count` does.
    static func shellyId(_ n: Int) -> String {
        let prefix = "shellyplus1pm-"
        let value = UInt64(shellyBase.dropFirst(prefix.count), radix: 16)! + UInt64(n)
        let hex = String(value, radix: 16)
        return prefix + String(repeating: "0", count: max(0, 12 - hex.count)) + hex
    }

    /// The simulators' command lines (`hub sim ...`): Kasa over TCP, Tasmota and Shelly on the broker.
    var plugSimulators: [[String]] {
        [
            ["sim", "kasa", "--port", "\(kasaBasePort)", "--count", "\(Self.kasaCount)", "--load", "60"],
            [
                "sim", "tasmota", "--port", "\(brokerPort)", "--topic", Self.tasmotaTopic, "--count", "\(Self.tasmotaCount)",
                "--tele-period", "\(reportPeriod)", "--load", "40"
            ],
            [
                "sim", "shelly", "--port", "\(brokerPort)", "--gen", "2", "--id", Self.shellyBase, "--count", "\(Self.shellyCount)",
                "--status-period", "\(reportPeriod)", "--load", "100"
            ]
        ]
    }

    var beaconSimulator: [String] {
        [
            "sim", "beacons", "--port", "\(brokerPort)", "--animals", "\(Self.animals)", "--rooms", "\(Self.rooms)",
            "--rate", "\(beaconRate)", "--move-every", "\(moveEvery)"
        ]
    }

    /// What the output says a simulated day is.
    var description: String {
        let compression =
            clock.dayMinutes == 1440
            ? "real time (one simulated day is one real day)"
            : "one simulated day = \(clock.dayMinutes) real minutes (\(String(format: "%g", clock.speed))x)"
        return """
            Household: \(Self.kasaCount) Kasa + \(Self.tasmotaCount) Tasmota + \(Self.shellyCount) Shelly plugs reporting every 10 simulated s \
            (\(String(format: "%.3f", reportPeriod)) s real); \(Self.animals) collars x \(Self.rooms) room nodes, each node reporting each collar \
            every 5 simulated s (\(String(format: "%.1f", beaconRate * Double(Self.animals * Self.rooms))) messages/s real), a room change \
            every simulated hour; 4 schedules (\(scheduleLengthMinutes) of every \(schedulePeriodMinutes) real minutes); \
            \(Int(Self.commandsPerDay)) commands a simulated day (one every \(String(format: "%.2f", commandSpacing)) s real).
            Time: \(compression). Scaled with it: report periods, readings' max_interval_seconds \
            (\(String(format: "%g", readingMaxInterval)) s), bridge window/unseen/present \
            (\(String(format: "%g", bridgeWindow)) / \(String(format: "%g", bridgeUnseen)) / \(String(format: "%g", bridgePresentEvery)) s, \
            each at least the bridge's floor), moves, schedules, commands. Not scaled: energy accrues at the real rate, and the \
            page cache, the file system's journal commits (ext4: 5 s) and writeback (30 s) run on real time, so at a compressed rate \
            more events share each page and each commit than they would at the real rate: device bytes per simulated day are a \
            lower bound unless run with --real-time.
            """
    }
}
