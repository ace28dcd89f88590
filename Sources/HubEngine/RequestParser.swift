import HubDomain

/// A malformed request (from any surface): what was wrong and where. Nothing was executed.
public struct RequestError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One line for people: names the field or the part of the payload that was wrong.
    public var message: String
    /// A stable code when a well-formed request was refused (a history query's `bad_range`, ...); nil otherwise.
    public var code: String?
    /// What could still be read of the request's `id` / `transaction`, so the error answer can echo it.
    public var echo: RequestParser.Echo

    /// An error with its message; `code` nil for a malformed request.
    public init(_ message: String, code: String? = nil, echo: RequestParser.Echo = RequestParser.Echo()) {
        self.message = message
        self.code = code
        self.echo = echo
    }

    /// The message.
    public var description: String { message }

    /// What kind of refusal it is: `invalid`, unless a well-formed request named what does not
    /// exist (`unknown_subject`) or the like (``RejectionKind/init(code:)``).
    public var kind: RejectionKind { code.map(RejectionKind.init(code:)) ?? .invalid }
}

/// Request payloads -> `HubCommand`s or read-model queries, for a ``RequestRoute``: the one grammar
/// of the MQTT topics and the HTTP API. Pure; no I/O.
///
/// Payload rules, checked in this order: at most 64 KiB (every byte counts, whitespace too), not empty
/// (requests without arguments may be empty or blank), valid UTF-8, then the route's form. A JSON
/// payload may hold only the keys its route takes (`requestKeys`, `CommandJSON.keys(of:)`) and
/// `transaction`: any other key is refused, naming it and the known ones.
/// Numbers may also be given as numeric strings (`"23.5"`), and times as ISO-8601 or Unix seconds,
/// exactly as in `hub exec` (`CommandJSON`).
public enum RequestParser {
    /// The largest request payload accepted, in bytes (64 KiB).
    public static let maxPayloadBytes = 65_536

    /// Keys any JSON payload may carry for the answer to echo; never read as a field.
    public static let echoKeys = ["transaction"]

    /// The key of a command's declared cause (`"cause":"automation.porch_lights"`): any command's
    /// JSON payload may carry it, no query's.
    public static let causeKey = "cause"

    /// The declared cause of a command object: nil when it has none (or `null`); refused with
    /// `invalid_cause` when it is not a string or breaks ``DeclaredCause``'s rules.
    public static func cause(_ object: JSONValue, echo: Echo = Echo()) throws(RequestError) -> String? {
        switch object[causeKey] {
        case nil, .null?: return nil
        case .string(let cause)?:
            do { try DeclaredCause.check(cause) } catch {
                throw RequestError("\"cause\": \(error.message)", code: error.code, echo: echo)
            }
            return cause
        case let other?:
            throw RequestError(
                "\"cause\": must be a string, not \(kind(other)): \(DeclaredCause.rule)", code: DeclaredCause.invalidCode, echo: echo)
        }
    }

    /// Requests that are one `hub exec` command: the payload is that command's fields.
    static let requestCommands = [
        "device/add": "register_device", "device/rename": "rename_device", "device/remove": "remove_device",
        "group/define": "define_group", "group/remove": "remove_group", "scene/define": "define_scene",
        "scene/remove": "remove_scene", "scene/apply": "apply_scene", "animal/erase-owner": "erase_owner_data"
    ]

    /// The keys each request's JSON object may hold; any other key is refused. Every request has an
    /// entry except `command`, which takes the keys of the command it names (`CommandJSON.keys(of:)`)
    /// and `transaction`. In the queries `id` is only echoed, except in `device/get` and `animal/get`.
    public static let requestKeys: [String: [String]] = {
        var keys: [String: [String]] = [:]
        for (name, command) in requestCommands { keys[name] = payloadKeys(of: command) }
        for name in ["devices", "animals", "groups", "scenes", "discovered", "beacons/unknown", "device/get", "animal/get"] {
            keys[name] = ["id"] + echoKeys
        }
        keys["all-off"] = ["command_id", "id", causeKey] + echoKeys
        keys["switch"] = ["device", "state", "command_id", "id", causeKey] + echoKeys
        keys["history"] = HistoryJSON.keys + ["id"] + echoKeys
        return keys
    }()

    /// The keys a payload for `hub exec` command `command` may hold: its fields, `command_id` and the echo keys.
    static func payloadKeys(of command: String) -> [String] {
        (CommandJSON.keys(of: command) ?? []).filter { $0 != "command" } + echoKeys
    }

    /// Names accepted under `<base>/request/`.
    public static let requestNames = [
        "device/add", "device/rename", "device/remove", "switch", "command",
        "devices", "device/get", "animals", "animal/get",
        "group/define", "group/remove", "groups", "scene/define", "scene/remove", "scene/apply",
        "scenes", "all-off", "discovered", "beacons/unknown", "animal/erase-owner", "history"
    ]

    /// Requests answered from the read models, without a command.
    public enum Query: Sendable, Equatable {
        /// `request/devices`: every device.
        case devices
        /// `request/device/get` `{"id"}`.
        case device(String)
        /// `request/animals`: every animal.
        case animals
        /// `request/animal/get` `{"id"}`.
        case animal(String)
        /// `request/groups`: every group with its derived state.
        case groups
        /// `request/scenes`: every scene.
        case scenes
        /// `request/discovered`: devices announced on the broker and not registered yet.
        case discovered
        /// `request/beacons/unknown`: beacons heard that no admitted animal wears.
        case unknownBeacons
        /// `request/history` `{"subject","quantity","from","to","bucket"}`: buckets of readings (checked by the domain).
        case history(HistoryQuery)
    }

    /// The values a JSON request carried for the answer to echo: `id` and `transaction`, verbatim.
    public struct Echo: Sendable, Equatable {
        /// The request's `id`, verbatim; nil when it had none.
        public var id: JSONValue?
        /// The request's `transaction`, verbatim; nil when it had none.
        public var transaction: JSONValue?
        /// An echo of the given values.
        public init(id: JSONValue? = nil, transaction: JSONValue? = nil) { self.id = id; self.transaction = transaction }

        /// Reads both from a JSON object; nothing from other values.
        public init(_ value: JSONValue) {
            id = value["id"]
            transaction = value["transaction"]
        }
    }

    /// One parsed message.
    public struct ParsedCommand: Sendable, Equatable {
        /// The commands to execute, in order. Empty for a query. One for every route except `vitals` with
        /// both a heart rate and a temperature, which gives two `recordReading`s.
        public var commands: [HubCommand]
        /// One idempotency key per command (same order as `commands`). Equal to `commandId` when there is a
        /// single command; with two vitals readings it is `<commandId>:heart_rate` and `<commandId>:temperature`,
        /// so that both are applied exactly once.
        public var commandIds: [String?]
        /// The message's command id: `command_id`, or for `switch/set` and `activations/set` the `id` field.
        public var commandId: String?
        /// What the answer should echo.
        public var echo: Echo
        /// Set for queries (`commands` is then empty).
        public var query: Query?
        /// Why, as the sender declared it: the payload's `cause` (or the MQTT 5 user property
        /// `cause`), checked by ``DeclaredCause``; recorded on the events beside the actor.
        public var cause: String?

        /// A parsed request; `commandIds` defaults to `commandId` for each command.
        public init(
            commands: [HubCommand], commandId: String?, echo: Echo = Echo(), query: Query? = nil, commandIds: [String?]? = nil,
            cause: String? = nil
        ) {
            self.commands = commands
            self.commandId = commandId
            self.commandIds = commandIds ?? commands.map { _ in commandId }
            self.echo = echo
            self.query = query
            self.cause = cause
        }

        /// The single command, when there is exactly one.
        public var command: HubCommand? { commands.count == 1 ? commands[0] : nil }
    }

    /// Parses the payload of a message that arrived on `route`. `now` (µs since the epoch) is the time of
    /// readings that do not say when they were measured.
    public static func parse(route: RequestRoute, message payload: [UInt8], now: Int64) throws(RequestError) -> ParsedCommand {
        switch route {
        case .invalid(let reason):
            throw RequestError(reason, echo: bestEffortEcho(payload))
        case .request(let name):
            guard requestNames.contains(name) else {
                throw RequestError(
                    "unknown request \"\(Shown.text(name))\"; known: \(requestNames.joined(separator: ", "))",
                    echo: bestEffortEcho(payload))
            }
            try checkSize(payload)
            if isBlank(payload) {
                switch name {
                case "devices": return ParsedCommand(commands: [], commandId: nil, query: .devices)
                case "animals": return ParsedCommand(commands: [], commandId: nil, query: .animals)
                case "groups": return ParsedCommand(commands: [], commandId: nil, query: .groups)
                case "scenes": return ParsedCommand(commands: [], commandId: nil, query: .scenes)
                case "discovered": return ParsedCommand(commands: [], commandId: nil, query: .discovered)
                case "beacons/unknown": return ParsedCommand(commands: [], commandId: nil, query: .unknownBeacons)
                case "all-off": return ParsedCommand(commands: [.applyScene(id: HouseholdLimits.allOff)], commandId: nil)
                default: break
                }
            }
            try checkPayload(payload)
            return try request(name, payload, now: now)
        case .switchSet(let device):
            try checkPayload(payload)
            return try switchSet(device, payload)
        case .groupSwitchSet(let group):
            try checkPayload(payload)
            var parsed = try switchSet(group, payload)
            parsed.commands = parsed.commands.map { command in
                if case let .switchDevice(id, target) = command { return .switchGroup(id: id, target: target) }
                return command
            }
            return parsed
        case .activationsSet(let device):
            try checkPayload(payload)
            return try activationsSet(device, payload)
        case .animalAdmit:
            try checkPayload(payload)
            let object = try jsonObject(payload)
            return try viaCommandJSON("admit_animal", object, topicId: nil, now: now)
        case .animalDischarge(let animal):
            try checkPayload(payload)
            let object = try jsonObject(payload)
            return try viaCommandJSON("discharge_animal", object, topicId: animal, now: now)
        case .animalVitals(let animal):
            try checkPayload(payload)
            return try vitals(animal, payload, now: now)
        }
    }

    // MARK: Payload checks

    /// Empty, too large, or not UTF-8 -> an error saying which.
    public static func checkPayload(_ payload: [UInt8]) throws(RequestError) {
        if payload.isEmpty { throw RequestError("empty payload") }
        try checkSize(payload)
        if let bad = firstInvalidUTF8(payload) {
            throw RequestError("payload is not valid UTF-8 (byte \(bad))")
        }
    }

    /// More than `maxPayloadBytes` -> an error; every byte counts, whitespace included.
    static func checkSize(_ payload: [UInt8]) throws(RequestError) {
        if payload.count > maxPayloadBytes {
            throw RequestError("payload of \(payload.count) bytes exceeds \(maxPayloadBytes)")
        }
    }

    /// Refuses the first key of `object` outside `keys`, naming it and the known ones.
    static func allow(_ object: JSONValue, _ keys: [String], echo: Echo) throws(RequestError) {
        try fields(echo) { try CommandJSON.Fields(object).allow(keys) }
    }

    /// The offset of the first byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no overlong
    /// forms, no surrogates, nothing above U+10FFFF), or nil when all of it is well formed.
    public static func firstInvalidUTF8(_ b: [UInt8]) -> Int? { UTF8Check.firstInvalid(b) }

    static func isBlank(_ payload: [UInt8]) -> Bool {
        payload.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
    }

    package static func bestEffortEcho(_ payload: [UInt8]) -> Echo {
        guard !payload.isEmpty, payload.count <= maxPayloadBytes, let v = try? JSONValue.parse(payload) else { return Echo() }
        return Echo(v)
    }

    /// Parses a JSON object; other JSON values and parse errors are reported (with the byte offset).
    static func jsonObject(_ payload: [UInt8]) throws(RequestError) -> JSONValue {
        let value: JSONValue
        do { value = try JSONValue.parse(payload) } catch { throw RequestError(error.description) }
        guard case .object = value else {
            throw RequestError("payload must be a JSON object, not \(kind(value))", echo: Echo(value))
        }
        return value
    }

    static func kind(_ value: JSONValue) -> String {
        switch value {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// Runs `CommandJSON` field access, turning its failures into `RequestError`s that keep the echo.
    static func fields<T>(_ echo: Echo, _ body: () throws -> T) throws(RequestError) -> T {
        do {
            return try body()
        } catch let failure as CommandJSON.Failure {
            throw RequestError(failure.description, echo: echo)
        } catch {
            throw RequestError("\(error)", echo: echo)
        }
    }

    static func members(_ object: JSONValue) -> [(String, JSONValue)] {
        if case .object(let m) = object { return m }
        return []
    }

    /// Fails when the payload names a different device/animal than the topic.
    static func checkSameId(_ object: JSONValue, key: String, topicId: String, kind: String, echo: Echo) throws(RequestError) {
        guard let given = object[key] else { return }
        if case .string(let s) = given, s == topicId { return }
        if given.isNull { return }
        throw RequestError("\"\(key)\": \(given.serialized()) does not match the \(kind) in the topic (\"\(topicId)\")", echo: echo)
    }

    // MARK: switch/set

    static let switchForms = "ON, OFF or TOGGLE (any case), or JSON {\"state\":\"ON\"|\"OFF\"|\"TOGGLE\",\"id\":\"<command id>\"}"

    static func switchSet(_ device: String, _ payload: [UInt8]) throws(RequestError) -> ParsedCommand {
        let text = trimmed(String(decoding: payload, as: UTF8.self))
        switch text.utf8.first {
        case UInt8(ascii: "{"):
            let object = try jsonObject(payload)
            let echo = Echo(object)
            try allow(object, ["state", "id", "command_id", causeKey] + echoKeys, echo: echo)
            let f = CommandJSON.Fields(object)
            let (state, commandId) = try fields(echo) { () throws -> (String, String?) in
                (try f.string("state"), try f.optionalString("command_id") ?? f.optionalString("id"))
            }
            guard let target = SwitchTarget(rawValue: word(state)) else {
                throw RequestError("\"state\": must be ON, OFF or TOGGLE, not \"\(Shown.text(state))\"", echo: echo)
            }
            return ParsedCommand(
                commands: [.switchDevice(id: device, target: target)], commandId: commandId, echo: echo,
                cause: try cause(object, echo: echo))
        case UInt8(ascii: "\""):
            // A JSON string: "ON".
            guard case .string(let s)? = try? JSONValue.parse(payload), let target = SwitchTarget(rawValue: word(s)) else {
                throw RequestError("expected \(switchForms), not \(quoted(text))")
            }
            return ParsedCommand(commands: [.switchDevice(id: device, target: target)], commandId: nil)
        default:
            guard let target = SwitchTarget(rawValue: word(text)) else {
                throw RequestError("expected \(switchForms), not \(quoted(text))")
            }
            return ParsedCommand(commands: [.switchDevice(id: device, target: target)], commandId: nil)
        }
    }

    /// A payload for an error message: quoted, at most 80 characters.
    static func quoted(_ text: String) -> String {
        JSONValue.string(Shown.text(text)).serialized()
    }

    /// The one rule for a word in a payload (`ON`, `OFF`, `TOGGLE`), whether it is the whole
    /// payload, a JSON string or a JSON field's value: any case, and spaces, tabs and line breaks
    /// around it ignored (`"on "` is `on` in all three).
    static func word(_ s: String) -> String { trimmed(s).lowercased() }

    static func trimmed(_ s: String) -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = s.firstIndex(where: { !isSpace($0) }), let last = s.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(s[first...last])
    }

    // MARK: activations/set

    /// `set_activation`'s fields; `device` must be the topic's, `id` (or `command_id`) is the command id.
    static let activationKeys = ["op", "name", "start", "length", "period", "repeat", "device", "id", "command_id", causeKey] + echoKeys

    static func activationsSet(_ device: String, _ payload: [UInt8]) throws(RequestError) -> ParsedCommand {
        let object = try jsonObject(payload)
        let echo = Echo(object)
        try allow(object, activationKeys, echo: echo)
        try checkSameId(object, key: "device", topicId: device, kind: "device", echo: echo)
        let f = CommandJSON.Fields(object)
        let commandId = try fields(echo) { try f.optionalString("command_id") ?? f.optionalString("id") }
        let rest = members(object).filter { !["device", "id", "command_id", causeKey].contains($0.0) }
        let command = try fields(echo) {
            try CommandJSON.parse(
                .object([("command", "set_activation"), ("device", .string(device))] + rest), now: 0,
                alsoAllowed: echoKeys
            ).command
        }
        return ParsedCommand(commands: [command], commandId: commandId, echo: echo, cause: try cause(object, echo: echo))
    }

    // MARK: animals

    /// `hub exec`'s command `name` with the payload's fields; `topicId` (discharge) is the animal id.
    static func viaCommandJSON(_ name: String, _ object: JSONValue, topicId: String?, now: Int64) throws(RequestError) -> ParsedCommand {
        let echo = Echo(object)
        try allow(object, payloadKeys(of: name), echo: echo)
        var fieldsIn = members(object)
        if let topicId {
            try checkSameId(object, key: "id", topicId: topicId, kind: "animal", echo: echo)
            fieldsIn = [("id", .string(topicId))] + fieldsIn.filter { $0.0 != "id" }
        }
        let parsed = try fields(echo) {
            try CommandJSON.parse(.object([("command", .string(name))] + fieldsIn), now: now, alsoAllowed: echoKeys)
        }
        return ParsedCommand(commands: [parsed.command], commandId: parsed.commandId, echo: echo, cause: try cause(object, echo: echo))
    }

    static func vitals(_ animal: String, _ payload: [UInt8], now: Int64) throws(RequestError) -> ParsedCommand {
        let object = try jsonObject(payload)
        let echo = Echo(object)
        try allow(object, ["heart_rate", "temperature", "measured_at", "command_id", causeKey] + echoKeys, echo: echo)
        let f = CommandJSON.Fields(object)
        let (heartRate, temperature, measuredAt, commandId) = try fields(echo) { () throws -> (Double?, Double?, Int64, String?) in
            (
                try optionalNumber(f, "heart_rate"), try optionalNumber(f, "temperature"),
                try f.optionalTime("measured_at", seconds: false) ?? now, try f.optionalString("command_id")
            )
        }
        var commands: [HubCommand] = []
        var ids: [String?] = []
        if let heartRate {
            commands.append(.recordReading(subject: .animal(animal), quantity: .heartRate, value: heartRate, measuredAt: measuredAt))
            ids.append(commandId)
        }
        if let temperature {
            commands.append(.recordReading(subject: .animal(animal), quantity: .temperature, value: temperature, measuredAt: measuredAt))
            ids.append(commandId)
        }
        if commands.isEmpty {
            throw RequestError("give \"heart_rate\" (bpm) and/or \"temperature\" (°C)", echo: echo)
        }
        if commands.count == 2, let commandId {
            ids = [commandId + ":heart_rate", commandId + ":temperature"]
        }
        return ParsedCommand(commands: commands, commandId: commandId, echo: echo, commandIds: ids, cause: try cause(object, echo: echo))
    }

    static func optionalNumber(_ f: CommandJSON.Fields, _ key: String) throws -> Double? {
        switch f.value[key] {
        case nil, .null?: return nil
        default: return try f.number(key)
        }
    }

    // MARK: request/<name>

    static func request(_ name: String, _ payload: [UInt8], now: Int64) throws(RequestError) -> ParsedCommand {
        let object = try jsonObject(payload)
        let echo = Echo(object)
        if let keys = requestKeys[name] { try allow(object, keys, echo: echo) }
        let f = CommandJSON.Fields(object)
        switch name {
        case "device/add":
            return try viaCommandJSON("register_device", object, topicId: nil, now: now)
        case "device/rename":
            return try viaCommandJSON("rename_device", object, topicId: nil, now: now)
        case "device/remove":
            return try viaCommandJSON("remove_device", object, topicId: nil, now: now)
        case "switch":
            let (device, state, commandId) = try fields(echo) { () throws -> (String, String, String?) in
                (try f.string("device"), try f.string("state"), try f.optionalString("command_id"))
            }
            guard let target = SwitchTarget(rawValue: word(state)) else {
                throw RequestError("\"state\": must be ON, OFF or TOGGLE, not \"\(Shown.text(state))\"", echo: echo)
            }
            return ParsedCommand(
                commands: [.switchDevice(id: device, target: target)], commandId: commandId, echo: echo,
                cause: try cause(object, echo: echo))
        case "command":
            let parsed = try fields(echo) { try CommandJSON.parse(object, now: now, alsoAllowed: echoKeys) }
            return ParsedCommand(commands: [parsed.command], commandId: parsed.commandId, echo: echo, cause: try cause(object, echo: echo))
        case "animal/erase-owner":
            return try viaCommandJSON("erase_owner_data", object, topicId: nil, now: now)
        case "group/define":
            return try viaCommandJSON("define_group", object, topicId: nil, now: now)
        case "group/remove":
            return try viaCommandJSON("remove_group", object, topicId: nil, now: now)
        case "scene/define":
            return try viaCommandJSON("define_scene", object, topicId: nil, now: now)
        case "scene/remove":
            return try viaCommandJSON("remove_scene", object, topicId: nil, now: now)
        case "scene/apply":
            return try viaCommandJSON("apply_scene", object, topicId: nil, now: now)
        case "all-off":
            let commandId = try fields(echo) { try f.optionalString("command_id") ?? f.optionalString("id") }
            return ParsedCommand(
                commands: [.applyScene(id: HouseholdLimits.allOff)], commandId: commandId, echo: echo, cause: try cause(object, echo: echo))
        case "groups":
            return ParsedCommand(commands: [], commandId: nil, echo: echo, query: .groups)
        case "scenes":
            return ParsedCommand(commands: [], commandId: nil, echo: echo, query: .scenes)
        case "discovered":
            return ParsedCommand(commands: [], commandId: nil, echo: echo, query: .discovered)
        case "beacons/unknown":
            return ParsedCommand(commands: [], commandId: nil, echo: echo, query: .unknownBeacons)
        case "devices":
            return ParsedCommand(commands: [], commandId: nil, echo: echo, query: .devices)
        case "animals":
            return ParsedCommand(commands: [], commandId: nil, echo: echo, query: .animals)
        case "history":
            do {
                return ParsedCommand(
                    commands: [], commandId: nil, echo: echo,
                    query: .history(try HistoryJSON.query(object, alsoAllowed: ["id"] + echoKeys)))
            } catch {
                throw RequestError(error.message, code: error.code, echo: echo)
            }
        case "device/get", "animal/get":
            let id = try fields(echo) { try f.string("id") }
            let kind = name == "device/get" ? "device" : "animal"
            guard Identifier.isValid(id) else {
                throw RequestError(
                    "\"id\": \(quoted(id)) is not a valid \(kind) id: ids are 1 to \(Identifier.maxLength) characters of A-Z, a-z, 0-9, _ and -",
                    echo: echo)
            }
            return ParsedCommand(commands: [], commandId: nil, echo: echo, query: kind == "device" ? .device(id) : .animal(id))
        default:
            throw RequestError("unknown request \"\(Shown.text(name))\"; known: \(requestNames.joined(separator: ", "))", echo: echo)
        }
    }
}

/// The JSON answer every surface sends (the MQTT response topic's payload, the HTTP API's body):
/// `{"status":"ok","data":...,"id":<echo>}` or
/// `{"status":"error","error":"...","code":"...","id":<echo>}`; `"transaction"` is echoed too when the
/// request had one. `id` is always present (`null` when the request had none).
public enum AnswerJSON {
    /// `{"status":"ok","data":<data>}` with the echo.
    public static func ok(_ data: JSONValue = .null, echo: RequestParser.Echo = RequestParser.Echo()) -> JSONValue {
        .object([("status", "ok"), ("data", data)] + echoFields(echo))
    }

    /// `code` is a rejection code (`unknown_device`, ...) when the hub refused a well-formed command.
    public static func error(_ message: String, code: String? = nil, echo: RequestParser.Echo = RequestParser.Echo()) -> JSONValue {
        var fields: [(String, JSONValue)] = [("status", "error"), ("error", .string(message))]
        if let code { fields.append(("code", .string(code))) }
        return .object(fields + echoFields(echo))
    }

    /// The error answer for a malformed or refused request, with its code and echo.
    public static func error(_ error: RequestError) -> JSONValue { self.error(error.message, code: error.code, echo: error.echo) }

    static func echoFields(_ echo: RequestParser.Echo) -> [(String, JSONValue)] {
        var fields: [(String, JSONValue)] = [("id", echo.id ?? .null)]
        if let t = echo.transaction { fields.append(("transaction", t)) }
        return fields
    }
}
