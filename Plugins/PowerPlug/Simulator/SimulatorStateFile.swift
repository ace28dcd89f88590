import DriverAPI
import Foundation
import PowerPlug

/// The simulator's state file: JSON with the mode, the load and every slot, written atomically.
enum SimulatorStateFile {
    private struct Slot: Codable {
        var name: String
        var start: Int64
        var length: UInt16
        var period: UInt16
    }

    private struct Contents: Codable {
        var manual: Bool
        var on: Bool
        var slots: [Slot?]
    }

    /// nil when the file does not exist yet.
    static func load(path: String, slots: Int) throws -> PlugDeviceState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let contents: Contents
        do {
            contents = try JSONDecoder().decode(Contents.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw DriverError("powerplug simulator state file \(path) is unreadable: \(error)")
        }
        var state = PlugDeviceState(slotCount: slots)
        state.manual = contents.manual
        state.on = contents.on
        for (i, slot) in contents.slots.prefix(slots).enumerated() {
            state.slots[i] = slot.map {
                DeviceActivation(name: $0.name, start: $0.start, lengthMinutes: $0.length, periodMinutes: $0.period)
            }
        }
        return state
    }

    static func save(_ state: PlugDeviceState, path: String) throws {
        let contents = Contents(
            manual: state.manual, on: state.on,
            slots: state.slots.map { slot in
                slot.map { Slot(name: $0.name, start: $0.start, length: $0.lengthMinutes, period: $0.periodMinutes) }
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(contents).write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}
