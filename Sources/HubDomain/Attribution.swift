/// Who caused a command's events, and why when it was declared: `mqtt:alice` for
/// `automation.porch_lights`. The actor says who (a broker-vouched MQTT user, an HTTP token, a
/// driver, `scheduler`); the cause is what the sender declared (an automation, a script, a flow).
///
/// A record keeps both in its one actor field (``stored``): the actor alone, or the actor, `#` and
/// the cause. No actor the hub makes holds a `#` (MQTT user names and topic levels cannot, token
/// names are ids), and no cause may (``DeclaredCause``), so the first `#` splits them; a record
/// without a cause reads exactly as before.
public struct Attribution: Sendable, Equatable, Hashable {
    /// Who: `mqtt`, `mqtt:<client>`, `http:<token>`, `driver:<name>`, `scheduler`, ...
    public var actor: String
    /// Why, as declared with the command (`automation.porch_lights`); nil when none was.
    public var cause: String?

    /// The separator of actor and cause in a record's actor field.
    public static let separator: Character = "#"

    /// Who (`mqtt:alice`, `http:kitchen`, `scheduler`) and, when declared, why.
    public init(actor: String, cause: String? = nil) {
        self.actor = actor
        self.cause = cause
    }

    /// Reads a record's actor field: the part before the first `#` is the actor, the rest the cause.
    /// It runs for every event a replay folds: the `#` is looked for in the UTF-8 bytes (no
    /// Character iteration), and a field without one is kept as it is (no new String).
    public init(stored: String) {
        let bytes = stored.utf8
        guard let split = bytes.firstIndex(of: UInt8(ascii: "#")) else {
            self.init(actor: stored)
            return
        }
        self.init(actor: String(stored[..<split]), cause: String(stored[bytes.index(after: split)...]))
    }

    /// The record's actor field: `actor`, or `actor#cause`.
    public var stored: String {
        guard let cause else { return actor }
        return actor + String(Self.separator) + cause
    }

    /// `mqtt:alice, automation.porch_lights` (or the actor alone): how pages and lines say it.
    public var text: String { cause.map { actor + ", " + $0 } ?? actor }

    /// The actor of a command received on the MQTT surface: `mqtt`, or `mqtt:<client>` for one
    /// under `<base>/from/<client>/`, whose client the broker's ACL vouches for.
    public static func mqtt(client: String?) -> String { client.map { "mqtt:" + $0 } ?? "mqtt" }
}

/// The rules of a declared cause (`"cause":"automation.porch_lights"`, the MQTT 5 user property
/// `cause`): 1 to 128 characters of A-Z a-z 0-9 and `_ . : / @ -`. Short and plain, so it shows in
/// a page's cell and a log line as sent, and never holds the `#` that ends a record's actor.
public enum DeclaredCause {
    /// The longest cause, in characters.
    public static let maxLength = 128
    /// The code of a refused cause.
    public static let invalidCode = "invalid_cause"
    /// The rules in words, as a refusal states them.
    public static let rule = "a cause is 1 to \(maxLength) characters of A-Z, a-z, 0-9, _ . : / @ and -"

    /// Refuses a cause that breaks the rules, naming what is wrong; nothing else is checked.
    public static func check(_ cause: String) throws(Rejection) {
        if cause.isEmpty { throw Rejection(code: invalidCode, message: "the cause is empty: \(rule)") }
        let count = cause.unicodeScalars.count
        if count > maxLength {
            throw Rejection(code: invalidCode, message: "the cause \(quoted(String(cause.prefix(40))))… is \(count) characters: \(rule)")
        }
        if let bad = cause.unicodeScalars.first(where: { !allowed($0) }) {
            throw Rejection(code: invalidCode, message: "the cause \(quoted(cause)) contains \(character(bad)): \(rule)")
        }
    }

    static func allowed(_ s: Unicode.Scalar) -> Bool {
        switch s {
        case "a"..."z", "A"..."Z", "0"..."9", "_", ".", ":", "/", "@", "-": return true
        default: return false
        }
    }

    /// `the character 'x'`, or `the character U+0020` for a control character or a space.
    static func character(_ s: Unicode.Scalar) -> String {
        if s.value <= 0x20 || s.value == 0x7F {
            let hex = String(s.value, radix: 16, uppercase: true)
            return "the character U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        return "the character '\(s)'"
    }
}

/// The rules of an MQTT client's name in `<base>/from/<client>/...`: 1 to 64 characters of A-Z a-z
/// 0-9 and `_ . @ -` (a broker user name as mosquitto's `%u` puts it in a topic, without the
/// characters no topic level or record actor may hold).
public enum ClientName {
    /// The longest client name, in characters.
    public static let maxLength = 64
    /// The code of a command sent under a client name that breaks the rules.
    public static let invalidCode = "invalid_client"
    /// The rules in words, as a refusal states them.
    public static let rule = "a client name is 1 to \(maxLength) characters of A-Z, a-z, 0-9, _ . @ and -"

    /// Nil for a valid name; otherwise the refusal, naming the name and the rule.
    public static func problem(_ client: String) -> Rejection? {
        if client.isEmpty { return Rejection(code: invalidCode, message: "the client name is empty: \(rule)") }
        let count = client.unicodeScalars.count
        if count > maxLength {
            return Rejection(
                code: invalidCode, message: "the client name \(quoted(String(client.prefix(40))))… is \(count) characters: \(rule)")
        }
        if let bad = client.unicodeScalars.first(where: { !allowed($0) }) {
            return Rejection(
                code: invalidCode, message: "the client name \(quoted(client)) contains \(DeclaredCause.character(bad)): \(rule)")
        }
        return nil
    }

    static func allowed(_ s: Unicode.Scalar) -> Bool {
        switch s {
        case "a"..."z", "A"..."Z", "0"..."9", "_", ".", "@", "-": return true
        default: return false
        }
    }
}
