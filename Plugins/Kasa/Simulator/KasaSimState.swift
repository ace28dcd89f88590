import DriverAPI
import Foundation
import Kasa

/// A UTC calendar day, the key of the simulated daily statistics.
struct KasaDay: Hashable, Sendable {
    var year: Int, month: Int, day: Int
}

/// One outlet of a simulated strip: a child in `get_sysinfo`'s `children`.
struct KasaSimChild: Sendable {
    var id: String
    var alias: String
    var on = false
    var onSince: Double = 0
    /// Its meter's cumulative counter, Wh (HS300).
    var energyWh = 0.0
}

/// The simulated plug's state (an HS110, or a strip's outlets as children): relay, load, energy
/// counter and statistics, rules. Time advances from the injected clock on every access
/// (`advance(to:)`), so nothing runs in the background.
struct KasaSimState: Sendable {
    let firmware: KasaSimulator.Firmware
    let model: KasaSimulator.Model
    let loadWatts: Double
    var mac: String
    var deviceId: String
    var hwId: String
    var oemId: String
    var alias: String
    var relayOn = false
    var relayOnSince: Double = 0
    /// A strip's outlets, in the device's order (empty for a single plug).
    var children: [KasaSimChild] = []
    /// The `context.child_ids` of the latest requests (empty for none), oldest first, at most `recentLimit`.
    var recentChildIds: [[String]] = []
    /// How many times each method (`system.get_sysinfo`) was asked.
    var methodCounts: [String: Int] = [:]
    var ledOff = false
    var latitude = 0.0, longitude = 0.0
    var timezoneIndex = 39
    /// The cumulative energy counter, Wh (since the last erase / reset).
    var energyWh = 0.0
    /// Energy (Wh) and relay-on time (s) per UTC day.
    var dayEnergyWh: [KasaDay: Double] = [:]
    var dayOnSeconds: [KasaDay: Double] = [:]
    var lastUpdate: Double
    var schedule = KasaRuleTable(limit: 32)
    var antiTheft = KasaRuleTable(limit: 1)
    var countdown = KasaRuleTable(limit: 1)
    /// When the countdown rule was (re)armed, Unix seconds.
    var countdownArmedAt: Double = 0
    var requestCount = 0
    /// The latest methods asked (`system.set_relay_state`), oldest first, at most `recentLimit`.
    var recentMethods: [String] = []
    static let recentLimit = 64
    /// Answers `set_relay_state` with `err_code` 0 but leaves the relay as it is (a faulty plug).
    var ignoresSwitching = false
    var cloudServer = "n-devs.tplinkcloud.com"
    var rng = SystemRandomNumberGenerator()

    static let calendar: Calendar = {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = TimeZone(identifier: "UTC")!
        return c
    }()

    static func day(_ t: Double) -> KasaDay {
        let c = calendar.dateComponents([.year, .month, .day], from: Date(timeIntervalSince1970: t))
        return KasaDay(year: c.year!, month: c.month!, day: c.day!)
    }

    /// Brings the simulation forward to `now`: energy and on-time accrue while the relay is on,
    /// split over UTC days; an armed countdown rule fires when due.
    mutating func advance(to now: Double) {
        guard now > lastUpdate else { return }
        if let rule = countdown.rules.first, KasaJSON.int(rule["enable"]) == 1,
            let delay = KasaJSON.double(rule["delay"])
        {
            let due = countdownArmedAt + delay
            if due > lastUpdate && due <= now {
                accrue(to: due)
                setRelay(KasaJSON.int(rule["act"]) == 1, at: due)
                countdown.rules[0]["enable"] = 0
            }
        }
        accrue(to: now)
    }

    private mutating func accrue(to end: Double) {
        guard end > lastUpdate else { return }
        for i in children.indices where children[i].on {
            children[i].energyWh += loadWatts * (end - lastUpdate) / 3600
        }
        var t = lastUpdate
        if relayOn {
            while t < end {
                let dayEnd = (floor(t / 86_400) + 1) * 86_400
                let segmentEnd = min(end, dayEnd)
                let seconds = segmentEnd - t
                let wh = loadWatts * seconds / 3600
                let day = Self.day(t)
                energyWh += wh
                dayEnergyWh[day, default: 0] += wh
                dayOnSeconds[day, default: 0] += seconds
                t = segmentEnd
            }
        }
        lastUpdate = end
    }

    mutating func setRelay(_ on: Bool, at now: Double) {
        if on && !relayOn { relayOnSince = now }
        relayOn = on
    }

    mutating func noteRequest(_ method: String) {
        if recentMethods.count == Self.recentLimit { recentMethods.removeFirst() }
        recentMethods.append(method)
        methodCounts[method, default: 0] += 1
    }

    mutating func noteChildIds(_ ids: [String]) {
        if recentChildIds.count == Self.recentLimit { recentChildIds.removeFirst() }
        recentChildIds.append(ids)
    }

    /// Switches one outlet of a strip (0-based), as its button does.
    mutating func setChild(_ index: Int, _ on: Bool, at now: Double) {
        guard children.indices.contains(index) else { return }
        if on && !children[index].on { children[index].onSince = now }
        children[index].on = on
    }

    mutating func eraseEnergy() {
        energyWh = 0
        dayEnergyWh = [:]
    }

    /// An instantaneous sample: the load with a little noise while on, 0 W while off.
    mutating func sample(on: Bool? = nil) -> (power: Double, voltage: Double, current: Double) {
        let nominal = model.nominalVoltage
        let voltage = nominal + Double.random(in: -0.8...0.8, using: &rng)
        guard on ?? relayOn else { return (0, voltage, 0) }
        let power = max(0, loadWatts + Double.random(in: -0.5...0.5, using: &rng) * max(1, loadWatts / 100))
        return (power, voltage, power / voltage)
    }
}

/// A list of rules as the plug keeps them (schedule, anti-theft, countdown), each with an `id`.
struct KasaRuleTable: Sendable {
    var limit: Int
    var enable = 1
    /// The rules as JSON objects.
    var rules: [JSONValue] = []

    init(limit: Int) { self.limit = limit }

    func index(of id: String) -> Int? {
        rules.firstIndex { $0["id"]?.stringValue == id }
    }

    static func newId<G: RandomNumberGenerator>(using rng: inout G) -> String {
        (0..<16).map { _ in String(format: "%02X", UInt8.random(in: 0...255, using: &rng)) }.joined()
    }
}
