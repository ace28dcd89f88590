/// Energy per device, from cumulative counter readings (Wh).
public struct EnergyAccount: Sendable, Equatable, Codable {
    /// The last counter value seen (after a reset: 0 until the next reading).
    public var lastCounterWh: Double?
    /// When the last counter reading was measured, µs since the Unix epoch.
    public var lastMeasuredAt: Int64?
    /// Never decreases: the sum of positive deltas between counter readings.
    public var lifetimeWh: Double = 0
    /// Energy per UTC day of the reading, keyed "YYYY-MM-DD", in Wh: the newest ``daysKept`` days
    /// (a hub that runs for years keeps a year of days per device, not every day; the log keeps all).
    public var dailyWh: [String: Double] = [:]
    /// How many days ``dailyWh`` keeps.
    public static let daysKept = 366
    /// How many times the counter went backwards (each an `EnergyCounterReset`).
    public var resets: Int = 0
    // Cache of the last day key, so consecutive readings on one day format nothing.
    var cachedDay: Int64?
    var cachedDayKey: String = ""

    /// `lifetimeWh` in kWh.
    public var lifetimeKWh: Double { lifetimeWh / 1000 }
    /// Energy used on a UTC day ("YYYY-MM-DD"), in Wh; 0 for a day not kept or without readings.
    public func wh(on day: String) -> Double { dailyWh[day] ?? 0 }
    /// Energy used on a UTC day ("YYYY-MM-DD"), in kWh.
    public func kWh(on day: String) -> Double { wh(on: day) / 1000 }

    mutating func record(counterWh value: Double, measuredAt: Int64) {
        if let last = lastCounterWh {
            // A counter below the last value without an explicit reset counts from 0.
            let delta = value >= last ? value - last : value
            if delta > 0 {
                lifetimeWh += delta
                let day = Civil.dayNumber(micros: measuredAt)
                if day != cachedDay {
                    cachedDay = day
                    cachedDayKey = Civil.dayKey(dayNumber: day)
                }
                dailyWh[cachedDayKey, default: 0] += delta
                if dailyWh.count > Self.daysKept, let oldest = dailyWh.keys.min() { dailyWh[oldest] = nil }
            }
        }
        lastCounterWh = value
        lastMeasuredAt = measuredAt
    }
}

/// Energy per device, folded from energy counter readings.
public struct EnergyLedger: Sendable, Equatable, Codable {
    /// The accounts, by device id.
    public private(set) var accounts: [String: EnergyAccount] = [:]

    /// No accounts.
    public init() {}

    /// The account of `device`, nil before its first energy reading.
    public subscript(device: String) -> EnergyAccount? { accounts[device] }

    /// The device's lifetime energy, in kWh (0 when none).
    public func lifetimeKWh(device: String) -> Double { accounts[device]?.lifetimeKWh ?? 0 }
    /// The device's energy on a UTC day ("YYYY-MM-DD"), in kWh (0 when none).
    public func kWh(device: String, on day: String) -> Double { accounts[device]?.kWh(on: day) ?? 0 }
    /// The device's last energy counter value, in Wh; nil before its first energy reading.
    public func lastCounterWh(device: String) -> Double? { accounts[device]?.lastCounterWh }

    /// Folds one event: energy readings of devices and counter resets; others are ignored.
    public mutating func apply(_ event: HubEvent, context: EventContext) {
        switch event {
        case .readingRecorded(let e):
            guard e.quantity == .energy, case .device(let id) = e.subject, e.value.isFinite else { return }
            accounts[id, default: EnergyAccount()].record(counterWh: e.value, measuredAt: e.measuredAt)
        case .energyCounterReset(let e):
            accounts[e.device, default: EnergyAccount()].lastCounterWh = 0
            accounts[e.device, default: EnergyAccount()].resets += 1
        default:
            return
        }
    }
}
