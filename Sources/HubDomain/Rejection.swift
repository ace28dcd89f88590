/// Why a command was refused: a stable machine `code` and a human `message` saying what and which.
public struct Rejection: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: String
    public var message: String
    public init(code: String, message: String) { self.code = code; self.message = message }
    public var description: String { "\(code): \(message)" }
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
