/// A collar's beacon identity as the beacon bridges report it, from any form a bridge publishes or a
/// person types. The rule mirrors the bridge's (Plugins/BeaconBridge `BeaconParser`):
///
/// | given | identity |
/// |---|---|
/// | ESPresense `iBeacon:<uuid>-<major>-<minor>` (any case, uuid with or without dashes) | `<uuid>` when major = minor = 0, else `<uuid>-<major>-<minor>` |
/// | a uuid, 32 hex digits with or without the 8-4-4-4-12 dashes, optionally `-<major>-<minor>` | the same |
/// | `<uuid>/<major>/<minor>` (as the admission form suggests) | the same as `<uuid>-<major>-<minor>` |
/// | a MAC, `60:87:57:4C:9B:C2`, `60-87-57-4c-9b-c2` or `6087574c9bc2` | `6087574c9bc2` |
/// | any other id (ESPresense `apple:1006:10-12`, a configured `beacon_ids` value) | lowercased |
///
/// `<uuid>` is 32 lowercase hex digits without dashes; major and minor are 0 to 65535.
public enum BeaconId {
    /// The longest beacon id accepted, in UTF-8 bytes.
    public static let maxLength = 128

    /// The forms a collar id may be given in, for messages that refuse one.
    public static let acceptedForms =
        "accepted: a uuid (32 hex digits, dashes optional), <uuid>/<major>/<minor> or "
        + "<uuid>-<major>-<minor>, ESPresense's iBeacon:<uuid>-<major>-<minor>, a MAC (60:87:57:4C:9B:C2), "
        + "or the id the bridge lists in request/beacons/unknown"

    /// Why a beacon id was refused: says which form was meant and what it should look like.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// What was wrong with the id, naming the form meant and what it should look like.
        public var reason: String
        /// The reason, as given.
        public var description: String { reason }
    }

    /// The bridge's identity for `raw` (trimmed of surrounding spaces).
    ///
    /// - Throws: `Problem` for an empty id, one with spaces or control characters inside, one
    ///   longer than ``maxLength``, and for near misses of the forms above (an `iBeacon:` id that
    ///   does not parse, a uuid with the wrong number of digits, a MAC without six groups, a `/`
    ///   form that is not `<uuid>/<major>/<minor>`); each names the forms accepted (``acceptedForms``).
    public static func canonical(_ raw: String) throws(Problem) -> String {
        do { return try identity(of: raw) } catch { throw Problem(reason: error.reason + "; " + acceptedForms) }
    }

    private static func identity(of raw: String) throws(Problem) -> String {
        let s = trimmed(raw).lowercased()
        guard !s.isEmpty else { throw Problem(reason: "is empty") }
        guard s.utf8.count <= maxLength else { throw Problem(reason: "is longer than \(maxLength) bytes") }
        guard !s.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) else {
            throw Problem(
                reason: "contains a space or control character (a beacon id is one word, "
                    + "e.g. 1de4b189115e45f6b44e509352269977 or 6087574c9bc2)")
        }
        let example = "e.g. 1de4b189115e45f6b44e509352269977 for iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0"
        if s.hasPrefix("ibeacon:") {
            let rest = s.dropFirst("ibeacon:".count)
            let parts = rest.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count >= 3, let uuid = uuid(parts.dropLast(2)) else {
                throw Problem(
                    reason: "is not an ESPresense iBeacon id: use iBeacon:<uuid>-<major>-<minor> with a 32-hex-digit uuid "
                        + "(the bridge's identity is the uuid as 32 lowercase hex digits, \(example))")
            }
            guard let major = number(parts[parts.count - 2]), let minor = number(parts[parts.count - 1]) else {
                throw Problem(reason: "has a major or minor that is not 0 to 65535 (iBeacon:<uuid>-<major>-<minor>; \(example))")
            }
            return identity(uuid: uuid, major: major, minor: minor)
        }
        if s.contains("/") {
            // The admission form's `uuid/major/minor`: no bridge reports an id with a slash.
            let parts = s.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 3, let uuid = uuid(parts[0].split(separator: "-", omittingEmptySubsequences: false)[...]) else {
                throw Problem(reason: "is not <uuid>/<major>/<minor> with a 32-hex-digit uuid (\(example))")
            }
            guard let major = number(parts[1]), let minor = number(parts[2]) else {
                throw Problem(reason: "has a major or minor that is not 0 to 65535 (<uuid>/<major>/<minor>; \(example))")
            }
            return identity(uuid: uuid, major: major, minor: minor)
        }
        let hexAndDashes = s.utf8.allSatisfy { isHex($0) || $0 == UInt8(ascii: "-") }
        let hexAndColons = s.utf8.allSatisfy { isHex($0) || $0 == UInt8(ascii: ":") }
        if hexAndDashes || hexAndColons {
            let separator: Character = hexAndDashes ? "-" : ":"
            let parts = s.split(separator: separator, omittingEmptySubsequences: false)
            if parts.count == 6, parts.allSatisfy({ $0.utf8.count == 2 }) { return parts.joined() }  // a MAC
            if parts.count == 1, s.utf8.count == 12 { return s }  // a MAC without colons
            if hexAndDashes {
                if let uuid = uuid(parts[...]) { return uuid }
                if parts.count >= 3, let uuid = uuid(parts.dropLast(2)) {
                    if let major = number(parts[parts.count - 2]), let minor = number(parts[parts.count - 1]) {
                        return identity(uuid: uuid, major: major, minor: minor)
                    }
                    throw Problem(reason: "has a major or minor that is not 0 to 65535 (<uuid>-<major>-<minor>; \(example))")
                }
                if s.utf8.count(where: isHex) >= 24 {
                    throw Problem(
                        reason: "looks like an iBeacon uuid but is not one: a uuid has 32 hex digits, "
                            + "dashes optional (8-4-4-4-12), optionally followed by -<major>-<minor> (\(example))")
                }
            } else {
                throw Problem(
                    reason: "is not a MAC: six two-digit hex groups, e.g. 60:87:57:4C:9B:C2 (the bridge's identity: 6087574c9bc2)")
            }
        }
        return s
    }

    /// The key a stored or reported beacon is indexed under: ``canonical(_:)``, or for an id that
    /// it refuses (one logged before admissions were checked) the id trimmed and lowercased.
    public static func key(_ raw: String) -> String {
        if let id = try? canonical(raw) { return id }
        return trimmed(raw).lowercased()
    }

    /// The bridge's iBeacon identity: the uuid alone when major = minor = 0.
    public static func identity(uuid: String, major: Int, minor: Int) -> String {
        major == 0 && minor == 0 ? uuid : "\(uuid)-\(major)-\(minor)"
    }

    /// 32 hex digits, in one group or as 8-4-4-4-12; lowercase.
    private static func uuid(_ groups: ArraySlice<Substring>) -> String? {
        let lengths = groups.map(\.utf8.count)
        guard lengths == [32] || lengths == [8, 4, 4, 4, 12] else { return nil }
        guard groups.allSatisfy({ $0.utf8.allSatisfy(isHex) }) else { return nil }
        return groups.joined()
    }

    private static func number(_ s: Substring) -> Int? {
        guard (1...5).contains(s.utf8.count), s.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(s), n <= 65535 else { return nil }
        return n
    }

    private static func isHex(_ c: UInt8) -> Bool { (c >= 48 && c <= 57) || (c >= 97 && c <= 102) }
}
