/// One timer stored on a device.
public struct Activation: Sendable, Equatable, Codable {
    /// The activation's name, unique on its device; at most `DomainLimits.maxActivationNameLength` printable ASCII characters.
    public var name: String
    /// Unix seconds, UTC.
    public var start: Int64
    /// How long the device stays on each time, in minutes (at least 1).
    public var lengthMinutes: UInt16
    /// 0 = one-shot.
    public var periodMinutes: UInt16
    /// Repeats daily at a local time instead of every `periodMinutes` (which is then 0); its first
    /// run is the first matching local time at or after `start`. Run by the hub's scheduler only:
    /// a device that stores activations itself cannot hold it.
    public var daily: DailyRepeat?
    /// Creates an activation; `daily` nil for a one-shot or periodic one.
    public init(name: String, start: Int64, lengthMinutes: UInt16, periodMinutes: UInt16, daily: DailyRepeat? = nil) {
        self.name = name; self.start = start; self.lengthMinutes = lengthMinutes; self.periodMinutes = periodMinutes
        self.daily = daily
    }
}

/// Per device: the ordered list of activations.
public struct ActivationsModel: Sendable, Equatable, Codable {
    /// Each device's activations, in the order they were added.
    public private(set) var byDevice: [String: [Activation]] = [:]
    /// Differences between a device and the log that were recorded but not reconciled (policy
    /// `report`), until the log's activations for that device change or another resolution is recorded.
    public private(set) var unresolved: [String: ActivationsDiverged] = [:]

    /// No activations.
    public init() {}

    /// The activations of `device`, empty when none.
    public subscript(device: String) -> [Activation] { byDevice[device] ?? [] }

    /// The activation of `device` named `name`, nil when none.
    public func activation(device: String, name: String) -> Activation? {
        byDevice[device]?.first { $0.name == name }
    }

    /// Folds one event into the model; events other than activation changes and divergences are ignored.
    public mutating func apply(_ event: HubEvent, context: EventContext) {
        switch event {
        case .activationsDiverged(let e):
            unresolved[e.device] = e.resolution == .report ? e : nil
        case .activationChanged(let e):
            unresolved[e.device] = nil
            let a = Activation(
                name: e.name, start: e.start, lengthMinutes: e.lengthMinutes, periodMinutes: e.periodMinutes,
                daily: e.daily)
            switch e.change {
            case .added:
                byDevice[e.device, default: []].append(a)
            case .updated:
                if let i = byDevice[e.device]?.firstIndex(where: { $0.name == e.name }) {
                    byDevice[e.device]![i] = a
                } else {
                    byDevice[e.device, default: []].append(a)
                }
            case .removed:
                byDevice[e.device]?.removeAll { $0.name == e.name }
                if byDevice[e.device]?.isEmpty == true { byDevice[e.device] = nil }
            }
        case .deviceRemoved(let e):
            byDevice[e.device] = nil
            unresolved[e.device] = nil
        case .deviceRegistered(let e):
            byDevice[e.device] = nil
            unresolved[e.device] = nil
        default:
            return
        }
    }
}
