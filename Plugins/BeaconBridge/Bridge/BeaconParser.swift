import DriverAPI
import Foundation

/// One beacon observation from a bridge message, before smoothing.
public struct BeaconObservation: Sendable, Equatable {
    /// The beacon identity the hub sees (see `BeaconParser` for the rule).
    public var beacon: String
    /// The room the observation was made in (the ESPresense room or the gateway's room).
    public var room: String
    /// Estimated distance in metres.
    public var distance: Double
    /// The received signal strength (dBm), when the message had one.
    public var rssi: Double?
    /// Which bridge format the message was in.
    public var format: BeaconFormat

    /// Creates an observation.
    public init(beacon: String, room: String, distance: Double, rssi: Double?, format: BeaconFormat) {
        self.beacon = beacon
        self.room = room
        self.distance = distance
        self.rssi = rssi
        self.format = format
    }
}

/// The bridge formats the parser reads.
public enum BeaconFormat: String, Sendable, Equatable {
    /// ESPresense, OpenMQTTGateway, Theengs Gateway.
    case espresense, openMQTTGateway, theengs
}

/// Why a message was not an observation.
public enum BeaconDropReason: String, Error, Sendable, Equatable {
    /// Not a beacon topic, or a level is missing or empty.
    case topic
    /// The payload is larger than `BeaconParser.maxPayload`.
    case tooLarge
    /// Not a JSON object.
    case notJSON
    /// No usable id, uuid or MAC.
    case noIdentity
    /// rssi or distance missing, of the wrong type, NaN or absurd.
    case badSignal
    /// A retained message: an observation of unknown age.
    case retained
}

/// Pure parsing of the three bridge formats (ESPresense, OpenMQTTGateway, Theengs Gateway).
///
/// Identity rule, first that applies:
/// 1. `beacon_ids` (configured mapping) for the iBeacon identity, the raw id or the MAC
///    (keys compared lowercased, MAC colons removed, `iBeacon:` ids normalised as in 2).
/// 2. iBeacon: `uuid` lowercased without dashes; `"<uuid>"` when major = minor = 0 (or absent),
///    else `"<uuid>-<major>-<minor>"`. ESPresense ids `iBeacon:<uuid>-<major>-<minor>` map to the same.
/// 3. Otherwise the ESPresense id (lowercased) or the gateway's MAC (lowercased, no colons).
///
/// Distance: the payload's `distance` when it is a number in (0, 500] m (the bridge's own
/// calibration), else the log-distance model `10^((P - rssi) / (10 n))` with P = `rssi@1m`, or the
/// iBeacon `txpower` (when it is a measured power, -100...-20 dBm), or -59 dBm.
public struct BeaconParser: Sendable {
    /// The largest payload parsed, in bytes.
    public static let maxPayload = 4096
    /// The rssi values accepted, dBm.
    public static let rssiRange: ClosedRange<Double> = -130 ... -1
    /// The distances accepted from a payload, metres.
    public static let distanceRange: ClosedRange<Double> = 0.000_001...500
    /// The measured power (rssi at 1 m, dBm) used when the message gives none.
    public static let defaultMeasuredPower = -59.0

    /// The ESPresense base topic (`<prefix>/devices/<id>/<room>`).
    public var espresensePrefix: String
    /// The OpenMQTTGateway / Theengs base topic (`<prefix>/<gateway>/BTtoMQTT/<mac>`).
    public var gatewayPrefix: String
    /// Gateway name to room; an unlisted gateway is its own room.
    public var gatewayRooms: [String: String]
    /// Raw id, MAC or iBeacon uuid to the configured beacon id.
    public var beaconIds: [String: String]
    /// The path-loss exponent n of the log-distance model.
    public var pathLoss: Double

    /// A parser with the settings' defaults unless given.
    public init(
        espresensePrefix: String = "espresense", gatewayPrefix: String = "home",
        gatewayRooms: [String: String] = [:], beaconIds: [String: String] = [:], pathLoss: Double = 2.7
    ) {
        self.espresensePrefix = espresensePrefix
        self.gatewayPrefix = gatewayPrefix
        self.gatewayRooms = gatewayRooms
        var ids: [String: String] = [:]
        for (k, v) in beaconIds { ids[Self.normaliseKey(k)] = v }
        self.beaconIds = ids
        self.pathLoss = pathLoss
    }

    /// `10^((measuredPower - rssi) / (10 n))` metres.
    public static func distance(rssi: Double, measuredPower: Double, pathLoss n: Double) -> Double {
        pow(10, (measuredPower - rssi) / (10 * n))
    }

    /// The observation in one message, or why it is not one; pure.
    public func parse(topic: String, payload: [UInt8]) -> Result<BeaconObservation, BeaconDropReason> {
        // Topic first: it is cheap and rejects most foreign traffic.
        enum Source { case espresense(id: String, room: String), gateway(name: String, mac: String) }
        let source: Source
        if let rest = Self.levels(topic, after: espresensePrefix + "/devices"), rest.count == 2 {
            source = .espresense(id: String(rest[0]), room: String(rest[1]))
        } else if let rest = Self.levels(topic, after: gatewayPrefix), rest.count == 3, rest[1] == "BTtoMQTT" {
            source = .gateway(name: String(rest[0]), mac: String(rest[2]))
        } else {
            return .failure(.topic)
        }
        guard payload.count <= Self.maxPayload else { return .failure(.tooLarge) }
        guard let first = payload.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }), first == UInt8(ascii: "{"),
            let object = try? JSONValue.parse(payload), case .object = object
        else {
            return .failure(.notJSON)
        }
        switch source {
        case .espresense(let topicId, let room):
            return espresense(object, topicId: topicId, room: room)
        case .gateway(let name, let mac):
            return gateway(object, gateway: name, topicMac: mac)
        }
    }

    // MARK: - Formats

    private func espresense(_ o: JSONValue, topicId: String, room: String) -> Result<BeaconObservation, BeaconDropReason> {
        let rawId: String
        if let v = o["id"] {
            guard let s = v.stringValue, !s.isEmpty else { return .failure(.noIdentity) }
            rawId = s
        } else {
            rawId = topicId
        }
        let mac = o["mac"]?.stringValue.map(Self.normaliseMac)
        var natural = rawId.lowercased()
        if let ib = Self.iBeaconIdentity(espresenseId: rawId) { natural = ib }
        let beacon = configured(natural, raw: rawId, mac: mac) ?? natural
        guard let signal = signal(o, measuredPowerKeys: ["rssi@1m"]) else { return .failure(.badSignal) }
        return .success(BeaconObservation(beacon: beacon, room: room, distance: signal.distance, rssi: signal.rssi, format: .espresense))
    }

    private func gateway(_ o: JSONValue, gateway: String, topicMac: String) -> Result<BeaconObservation, BeaconDropReason> {
        let idField = o["id"]?.stringValue
        let mac = Self.normaliseMac(idField ?? topicMac)
        guard !mac.isEmpty else { return .failure(.noIdentity) }
        var natural = mac
        if let uuidValue = o["uuid"] {
            guard let uuid = uuidValue.stringValue, let u = Self.normaliseUUID(uuid) else { return .failure(.noIdentity) }
            guard let major = Self.intField(o["major"]), let minor = Self.intField(o["minor"]) else { return .failure(.noIdentity) }
            natural = Self.identity(uuid: u, major: major, minor: minor)
        }
        let beacon = configured(natural, raw: idField, mac: mac) ?? natural
        guard let signal = signal(o, measuredPowerKeys: ["txpower", "rssi@1m"]) else { return .failure(.badSignal) }
        let format: BeaconFormat = gateway.lowercased().hasPrefix("theengs") ? .theengs : .openMQTTGateway
        let room = gatewayRooms[gateway] ?? gateway
        return .success(BeaconObservation(beacon: beacon, room: room, distance: signal.distance, rssi: signal.rssi, format: format))
    }

    // MARK: - Fields

    /// rssi / distance, validated. Any present-but-bad field drops the message.
    private func signal(_ o: JSONValue, measuredPowerKeys: [String]) -> (distance: Double, rssi: Double?)? {
        var rssi: Double?
        if let v = o["rssi"] {
            guard let r = Self.number(v), Self.rssiRange.contains(r) else { return nil }
            rssi = r
        }
        if let v = o["distance"] {
            guard let d = Self.number(v), Self.distanceRange.contains(d) else { return nil }
            return (d, rssi)
        }
        guard let rssi else { return nil }
        var measured = Self.defaultMeasuredPower
        for key in measuredPowerKeys {
            if let p = o[key].flatMap(Self.number), (-100 ... -20).contains(p) { measured = p; break }
        }
        let d = Self.distance(rssi: rssi, measuredPower: measured, pathLoss: pathLoss)
        guard d.isFinite, Self.distanceRange.contains(d) else { return nil }
        return (d, rssi)
    }

    private func configured(_ natural: String, raw: String?, mac: String?) -> String? {
        guard !beaconIds.isEmpty else { return nil }
        if let v = beaconIds[natural] { return v }
        if let raw, let v = beaconIds[Self.normaliseKey(raw)] { return v }
        if let mac, let v = beaconIds[mac] { return v }
        return nil
    }

    /// A JSON number (not a bool), finite.
    static func number(_ v: JSONValue) -> Double? {
        guard case .number(let d) = v else { return nil }
        return d.isFinite ? d : nil
    }

    static func intField(_ v: JSONValue?) -> Int? {
        guard let v else { return 0 }
        guard let d = number(v), d == d.rounded(), (0...65535).contains(d) else { return nil }
        return Int(d)
    }

    /// The iBeacon identity: the uuid alone when major = minor = 0, else `<uuid>-<major>-<minor>`.
    public static func identity(uuid: String, major: Int, minor: Int) -> String {
        major == 0 && minor == 0 ? uuid : "\(uuid)-\(major)-\(minor)"
    }

    /// 32 lowercase hex digits, or nil.
    public static func normaliseUUID(_ s: String) -> String? {
        let u = s.lowercased().filter { $0 != "-" }
        guard u.utf8.count == 32, u.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }) else { return nil }
        return u
    }

    /// `iBeacon:<uuid>-<major>-<minor>` (uuid with or without dashes) -> the iBeacon identity.
    public static func iBeaconIdentity(espresenseId id: String) -> String? {
        guard id.lowercased().hasPrefix("ibeacon:") else { return nil }
        let parts = id.dropFirst("ibeacon:".count).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 3, let major = Int(parts[parts.count - 2]), let minor = Int(parts[parts.count - 1]),
            (0...65535).contains(major), (0...65535).contains(minor),
            let uuid = normaliseUUID(parts.dropLast(2).joined())
        else { return nil }
        return identity(uuid: uuid, major: major, minor: minor)
    }

    static func normaliseMac(_ s: String) -> String { s.lowercased().filter { $0 != ":" } }

    static func normaliseKey(_ s: String) -> String {
        if let ib = iBeaconIdentity(espresenseId: s) { return ib }
        if let u = normaliseUUID(s) { return u }
        return normaliseMac(s)
    }

    /// The non-empty levels of `topic` after `prefix/`, or nil when the prefix does not match or a level is empty.
    static func levels(_ topic: String, after prefix: String) -> [Substring]? {
        guard topic.hasPrefix(prefix + "/") else { return nil }
        let rest = topic.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        guard !rest.contains(where: \.isEmpty) else { return nil }
        return rest
    }
}
