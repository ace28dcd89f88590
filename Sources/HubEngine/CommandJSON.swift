import Foundation
import HubDomain

/// Commands as JSON objects: `{"command":"switch","id":"lamp","state":"ON","command_id":"c-1"}`.
/// Shared by `hub exec` and the MQTT surface. Errors name the field and what was wrong.
public enum CommandJSON {
    /// Why a command object was refused: the field and what was wrong with it.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// The field's key ("" when the whole object is wrong).
        public var field: String
        /// What was wrong.
        public var reason: String
        /// `"<field>": <reason>`, or the reason alone.
        public var description: String { field.isEmpty ? reason : "\"\(field)\": \(reason)" }
    }

    /// Every command name a JSON object may give, in the order the help lists them.
    public static let names = [
        "register_device", "rename_device", "remove_device", "switch", "report_switch", "fail_switch",
        "set_activation", "report_availability", "report_activations", "record_reading", "admit_animal", "discharge_animal",
        "sight_animal", "define_group", "remove_group", "switch_group", "define_scene", "remove_scene",
        "apply_scene", "erase_owner_data"
    ]

    /// The keys each command takes besides `command` and `command_id`; any other key is refused.
    static let keys: [String: [String]] = [
        "register_device": ["id", "driver", "name", "config", "hardware_id"],
        "rename_device": ["id", "name"],
        "remove_device": ["id"],
        "switch": ["id", "state"],
        "report_switch": ["id", "state", "manual"],
        "fail_switch": ["id", "reason"],
        "set_activation": ["device", "id", "op", "name", "start", "length", "period", "repeat"],
        "report_availability": ["id", "available", "reason"],
        "report_activations": ["id", "found", "policy"],
        "record_reading": ["device", "animal", "quantity", "value", "measured_at"],
        "admit_animal": [
            "id", "name", "gender", "birth_date", "weight_kg", "species", "breed", "coat", "owner_name",
            "owner_address", "owner_phone", "motive", "veterinarian", "observations", "photo", "beacon"
        ],
        "discharge_animal": ["id", "exit_weight_kg", "veterinarian", "observations"],
        "sight_animal": ["id", "room", "beacon", "at"],
        "define_group": ["id", "name", "members"],
        "remove_group": ["id"],
        "switch_group": ["id", "state"],
        "define_scene": ["id", "name", "states"],
        "remove_scene": ["id"],
        "apply_scene": ["id"],
        "erase_owner_data": ["id"]
    ]

    /// Every key command `name` takes, `command`, `command_id` and `cause` included; nil for an unknown command.
    public static func keys(of name: String) -> [String]? { allKeys[name] }

    /// `keys` with `command`, `command_id` and `cause` (any command's declared cause, read by
    /// ``RequestParser/cause(_:echo:)``), made once (every command parsed looks its list up).
    private static let allKeys: [String: [String]] = keys.mapValues { ["command", "command_id", RequestParser.causeKey] + $0 }

    /// Parses a command object; `now` fills in measurement times that are not given.
    /// - Parameters:
    ///   - value: The command object.
    ///   - now: µs since the epoch, for readings and sightings that do not say when.
    ///   - alsoAllowed: Keys a transport adds and reads itself (the MQTT surface's `transaction`);
    ///     every other key outside `keys(of:)` is refused, naming the key and the known ones.
    public static func parse(_ value: JSONValue, now: Int64, alsoAllowed: [String] = []) throws -> (command: HubCommand, commandId: String?)
    {
        guard case .object = value else { throw Failure(field: "", reason: "a command must be a JSON object") }
        let f = Fields(value)
        let commandId = try f.optionalString("command_id")
        let name = try f.string("command")
        if let known = keys(of: name) { try f.allow(known, alsoAllowed) }
        let command: HubCommand
        switch name {
        case "register_device":
            let config: String
            switch value["config"] {
            case nil, .null?: config = "{}"
            case .object?: config = value["config"]!.serialized()
            default: throw Failure(field: "config", reason: "must be a JSON object")
            }
            command = .registerDevice(
                id: try f.string("id"), driver: try f.string("driver"), name: try f.string("name"),
                config: config, hardwareId: try f.optionalString("hardware_id"))
        case "rename_device":
            command = .renameDevice(id: try f.string("id"), name: try f.string("name"))
        case "remove_device":
            command = .removeDevice(id: try f.string("id"))
        case "switch":
            command = .switchDevice(id: try f.string("id"), target: try f.switchTarget("state"))
        case "report_switch":
            command = .reportSwitch(id: try f.string("id"), state: try f.switchState("state"), manual: try f.optionalBool("manual"))
        case "fail_switch":
            command = .failSwitch(id: try f.string("id"), reason: try f.string("reason"))
        case "set_activation":
            let op = try f.string("op")
            guard let activationOp = ActivationOp(rawValue: op) else {
                throw Failure(field: "op", reason: "must be add, update or remove, not \"\(op)\"")
            }
            command = .setActivation(
                device: try f.optionalString("device") ?? f.string("id"), op: activationOp,
                name: try f.string("name"), start: try f.optionalTime("start", seconds: true),
                lengthMinutes: try f.optionalInteger("length"), periodMinutes: try f.optionalInteger("period"),
                daily: try dailyRepeat(value["repeat"]))
        case "report_availability":
            command = .reportAvailability(
                id: try f.string("id"), available: try f.bool("available"),
                reason: try f.optionalString("reason") ?? "")
        case "define_group":
            guard case .array(let items)? = value["members"] else {
                throw Failure(field: "members", reason: "must be a list of device ids")
            }
            let members = items.compactMap { item -> String? in if case .string(let s) = item { return s } else { return nil } }
            guard members.count == items.count else { throw Failure(field: "members", reason: "must be a list of device ids") }
            command = .defineGroup(id: try f.string("id"), name: try f.optionalString("name") ?? "", members: members)
        case "erase_owner_data":
            command = .eraseOwnerData(id: try f.string("id"))
        case "remove_group":
            command = .removeGroup(id: try f.string("id"))
        case "switch_group":
            command = .switchGroup(id: try f.string("id"), target: try f.switchTarget("state"))
        case "define_scene":
            guard case .object(let pairs)? = value["states"] else {
                throw Failure(field: "states", reason: "must be an object {\"<device id>\":\"ON\"|\"OFF\",...}")
            }
            var targets: [DeviceTarget] = []
            for (device, v) in pairs {
                guard case .string(let s) = v, let state = SwitchState(name: RequestParser.word(s)) else {
                    throw Failure(field: "states.\(device)", reason: "must be ON or OFF")
                }
                targets.append(DeviceTarget(device: device, state: state))
            }
            command = .defineScene(id: try f.string("id"), name: try f.optionalString("name") ?? "", targets: targets)
        case "remove_scene":
            command = .removeScene(id: try f.string("id"))
        case "apply_scene":
            command = .applyScene(id: try f.string("id"))
        case "report_activations":
            guard case .array(let items)? = value["found"] else {
                throw Failure(field: "found", reason: "must be a list of {\"name\",\"start\",\"length\",\"period\"}")
            }
            var found: [Activation] = []
            for (i, item) in items.enumerated() {
                guard case .object = item else { throw Failure(field: "found[\(i)]", reason: "must be an object") }
                let a = Fields(item)
                try a.allow(["name", "start", "length", "period"], path: "found[\(i)]")
                guard let start = try a.optionalTime("start", seconds: true) else {
                    throw Failure(field: "found[\(i)].start", reason: "is required")
                }
                let length = try a.optionalInteger("length") ?? 0, period = try a.optionalInteger("period") ?? 0
                guard (1...65535).contains(length), (0...65535).contains(period) else {
                    throw Failure(field: "found[\(i)]", reason: "length must be 1 to 65535 and period 0 to 65535 minutes")
                }
                found.append(
                    Activation(
                        name: try a.string("name"), start: start, lengthMinutes: UInt16(length),
                        periodMinutes: UInt16(period)))
            }
            let policyName = try f.optionalString("policy") ?? "report"
            guard let policy = DivergencePolicy(name: policyName) else {
                throw Failure(field: "policy", reason: "must be restore, adopt or report, not \"\(policyName)\"")
            }
            command = .reportActivations(device: try f.string("id"), found: found, policy: policy)
        case "record_reading":
            let subject: Subject
            if let device = try f.optionalString("device") {
                subject = .device(device)
            } else if let animal = try f.optionalString("animal") {
                subject = .animal(animal)
            } else {
                throw Failure(field: "device", reason: "give \"device\" or \"animal\"")
            }
            let q = try f.string("quantity")
            guard let quantity = Quantity(rawValue: q) else {
                throw Failure(
                    field: "quantity", reason: "must be one of \(Quantity.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(q)\"")
            }
            command = .recordReading(
                subject: subject, quantity: quantity, value: try f.number("value"),
                measuredAt: try f.optionalTime("measured_at", seconds: false) ?? now)
        case "admit_animal":
            command = .admitAnimal(
                Admission(
                    animal: try f.string("id"), name: try f.string("name"), gender: try f.optionalString("gender"),
                    birthDate: try f.optionalString("birth_date"), weightKg: try f.number("weight_kg"), species: try f.string("species"),
                    breed: try f.optionalString("breed"), coat: try f.optionalString("coat"), ownerName: try f.optionalString("owner_name"),
                    ownerAddress: try f.optionalString("owner_address"), ownerPhone: try f.optionalString("owner_phone"),
                    motive: try f.optionalString("motive"), veterinarian: try f.optionalString("veterinarian"),
                    observations: try f.optionalString("observations"), photo: try f.optionalString("photo"), beacon: try f.string("beacon")
                ))
        case "discharge_animal":
            command = .dischargeAnimal(
                id: try f.string("id"), exitWeightKg: try f.number("exit_weight_kg"),
                veterinarian: try f.optionalString("veterinarian"), observations: try f.optionalString("observations"))
        case "sight_animal":
            command = .sightAnimal(
                id: try f.string("id"), room: try f.string("room"), beacon: try f.string("beacon"),
                at: try f.optionalTime("at", seconds: false) ?? now)
        default:
            throw Failure(field: "command", reason: "unknown command \"\(name)\"; known: \(names.joined(separator: ", "))")
        }
        return (command, commandId)
    }

    /// Typed field access with errors that name the field.
    /// `"repeat": {"at":"18:00","days":["mon","fri"],"time_zone":"Europe/Lisbon"}` (`days` default: every day).
    static func dailyRepeat(_ value: JSONValue?) throws -> DailyRepeat? {
        guard let value, value != .null else { return nil }
        guard case .object = value else {
            throw Failure(field: "repeat", reason: "must be an object {\"at\":\"HH:MM\",\"days\":[...],\"time_zone\":...}")
        }
        let f = Fields(value)
        try f.allow(["at", "days", "time_zone"], path: "repeat")
        let at = try f.string("at")
        guard let minute = DailyRepeat.minute(of: at) else {
            throw Failure(field: "repeat.at", reason: "must be HH:MM (00:00 to 23:59), not \"\(at)\"")
        }
        var mask = DailyRepeat.everyDay
        if let days = value["days"], days != .null {
            guard case .array(let items) = days else {
                throw Failure(field: "repeat.days", reason: "must be a list of day names (mon ... sun)")
            }
            let names = items.compactMap { item -> String? in if case .string(let s) = item { return s } else { return nil } }
            guard names.count == items.count, let m = DailyRepeat.weekdays(of: names) else {
                throw Failure(field: "repeat.days", reason: "must be one or more of mon, tue, wed, thu, fri, sat, sun")
            }
            mask = m
        }
        guard let zone = try f.optionalString("time_zone") else {
            throw Failure(field: "repeat.time_zone", reason: "is required (an IANA name such as \"Europe/Lisbon\")")
        }
        guard TimeZone(identifier: zone) != nil else {
            throw Failure(
                field: "repeat.time_zone",
                reason: "\"\(zone)\" is not a time zone this machine knows (IANA names such as \"Europe/Lisbon\")")
        }
        return DailyRepeat(minuteOfDay: minute, weekdays: mask, timeZone: zone)
    }

    /// Typed field access with errors that name the field: a thin wording layer over HubJSON's
    /// `JSONObjectReader` (which does the type checks). Unknown keys are refused by `allow`, with the
    /// keys each caller knows (the MQTT surface adds its own, such as `transaction`).
    struct Fields {
        let reader: JSONObjectReader
        init(_ value: JSONValue) { reader = (try? JSONObjectReader(value)) ?? .empty }
        /// The object read.
        var value: JSONValue { reader.value }

        /// Refuses the first key outside `known`; `path` prefixes the key in the error (`repeat.colour`).
        func allow(_ known: [String], _ more: [String] = [], path: String = "") throws {
            do { try reader.allow(known, more) } catch {
                throw Self.failure(JSONFieldError(path: path.isEmpty ? error.path : "\(path).\(error.path)", kind: error.kind))
            }
        }

        /// The reader's error as a `Failure` naming the field.
        static func failure(_ error: JSONFieldError) -> Failure {
            switch error.kind {
            case .missing: return Failure(field: error.path, reason: "is required")
            case .wrongType(let expected): return Failure(field: error.path, reason: "must be \(expected)")
            case .invalid(let message): return Failure(field: error.path, reason: message)
            case .notAnObject: return Failure(field: error.path, reason: "must be an object")
            case .unknownKey(let known):
                return Failure(field: error.path, reason: "is not a known field (known: \(known.joined(separator: ", ")))")
            }
        }

        func read<T>(_ body: () throws(JSONFieldError) -> T) throws -> T {
            do { return try body() } catch { throw Self.failure(error) }
        }

        func string(_ key: String) throws -> String {
            try read { () throws(JSONFieldError) in try reader.require(key, reader.string) }
        }
        /// `ON`, `OFF` or `TOGGLE`, any case.
        func switchTarget(_ key: String) throws -> SwitchTarget {
            let state = try string(key)
            guard let target = SwitchTarget(rawValue: RequestParser.word(state)) else {
                throw Failure(field: key, reason: "must be ON, OFF or TOGGLE, not \"\(state)\"")
            }
            return target
        }
        func optionalString(_ key: String) throws -> String? {
            try read { () throws(JSONFieldError) in try reader.string(key) }
        }
        /// A number, also written as a numeric string (`"12.5"`), as home-automation templates send it.
        func number(_ key: String) throws -> Double {
            if case .string(let s)? = reader[key] {
                guard let d = Double(s) else { throw Failure(field: key, reason: "must be a number, not \"\(s)\"") }
                return d
            }
            return try read { () throws(JSONFieldError) in try reader.require(key, reader.number) }
        }
        func optionalInteger(_ key: String) throws -> Int? {
            guard reader.has(key) else { return nil }
            let d = try number(key)
            guard d.rounded() == d, abs(d) < 1e15 else { throw Failure(field: key, reason: "must be a whole number") }
            return Int(d)
        }
        func bool(_ key: String) throws -> Bool {
            try read { () throws(JSONFieldError) in try reader.require(key, reader.bool) }
        }
        func optionalBool(_ key: String) throws -> Bool? {
            try read { () throws(JSONFieldError) in try reader.bool(key) }
        }
        func switchState(_ key: String) throws -> SwitchState {
            let s = try string(key)
            guard let state = SwitchState(name: RequestParser.word(s)) else {
                throw Failure(field: key, reason: "must be ON or OFF, not \"\(s)\"")
            }
            return state
        }
        /// An ISO-8601 string or a number of Unix seconds; returned in seconds or microseconds.
        func optionalTime(_ key: String, seconds: Bool) throws -> Int64? {
            switch reader[key] {
            case nil: return nil
            case .string(let s)?:
                guard let micros = ISO8601.parse(s) else { throw Failure(field: key, reason: "is not an ISO-8601 time: \"\(s)\"") }
                return seconds ? micros / 1_000_000 : micros
            case .number(let d)?:
                guard d.isFinite, abs(d) < 1e12 else { throw Failure(field: key, reason: "is out of range") }
                return seconds ? Int64(d) : Int64(d * 1_000_000)
            default: throw Failure(field: key, reason: "must be an ISO-8601 string or Unix seconds")
            }
        }
    }
}
