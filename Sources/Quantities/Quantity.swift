/// What a reading measures: the event catalogue's quantities, each with its unit. The one type for
/// it, shared by the domain (readings in the log) and the driver API (readings drivers report), so
/// a reading of anything else cannot be written: a misspelt quantity is a compile error, not a
/// dropped reading.
///
/// The raw values are the catalogue's names (`"power"`, `"heart_rate"`).
public enum Quantity: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
    /// Active power, W (negative for devices that meter returned energy).
    case power
    /// RMS voltage, V.
    case voltage
    /// RMS current, A.
    case current
    /// The device's own cumulative energy counter, Wh (not a per-interval amount).
    case energy
    /// Temperature, °C.
    case temperature
    /// Heart rate, beats per minute.
    case heartRate = "heart_rate"

    /// The catalogue's unit: `W`, `V`, `A`, `Wh`, `°C` or `bpm`.
    public var unit: String {
        switch self {
        case .power: return "W"
        case .voltage: return "V"
        case .current: return "A"
        case .energy: return "Wh"
        case .temperature: return "°C"
        case .heartRate: return "bpm"
        }
    }
}
