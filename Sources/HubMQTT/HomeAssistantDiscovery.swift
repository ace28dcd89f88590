import HubDomain
import HubEngine

/// Home Assistant MQTT discovery configs (pure).
///
/// Topics: `<prefix>/<component>/<node_id>/<object_id>/config`, with `node_id` the base topic reduced to
/// `[a-zA-Z0-9_-]` and `object_id` `<deviceId>_switch|_power|_energy|_voltage|_current`,
/// `<animalId>_room|_heart_rate|_temperature`, `group_<id>` or `scene_<id>`. A device gets a sensor
/// only for the quantities its driver reports (`DriverCapabilities.readings`) or it has reported.
/// Topics depend only on ids; unique ids and device identifiers come from hardware identity (a device's
/// `hardware_id`, an animal's beacon), never from display names, so renames keep the entities.
/// An empty retained payload on a config topic removes the entity (`deviceRemovals`, `animalRemovals`).
/// With an attribution client (`mqtt.attribution_client`), every `command_topic` is the attributed
/// one, `<base>/from/<client>/...`, so Home Assistant's commands are logged as `mqtt:<client>`.
public struct HomeAssistantDiscovery: Sendable, Equatable {
    /// The hub's topics, which the configs point at.
    public var topics: MQTTTopics
    /// Where Home Assistant sends commands: `topics`, or `topics.attributed(to: client)`.
    public var commandTopics: MQTTTopics
    /// The manufacturer and origin name every config carries.
    public static let manufacturer = "the hub"

    /// Discovery for `topics`.
    ///
    /// - Parameters:
    ///   - topics: the hub's topics.
    ///   - attributionClient: the broker user Home Assistant connects as, when its commands go
    ///     under `<base>/from/<client>/` (a valid ``ClientName``); nil: the plain command topics.
    public init(topics: MQTTTopics = MQTTTopics(), attributionClient: String? = nil) {
        self.topics = topics
        self.commandTopics = attributionClient.map { topics.attributed(to: $0) } ?? topics
    }

    /// The base topic with every character outside `[a-zA-Z0-9_-]` replaced by `_`.
    public var nodeId: String {
        var out = ""
        for scalar in topics.base.unicodeScalars {
            out.unicodeScalars.append(Identifier.isValid(String(scalar)) ? scalar : "_")
        }
        return out
    }

    /// `<discovery prefix>/<component>/<node id>/<object id>/config`.
    public func configTopic(component: String, objectId: String) -> String {
        topics.discoveryPrefix + "/" + component + "/" + nodeId + "/" + objectId + "/config"
    }

    // MARK: Devices

    /// The hardware identity: `hardware_id` when the device has one, else `<node_id>_<deviceId>`.
    public func identity(_ record: DeviceRecord) -> String {
        if let hw = record.hardwareId, !hw.isEmpty { return hw }
        return nodeId + "_" + record.id
    }

    /// The Home Assistant device of a strip's outlets: the strip's hardware id, else `<node_id>_<strip>`.
    public func stripIdentity(_ outlet: OutletOf) -> String {
        if let hw = outlet.stripHardwareId, !hw.isEmpty { return hw }
        return nodeId + "_" + outlet.strip
    }

    /// An outlet's entity name within its strip's device: its own name, or `Outlet <n>` when it
    /// carries the name the hub gave it (`<strip name> <n>`); nil for a device of its own.
    static func outletEntityName(_ record: DeviceRecord) -> String? {
        guard let outlet = record.outlet else { return nil }
        return record.name == "\(outlet.stripName) \(outlet.number)" ? "Outlet \(outlet.number)" : record.name
    }

    /// The quantities a device may get a sensor for, in the order their configs are published.
    public static let meterQuantities: [Quantity] = [.power, .energy, .voltage, .current]

    /// A switch, and a sensor for each quantity in `readings` the device can have a sensor for
    /// (power, energy, voltage, current; see ``meterQuantities``); none for a removed device.
    public func deviceConfigs(_ record: DeviceRecord, readings: Set<Quantity>) -> [(topic: String, payload: JSONValue)] {
        guard !record.removed else { return [] }
        let id = record.id
        let identity = identity(record)
        let availability: [(String, JSONValue)] = [
            (
                "availability",
                .array([
                    .object([("topic", .string(topics.status))]),
                    .object([("topic", .string(topics.deviceAvailability(id)))])
                ])
            ),
            ("availability_mode", "all")
        ]
        // A strip's outlets are one Home Assistant device (the strip's identity and name), an entity each.
        let device: (String, JSONValue) = (
            "device",
            .object([
                ("identifiers", .array([.string(record.outlet.map { stripIdentity($0) } ?? identity)])),
                ("name", .string(record.outlet?.stripName ?? record.name)),
                ("model", .string(record.driver)),
                ("manufacturer", .string(Self.manufacturer))
            ])
        )
        let entityName = Self.outletEntityName(record)
        let origin: (String, JSONValue) = ("origin", .object([("name", .string(Self.manufacturer))]))
        let switchConfig: JSONValue = .object(
            [
                // null: the entity takes the device's name (Home Assistant's convention for a device's main
                // feature); an outlet is named within its strip.
                ("name", entityName.map { .string($0) } ?? .null),
                ("unique_id", .string(identity + "_switch")),
                ("state_topic", .string(topics.deviceSwitch(id))),
                ("command_topic", .string(commandTopics.deviceSwitchSet(id))),
                ("payload_on", "ON"),
                ("payload_off", "OFF")
            ] + availability + [device, origin])
        var configs = [(configTopic(component: "switch", objectId: id + "_switch"), switchConfig)]
        for quantity in Self.meterQuantities where readings.contains(quantity) {
            guard let sensor = Self.sensor(quantity) else { continue }
            let config: JSONValue = .object(
                [
                    ("name", .string(entityName.map { "\($0) \(sensor.name.lowercased())" } ?? sensor.name)),
                    ("unique_id", .string(identity + "_" + quantity.rawValue)),
                    ("state_topic", .string(topics.devicePlain(id, quantity))),
                    ("device_class", .string(sensor.deviceClass)),
                    ("state_class", .string(sensor.stateClass)),
                    ("unit_of_measurement", .string(sensor.unit))
                ] + availability + [device, origin])
            configs.append((sensorConfigTopic(id, quantity), config))
        }
        return configs
    }

    /// How Home Assistant is told of a device's sensor for `quantity` (nil: no sensor for it).
    static func sensor(_ quantity: Quantity) -> (name: String, deviceClass: String, stateClass: String, unit: String)? {
        switch quantity {
        case .power: return ("Power", "power", "measurement", "W")
        case .energy: return ("Energy", "energy", "total_increasing", "kWh")
        case .voltage: return ("Voltage", "voltage", "measurement", "V")
        case .current: return ("Current", "current", "measurement", "A")
        case .temperature, .heartRate: return nil
        }
    }

    /// The config topic of a device's sensor for `quantity`: `<prefix>/sensor/<node>/<id>_<quantity>/config`.
    public func sensorConfigTopic(_ id: String, _ quantity: Quantity) -> String {
        configTopic(component: "sensor", objectId: id + "_" + quantity.rawValue)
    }

    /// The config topics of the sensors a device is not offered (to clear with an empty retained
    /// payload: a sensor an older hub announced, or one the driver no longer reports).
    public func sensorRemovals(id: String, offered readings: Set<Quantity>) -> [String] {
        Self.meterQuantities.filter { !readings.contains($0) }.map { sensorConfigTopic(id, $0) }
    }

    /// The config topics to clear (empty retained payload) when a device goes away.
    public func deviceRemovals(_ record: DeviceRecord) -> [String] { deviceRemovals(id: record.id) }

    /// The config topics to clear when the device `id` goes away: its switch and its meter sensors.
    public func deviceRemovals(id: String) -> [String] {
        [configTopic(component: "switch", objectId: id + "_switch")] + Self.meterQuantities.map { sensorConfigTopic(id, $0) }
    }

    // MARK: Animals

    /// A room sensor, a heart-rate sensor and a temperature sensor, all reading `<base>/animal/<id>/state`;
    /// none for a discharged animal.
    public func animalConfigs(_ record: AnimalRecord) -> [(topic: String, payload: JSONValue)] {
        guard record.isAdmitted else { return [] }
        let id = record.id
        let identity = record.beacon
        let common: [(String, JSONValue)] = [
            ("state_topic", .string(topics.animalState(id))),
            ("availability", .array([.object([("topic", .string(topics.status))])])),
            (
                "device",
                .object([
                    ("identifiers", .array([.string(identity)])),
                    ("name", .string(record.admission.name)),
                    ("model", .string(record.admission.species)),
                    ("manufacturer", .string(Self.manufacturer))
                ])
            ),
            ("origin", .object([("name", .string(Self.manufacturer))]))
        ]
        let room: JSONValue = .object(
            [
                ("name", "Room"),
                ("unique_id", .string(identity + "_room")),
                ("value_template", "{{ value_json.room }}"),
                ("icon", "mdi:map-marker")
            ] + common)
        let heartRate: JSONValue = .object(
            [
                ("name", "Heart rate"),
                ("unique_id", .string(identity + "_heart_rate")),
                ("value_template", "{{ value_json.heart_rate }}"),
                ("unit_of_measurement", "bpm"),
                ("state_class", "measurement"),
                ("icon", "mdi:heart-pulse")
            ] + common)
        let temperature: JSONValue = .object(
            [
                ("name", "Temperature"),
                ("unique_id", .string(identity + "_temperature")),
                ("value_template", "{{ value_json.temperature }}"),
                ("device_class", "temperature"),
                ("unit_of_measurement", "°C"),
                ("state_class", "measurement")
            ] + common)
        return [
            (configTopic(component: "sensor", objectId: id + "_room"), room),
            (configTopic(component: "sensor", objectId: id + "_heart_rate"), heartRate),
            (configTopic(component: "sensor", objectId: id + "_temperature"), temperature)
        ]
    }

    /// The config topics to clear when an animal is discharged.
    public func animalRemovals(_ record: AnimalRecord) -> [String] { animalRemovals(id: record.id) }

    /// The config topics to clear when the animal `id` is discharged.
    public func animalRemovals(id: String) -> [String] {
        [
            configTopic(component: "sensor", objectId: id + "_room"),
            configTopic(component: "sensor", objectId: id + "_heart_rate"),
            configTopic(component: "sensor", objectId: id + "_temperature")
        ]
    }
}

// MARK: Groups

extension HomeAssistantDiscovery {
    /// A group is one switch entity (on when any member is on; switching it switches every member).
    public func groupConfig(_ group: GroupRecord) -> (topic: String, payload: JSONValue) {
        let identity = nodeId + "_group_" + group.id
        let config: JSONValue = .object([
            ("name", .null),
            ("unique_id", .string(identity + "_switch")),
            ("state_topic", .string(topics.groupSwitch(group.id))),
            ("command_topic", .string(commandTopics.groupSwitchSet(group.id))),
            ("payload_on", "ON"),
            ("payload_off", "OFF"),
            ("availability_topic", .string(topics.status)),
            (
                "device",
                .object([
                    ("identifiers", .array([.string(identity)])),
                    ("name", .string(group.name)),
                    ("model", .string("group of \(group.members.count) devices")),
                    ("manufacturer", .string(Self.manufacturer))
                ])
            ),
            ("origin", .object([("name", .string(Self.manufacturer))]))
        ])
        return (groupConfigTopic(group.id), config)
    }

    /// A group's switch config topic.
    public func groupConfigTopic(_ id: String) -> String {
        configTopic(component: "switch", objectId: "group_" + id)
    }
}

// MARK: Scenes

extension HomeAssistantDiscovery {
    /// A scene is a Home Assistant `scene` entity: activating it publishes `{"id":"<scene>"}` on
    /// `<base>/request/scene/apply`, the request that applies it (answered on `<base>/response/scene/apply`).
    public func sceneConfig(_ scene: SceneRecord) -> (topic: String, payload: JSONValue) {
        let identity = nodeId + "_scene_" + scene.id
        let config: JSONValue = .object([
            ("name", .null),
            ("unique_id", .string(identity)),
            ("command_topic", .string(commandTopics.request("scene/apply"))),
            ("payload_on", .string(JSONValue.object([("id", .string(scene.id))]).serialized())),
            ("availability_topic", .string(topics.status)),
            (
                "device",
                .object([
                    ("identifiers", .array([.string(identity)])),
                    ("name", .string(scene.name)),
                    ("model", .string("scene of \(scene.targets.count) devices")),
                    ("manufacturer", .string(Self.manufacturer))
                ])
            ),
            ("origin", .object([("name", .string(Self.manufacturer))]))
        ])
        return (sceneConfigTopic(scene.id), config)
    }

    /// A scene's config topic.
    public func sceneConfigTopic(_ id: String) -> String {
        configTopic(component: "scene", objectId: "scene_" + id)
    }
}
