import HubDomain

/// What a request addresses, whatever carried it: the path below the hub's base that both surfaces
/// share (`device/<id>/switch/set`, `request/<name>`, ...). The MQTT surface reads it from a topic
/// (`<base>/<path>`), the HTTP API from its route table; ``RequestParser`` parses the payload for it.
public enum RequestRoute: Sendable, Equatable {
    /// `device/<id>/switch/set`
    case switchSet(String)
    /// `device/<id>/activations/set`
    case activationsSet(String)
    /// `group/<id>/switch/set`
    case groupSwitchSet(String)
    /// `animal/admit`
    case animalAdmit
    /// `animal/<id>/discharge`
    case animalDischarge(String)
    /// `animal/<id>/vitals`
    case animalVitals(String)
    /// `request/<name>`; the name may hold slashes (`device/add`).
    case request(String)
    /// A request path with an id that breaks `[A-Za-z0-9_-]{1,64}` (empty, too long, a wildcard, ...),
    /// or a request without a valid name: the reason, answered as an error.
    case invalid(String)

    /// Classifies `path`, the part of a request's address below the hub's base; nil when it is not
    /// a request's path (the hub's own output, or nothing it knows).
    ///
    /// - Parameters:
    ///   - path: e.g. `device/lamp/switch/set`.
    ///   - named: how messages name the whole address (the MQTT topic `hub/device/lamp/switch/set`).
    ///   - base: the base the address is under, for the message that names the request form.
    public init?(path rest: Substring, named topic: String, base: String) {
        // Split by bytes, not by characters: a slash is one byte, and every message is routed.
        let levels = rest.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map {
            rest[$0.startIndex..<$0.endIndex]
        }
        guard let head = levels.first else { return nil }
        switch head {
        case "device" where levels.count == 4 && levels[3] == "set":
            let id = String(levels[1])
            switch levels[2] {
            case "switch": self = Self.checked("device", id, topic) ?? .switchSet(id)
            case "activations": self = Self.checked("device", id, topic) ?? .activationsSet(id)
            default: return nil
            }
        case "group" where levels.count == 4 && levels[2] == "switch" && levels[3] == "set":
            let id = String(levels[1])
            self = Self.checked("group", id, topic) ?? .groupSwitchSet(id)
        case "animal" where levels.count == 2 && levels[1] == "admit":
            self = .animalAdmit
        case "animal" where levels.count == 3:
            let id = String(levels[1])
            switch levels[2] {
            case "discharge": self = Self.checked("animal", id, topic) ?? .animalDischarge(id)
            case "vitals": self = Self.checked("animal", id, topic) ?? .animalVitals(id)
            default: return nil
            }
        case "request":
            let name = levels.count > 1 ? String(rest[levels[1].startIndex...]) : ""
            if name.isEmpty {
                self = .invalid("topic \"\(Shown.text(topic))\" names no request: use \(base)/request/<name>")
            } else if let bad = name.first(where: { $0 == "+" || $0 == "#" }) {
                self = .invalid("request name \"\(Shown.text(name))\" contains the wildcard character '\(bad)'")
            } else {
                self = .request(name)
            }
        default:
            return nil
        }
    }

    /// Nil when `id` is a valid id; otherwise `.invalid` naming the id and the rule.
    static func checked(_ kind: String, _ id: String, _ topic: String) -> RequestRoute? {
        if Identifier.isValid(id) { return nil }
        let rule = "ids are 1 to \(Identifier.maxLength) characters of A-Z, a-z, 0-9, _ and -"
        if id.isEmpty {
            return .invalid("\(kind) id in topic \"\(Shown.text(topic))\" is empty: \(rule)")
        }
        if let bad = id.first(where: { $0 == "+" || $0 == "#" }) {
            return .invalid("\(kind) id \"\(Shown.text(id))\" contains the wildcard character '\(bad)': \(rule)")
        }
        if let bad = id.unicodeScalars.first(where: { !Identifier.isValid(String($0)) }) {
            return .invalid("\(kind) id \"\(Shown.text(id))\" contains \(Shown.character(bad)): \(rule)")
        }
        return .invalid("\(kind) id \"\(Shown.text(id))\" is \(id.utf8.count) characters long: \(rule)")
    }
}

/// How a request's own text is quoted in an error message: never longer than 80 characters, and a
/// control character by its code point.
public enum Shown {
    /// At most 80 characters of `text`, then `…` (ids in topics and paths can be long).
    public static func text(_ text: some StringProtocol) -> String {
        let scalars = text.unicodeScalars
        guard scalars.count > 80 else { return String(text) }
        var s = String.UnicodeScalarView()
        s.append(contentsOf: scalars.prefix(80))
        return String(s) + "…"
    }

    /// `the character 'x'`, or `the character U+0009` for a control character or a space.
    public static func character(_ scalar: Unicode.Scalar) -> String {
        if scalar.value < 0x20 || scalar.value == 0x7F || scalar == " " {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "the character U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        return "the character '\(scalar)'"
    }
}
