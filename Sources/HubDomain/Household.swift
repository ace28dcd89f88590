// Household control: groups of devices switched together, scenes (named sets of device states),
// and "all off". Definitions live on streams `group/<id>` and `scene/<id>`; each multi-device
// command is recorded as one `MultiSwitchRequested`, after which the runtime switches each device
// (one `SwitchRequested` per device, with the command's id and the device's id as its command id).

/// One device and the state a scene or multi-switch wants it in.
public struct DeviceTarget: Sendable, Equatable, Hashable, Codable {
    /// The device id.
    public var device: String
    /// The state wanted for it.
    public var state: SwitchState
    /// Creates a target.
    public init(device: String, state: SwitchState) { self.device = device; self.state = state }
}

/// A group of devices was defined (or redefined) under an id, on stream `group/<id>`.
public struct GroupDefined: Sendable, Equatable, Codable {
    /// The group id.
    public var group: String
    /// The display name (the id when none was given).
    public var name: String
    /// Device ids, in the order given, each once.
    public var members: [String]
    /// Creates the event.
    public init(group: String, name: String, members: [String]) { self.group = group; self.name = name; self.members = members }
}

/// A group was deleted.
public struct GroupRemoved: Sendable, Equatable, Codable {
    /// The group id.
    public var group: String
    /// Creates the event.
    public init(group: String) { self.group = group }
}

/// A scene (a named set of device states) was defined or redefined, on stream `scene/<id>`.
public struct SceneDefined: Sendable, Equatable, Codable {
    /// The scene id (never `all-off`, which is reserved).
    public var scene: String
    /// The display name (the id when none was given).
    public var name: String
    /// Each device once, with the state the scene sets it to.
    public var targets: [DeviceTarget]
    /// Creates the event.
    public init(scene: String, name: String, targets: [DeviceTarget]) { self.scene = scene; self.name = name; self.targets = targets }
}

/// A scene was deleted.
public struct SceneRemoved: Sendable, Equatable, Codable {
    /// The scene id.
    public var scene: String
    /// Creates the event.
    public init(scene: String) { self.scene = scene }
}

/// One command that switches several devices: a group's switch, a scene, or "all off".
public struct MultiSwitchRequested: Sendable, Equatable, Codable {
    /// `group/<id>`, `scene/<id>` or `all`.
    public var origin: String
    /// The devices and the state each is asked for (removed devices left out).
    public var targets: [DeviceTarget]
    /// Creates the event.
    public init(origin: String, targets: [DeviceTarget]) { self.origin = origin; self.targets = targets }
}

/// A group as it is defined now.
public struct GroupRecord: Sendable, Equatable, Codable {
    /// The group id.
    public var id: String
    /// The display name.
    public var name: String
    /// The member device ids, in the order defined.
    public var members: [String]
}

/// A scene as it is defined now.
public struct SceneRecord: Sendable, Equatable, Codable {
    /// The scene id.
    public var id: String
    /// The display name.
    public var name: String
    /// Each device with the state the scene sets it to.
    public var targets: [DeviceTarget]
    /// Creates a record.
    public init(id: String, name: String, targets: [DeviceTarget]) { self.id = id; self.name = name; self.targets = targets }
}

/// The groups and scenes that exist now.
public struct HouseholdModel: Sendable, Equatable, Codable {
    /// The defined groups, by id.
    public private(set) var groups: [String: GroupRecord] = [:]
    /// The defined scenes, by id.
    public private(set) var scenes: [String: SceneRecord] = [:]

    /// No groups, no scenes.
    public init() {}

    /// Groups a device belongs to, by id.
    public func groups(containing device: String) -> [String] {
        groups.values.filter { $0.members.contains(device) }.map(\.id).sorted()
    }

    /// Folds one event into the model; events other than group and scene definitions are ignored.
    public mutating func apply(_ event: HubEvent, context: EventContext) {
        switch event {
        case .groupDefined(let e): groups[e.group] = GroupRecord(id: e.group, name: e.name, members: e.members)
        case .groupRemoved(let e): groups[e.group] = nil
        case .sceneDefined(let e): scenes[e.scene] = SceneRecord(id: e.scene, name: e.name, targets: e.targets)
        case .sceneRemoved(let e): scenes[e.scene] = nil
        default: return
        }
    }
}

/// The limits on groups and scenes, and the reserved "all off" id.
public enum HouseholdLimits {
    /// The most devices one group or scene may list.
    public static let maxMembers = 256
    /// The reserved origin and scene id for "everything off".
    public static let allOff = "all-off"
}

// MARK: - Decisions

func decideHousehold(_ command: HubCommand, state: HubState, limits: DomainLimits) throws(Rejection) -> [HubEvent]? {
    switch command {
    case let .defineGroup(id, name, members):
        try householdId("group", id)
        let name = try householdName(name, id: id, limits: limits)
        let list = try memberList(members, state: state)
        if let g = state.household.groups[id], g.name == name, g.members == list { return [] }
        return [.groupDefined(GroupDefined(group: id, name: name, members: list))]
    case let .removeGroup(id):
        try householdId("group", id)
        guard state.household.groups[id] != nil else { throw unknown("group", id) }
        return [.groupRemoved(GroupRemoved(group: id))]
    case let .switchGroup(id, target):
        try householdId("group", id)
        guard let group = state.household.groups[id] else { throw unknown("group", id) }
        let members = group.members.filter { state.devices[$0].map { !$0.removed } ?? false }
        guard !members.isEmpty else {
            throw Rejection(code: "group_empty", message: "group \(quoted(id)) has no registered members to switch")
        }
        let wanted: SwitchState
        switch target {
        case .on: wanted = .on
        case .off: wanted = .off
        case .toggle: wanted = members.contains { state.devices[$0]?.switchState == .on } ? .off : .on
        }
        return [
            .multiSwitchRequested(
                MultiSwitchRequested(
                    origin: StreamKey.group(id).stream,
                    targets: members.map { DeviceTarget(device: $0, state: wanted) }))
        ]
    case let .defineScene(id, name, targets):
        try householdId("scene", id)
        guard id != HouseholdLimits.allOff else {
            throw Rejection(code: "reserved_id", message: "scene id \(quoted(id)) is reserved for \"all off\"")
        }
        let name = try householdName(name, id: id, limits: limits)
        let list = try memberList(targets.map(\.device), state: state)
        let byDevice = Dictionary(targets.map { ($0.device, $0.state) }, uniquingKeysWith: { a, _ in a })
        let normalised = list.map { DeviceTarget(device: $0, state: byDevice[$0]!) }
        if let s = state.household.scenes[id], s.name == name, s.targets == normalised { return [] }
        return [.sceneDefined(SceneDefined(scene: id, name: name, targets: normalised))]
    case let .removeScene(id):
        try householdId("scene", id)
        guard state.household.scenes[id] != nil else { throw unknown("scene", id) }
        return [.sceneRemoved(SceneRemoved(scene: id))]
    case let .applyScene(id):
        try householdId("scene", id)
        if id == HouseholdLimits.allOff {
            let all = state.devices.active.map { DeviceTarget(device: $0.id, state: .off) }
            guard !all.isEmpty else { throw Rejection(code: "no_devices", message: "no devices are registered") }
            return [.multiSwitchRequested(MultiSwitchRequested(origin: "all", targets: all))]
        }
        guard let scene = state.household.scenes[id] else { throw unknown("scene", id) }
        let targets = scene.targets.filter { state.devices[$0.device].map { !$0.removed } ?? false }
        guard !targets.isEmpty else {
            throw Rejection(code: "scene_empty", message: "scene \(quoted(id)) has no registered devices left")
        }
        return [.multiSwitchRequested(MultiSwitchRequested(origin: StreamKey.scene(id).stream, targets: targets))]
    default:
        return nil
    }
}

private func householdId(_ kind: String, _ id: String) throws(Rejection) {
    guard Identifier.isValid(id) else { throw Rejection.invalidId(kind, id) }
}

private func householdName(_ name: String, id: String, limits: DomainLimits) throws(Rejection) -> String {
    let n = name.trimmingWhitespace.isEmpty ? id : name.trimmingWhitespace
    guard n.count <= limits.maxNameLength else {
        throw Rejection(code: "invalid_name", message: "name \(quoted(name)) is \(n.count) characters; use 1 to \(limits.maxNameLength)")
    }
    return n
}

private func memberList(_ members: [String], state: HubState) throws(Rejection) -> [String] {
    guard !members.isEmpty else { throw Rejection(code: "missing_field", message: "give one or more device ids") }
    guard members.count <= HouseholdLimits.maxMembers else {
        throw Rejection(code: "too_many_members", message: "\(members.count) devices; at most \(HouseholdLimits.maxMembers)")
    }
    var seen = Set<String>()
    for m in members {
        guard Identifier.isValid(m) else { throw Rejection.invalidId("device", m) }
        guard let d = state.devices[m] else { throw Rejection.unknownDevice(m) }
        guard !d.removed else { throw Rejection.deviceRemoved(m) }
        guard seen.insert(m).inserted else {
            throw Rejection(code: "duplicate_member", message: "device \(quoted(m)) is listed twice")
        }
    }
    return members
}

private func unknown(_ kind: String, _ id: String) -> Rejection {
    Rejection(code: "unknown_\(kind)", message: "no \(kind) \(quoted(id)) is defined")
}

extension String {
    var trimmingWhitespace: String {
        var sub = Substring(self)
        while let f = sub.first, f.isWhitespace { sub.removeFirst() }
        while let l = sub.last, l.isWhitespace { sub.removeLast() }
        return String(sub)
    }
}

// MARK: - Coding

extension ByteWriter {
    mutating func strings(_ list: [String]) {
        u16(UInt16(clamping: list.count))
        for s in list.prefix(Int(UInt16.max)) { string(s) }
    }
    mutating func targets(_ list: [DeviceTarget]) {
        u16(UInt16(clamping: list.count))
        for t in list.prefix(Int(UInt16.max)) { string(t.device); u8(t.state.rawValue) }
    }
}

extension ByteReader {
    mutating func strings(_ field: StaticString) throws(DecodingFailure) -> [String] {
        let count = Int(try u16(field))
        var out: [String] = []
        for _ in 0..<count { out.append(try string(field)) }
        return out
    }
    mutating func targets(_ field: StaticString) throws(DecodingFailure) -> [DeviceTarget] {
        let count = Int(try u16(field))
        var out: [DeviceTarget] = []
        for _ in 0..<count {
            out.append(DeviceTarget(device: try string(field), state: try enumByte(field, SwitchState.init(rawValue:))))
        }
        return out
    }
}

extension DeviceTarget {
    @usableFromInline var jsonValue: JSONValue { .object([("device", .string(device)), ("state", .string(state.name))]) }
}

extension JSONFieldReader {
    func strings(_ field: String) throws(DecodingFailure) -> [String] {
        guard case .array(let items) = try value(field) else { throw failure(field, "expected a list of strings") }
        var out: [String] = []
        for item in items {
            guard case .string(let s) = item else { throw failure(field, "expected a list of strings") }
            out.append(s)
        }
        return out
    }
    func targets(_ field: String) throws(DecodingFailure) -> [DeviceTarget] {
        guard case .array(let items) = try value(field) else { throw failure(field, "expected a list of {\"device\",\"state\"}") }
        var out: [DeviceTarget] = []
        for (i, item) in items.enumerated() {
            guard case .object = item else { throw failure("\(field)[\(i)]", "expected an object") }
            let r = JSONFieldReader(body: item, type: type, schemaVersion: schemaVersion, prefix: prefix + "\(field)[\(i)].")
            out.append(DeviceTarget(device: try r.string("device"), state: try r.named("state", SwitchState.init(name:))))
        }
        return out
    }
}
