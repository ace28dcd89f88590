import HubDomain

/// Turns a driver's stream of samples into facts worth logging: a reading is recorded when it moves
/// beyond the quantity's deadband since the last recorded value, or when the maximum interval has
/// passed. Energy counters are also recorded whenever they go down (a reset) and at every UTC day
/// boundary — the last sample of the old day and the first of the new — so per-day totals are exact
/// to the driver's sampling interval.
public struct ReadingFilter: Sendable {
    /// When a quantity's sample is worth recording.
    public struct Rule: Sendable, Equatable {
        /// A change must exceed this (in the quantity's unit) to be recorded before the interval is up...
        public var deadband: Double
        /// ...and this fraction of the last recorded value (0.02 = 2 %), so a 2 kW heater's meter noise
        /// is not logged as news while a 5 W lamp's change still is.
        public var relative: Double
        /// A sample is recorded at least this often (seconds) while the driver keeps sending.
        public var maxIntervalSeconds: Double

        /// A rule; `relative` 0 unless given.
        public init(deadband: Double, relative: Double = 0, maxIntervalSeconds: Double) {
            self.deadband = deadband
            self.relative = relative
            self.maxIntervalSeconds = maxIntervalSeconds
        }
    }

    /// The defaults: fine enough for a household's dashboards, coarse enough that a year stays auditable.
    public static let defaultRules: [Quantity: Rule] = [
        .power: Rule(deadband: 1, relative: 0.02, maxIntervalSeconds: 300),
        .voltage: Rule(deadband: 2, maxIntervalSeconds: 300),
        .current: Rule(deadband: 0.05, relative: 0.02, maxIntervalSeconds: 300),
        .energy: Rule(deadband: 10, maxIntervalSeconds: 300),
        .temperature: Rule(deadband: 0.1, maxIntervalSeconds: 300),
        .heartRate: Rule(deadband: 1, maxIntervalSeconds: 300)
    ]

    /// A sample: the value, and when it was measured (µs since the Unix epoch).
    public typealias Sample = (value: Double, at: Int64)

    struct Key: Hashable { var device: String; var quantity: Quantity }
    struct Track { var last: Sample?; var held: Sample? }

    let rules: [Quantity: Rule]
    var tracks: [Key: Track] = [:]

    /// A filter with the default rules, overridden per quantity by `rules`.
    public init(rules: [Quantity: Rule] = ReadingFilter.defaultRules) {
        self.rules = ReadingFilter.defaultRules.merging(rules) { _, new in new }
    }

    /// The samples to record for this new one, oldest first (zero, one or two).
    public mutating func admit(device: String, quantity: Quantity, value: Double, at: Int64) -> [Sample] {
        let key = Key(device: device, quantity: quantity)
        var track = tracks[key] ?? Track()
        defer { tracks[key] = track }
        let sample: Sample = (value, at)
        guard let last = track.last, let rule = rules[quantity] else {
            track.last = sample
            return [sample]
        }
        var out: [Sample] = []
        var record =
            abs(value - last.value) > max(rule.deadband, rule.relative * abs(last.value))
            || Double(at - last.at) >= rule.maxIntervalSeconds * 1_000_000
        if quantity == .energy {
            if value < last.value { record = true }
            if Civil.dayNumber(micros: at) != Civil.dayNumber(micros: last.at) {
                if let held = track.held { out.append(held) }
                record = true
            }
        }
        if record {
            out.append(sample)
            track.last = sample
            track.held = nil
        } else {
            track.held = sample
        }
        return out
    }

    /// Forgets a device (removed, or its driver restarted).
    public mutating func forget(device: String) {
        tracks = tracks.filter { $0.key.device != device }
    }
}
