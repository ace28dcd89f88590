import HubDomain
import HubEngine

extension StateJSON {
    /// The plain subtopics for simple consumers, only those with a known value: `switch` (ON/OFF),
    /// `power` (W), `energy` (lifetime kWh), `voltage` (V), `current` (A), `availability`
    /// (online/offline; a removed device is `offline`).
    /// Topics are full topic names.
    public static func devicePlain(_ record: DeviceRecord, energy: EnergyAccount?, topics: MQTTTopics) -> [(topic: String, payload: String)]
    {
        var out: [(topic: String, payload: String)] = []
        if let state = record.switchState.state { out.append((topics.deviceSwitch(record.id), onOff(state))) }
        if let power = record.lastReadings.power { out.append((topics.devicePower(record.id), rounded(power.value, 1).serialized())) }
        if let energy { out.append((topics.deviceEnergy(record.id), kWh(energy.lifetimeWh).serialized())) }
        if let voltage = record.lastReadings.voltage {
            out.append((topics.deviceVoltage(record.id), rounded(voltage.value, 1).serialized()))
        }
        if let current = record.lastReadings.current {
            out.append((topics.deviceCurrent(record.id), rounded(current.value, 3).serialized()))
        }
        if record.removed {
            out.append((topics.deviceAvailability(record.id), "offline"))
        } else if let available = record.available {
            out.append((topics.deviceAvailability(record.id), available ? "online" : "offline"))
        }
        return out
    }

    /// Every retained topic the hub publishes for a device (state and plain subtopics), e.g. to clear them
    /// with empty retained payloads.
    public static func deviceTopics(_ id: String, topics: MQTTTopics) -> [String] {
        [topics.deviceState(id), topics.deviceSwitch(id), topics.devicePower(id), topics.deviceEnergy(id), topics.deviceAvailability(id)]
    }
}
