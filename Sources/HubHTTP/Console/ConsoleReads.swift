import HubDomain
import HubEngine

extension Hub {
    /// Runs `body` on the read models inside the hub, for a page to take just what it shows: the
    /// state is borrowed, never copied out of the actor (a copy held while the next event folds
    /// would make that event copy every read model).
    func read<T: Sendable>(_ body: @Sendable (HubState) -> T) -> T { body(state) }
}

/// What the Devices page shows, taken from the read models in one read.
struct DevicesSnapshot: Sendable {
    struct Row: Sendable {
        var record: DeviceRecord
        var lifetimeWh: Double?
    }

    var devices: [Row]
    var groups: [GroupRecord]
    var scenes: [SceneRecord]

    init(_ state: HubState) {
        devices = state.devices.active.map { Row(record: $0, lifetimeWh: state.energy[$0.id]?.lifetimeWh) }
        groups = state.household.groups.values.sorted { $0.id < $1.id }
        scenes = state.household.scenes.values.sorted { $0.id < $1.id }
    }
}
