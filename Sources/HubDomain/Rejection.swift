/// Why a command was refused: a stable machine `code` and a human `message` saying what and which.
public struct Rejection: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable machine code clients read, e.g. `unknown_device`.
    public var code: String
    /// The human-readable reason, naming what and which.
    public var message: String
    /// What kind of refusal it is; each surface derives its own answer from it (an HTTP status).
    public var kind: RejectionKind
    /// - Parameter kind: nil takes the kind the code has (``RejectionKind/init(code:)``).
    public init(code: String, message: String, kind: RejectionKind? = nil) {
        self.code = code
        self.message = message
        self.kind = kind ?? RejectionKind(code: code)
    }
    /// "<code>: <message>".
    public var description: String { "\(code): \(message)" }
}

/// What kind of refusal a rejection is, whatever its code. The codes stay the stable contract
/// clients read; the kind is what a surface needs to answer in its own terms (HTTP: 400, 404, 409,
/// 503, 507, 500).
public enum RejectionKind: String, Sendable, CaseIterable {
    /// The request itself is wrong: a field, a value, a form. Sending it again changes nothing.
    case invalid
    /// It names something that does not exist.
    case notFound
    /// The hub's state forbids it now: the thing exists already, was removed, is in use or full.
    case conflict
    /// The hub cannot carry it out now and the same request may succeed later: this hub is not the
    /// active one, its log cannot be reached, or too many commands wait (`hub_busy`).
    case unavailable
    /// The disk holding the log is full.
    case storage
    /// The hub's own failure.
    case `internal`

    /// The kind of each code the hub answers with; a code not listed is `invalid`.
    public init(code: String) {
        switch code {
        case "unknown_device", "unknown_animal", "unknown_activation", "unknown_subject", "unknown_group", "unknown_scene":
            self = .notFound
        case "device_exists", "device_removed", "activation_exists", "activation_repeat_conflict", "activation_slots_full",
            "animal_already_admitted", "animal_not_admitted", "beacon_in_use", "beacon_mismatch", "hardware_in_use", "manual_mode":
            self = .conflict
        case "not_active", "log_unavailable", "hub_busy":
            self = .unavailable
        case "storage_full":
            self = .storage
        case "internal":
            self = .internal
        default:
            self = .invalid
        }
    }
}

extension Rejection {
    static func invalidId(_ what: String, _ id: String) -> Rejection {
        Rejection(code: "invalid_id", message: "\(what) id \(quoted(id)) is invalid; use 1 to 64 of A-Z a-z 0-9 _ -")
    }
    static func unknownDevice(_ id: String) -> Rejection {
        Rejection(code: "unknown_device", message: "no device \(quoted(id)) is registered")
    }
    static func deviceRemoved(_ id: String) -> Rejection {
        Rejection(code: "device_removed", message: "device \(quoted(id)) was removed")
    }
    static func unknownAnimal(_ id: String) -> Rejection {
        Rejection(code: "unknown_animal", message: "no animal \(quoted(id)) was ever admitted")
    }
    static func animalNotAdmitted(_ id: String) -> Rejection {
        Rejection(code: "animal_not_admitted", message: "animal \(quoted(id)) is not admitted (it was discharged)")
    }
    static func missingField(_ field: String, _ command: String) -> Rejection {
        Rejection(code: "missing_field", message: "\(command) needs \(field)")
    }
}

/// A string in double quotes, with quotes and control characters escaped, for messages.
func quoted(_ s: String) -> String {
    var out: [UInt8] = []
    JSONValue.writeString(s, to: &out)
    return String(decoding: out, as: UTF8.self)
}
