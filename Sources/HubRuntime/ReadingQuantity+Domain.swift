import DriverAPI
import HubDomain

extension Quantity {
    /// The domain quantity of a driver's reading. Exhaustive on purpose: a quantity added to the
    /// driver API does not compile until it is mapped here.
    /// - Parameter quantity: What the driver measured.
    init(_ quantity: ReadingQuantity) {
        switch quantity {
        case .power: self = .power
        case .voltage: self = .voltage
        case .current: self = .current
        case .energy: self = .energy
        case .temperature: self = .temperature
        case .heartRate: self = .heartRate
        }
    }
}
