import DriverAPI
import HubDomain
import HubEngine

/// The hub's MQTT topic names, under a configurable base topic (default `hub`) and Home Assistant
/// discovery prefix (default `homeassistant`). Pure: builds and classifies topic strings.
///
/// Out (published by the hub):
/// - `<base>/status`: `online` / `offline` (retained; the last will says `offline`)
/// - `<base>/status/active`: JSON (retained): the active instance, with a hot standby
/// - `<base>/status/storage`: JSON (retained): `ok`, or `full` with the file and since when
/// - `<base>/device/<id>/state`: JSON (retained); plain `.../switch` (ON/OFF), `.../power` (W),
///   `.../energy` (kWh), `.../voltage` (V), `.../current` (A), `.../availability` (online/offline),
///   all retained
/// - `<base>/animal/<id>/state`: JSON (retained)
/// - `<base>/events/<stream>/<type>`: every appended event (not retained)
/// - `<base>/response/...`: the answer to each command (see `response(forTopic:)`)
///
/// In (subscribed; see `subscriptions`): `<base>/device/<id>/switch/set`, `<base>/device/<id>/activations/set`,
/// `<base>/animal/admit`, `<base>/animal/<id>/discharge`, `<base>/animal/<id>/vitals`, `<base>/request/<name>`,
/// each again under `<base>/from/<client>/` (a command a broker ACL attributes to that user, logged with
/// the actor `mqtt:<client>` and answered under `<base>/response/from/<client>/`), and Home
/// Assistant's birth message on `<prefix>/status`.
public struct MQTTTopics: Sendable, Equatable {
    /// The base topic, without a trailing slash (e.g. `hub`, or `site1/hub`).
    public var base: String
    /// The Home Assistant discovery prefix (e.g. `homeassistant`).
    public var discoveryPrefix: String

    /// The largest topic an MQTT packet can carry, in UTF-8 bytes.
    public static let maxTopicBytes = 65_535

    /// Trailing slashes are dropped from both; an empty value falls back to the default.
    public init(base: String = "hub", discoveryPrefix: String = "homeassistant") {
        self.base = MQTTTopics.trimmed(base, default: "hub")
        self.discoveryPrefix = MQTTTopics.trimmed(discoveryPrefix, default: "homeassistant")
    }

    static func trimmed(_ s: String, default fallback: String) -> String {
        var t = Substring(s)
        while t.hasSuffix("/") { t = t.dropLast() }
        return t.isEmpty ? fallback : String(t)
    }

    // MARK: Out

    /// Plain `online` / `offline` (retained; the last will says `offline`).
    public var status: String { base + "/" + Self.statusLevel }
    /// JSON (retained): which instance of several sharing a PostgreSQL log is active (hot standby).
    public var activeStatus: String { base + "/status/active" }
    /// JSON (retained): whether the disk holding the log is full (`StorageReport`).
    public var storageStatus: String { base + "/status/storage" }
    /// JSON (retained): the device's full state.
    public func deviceState(_ id: String) -> String { device(id, "state") }
    /// Plain `ON` / `OFF`.
    public func deviceSwitch(_ id: String) -> String { device(id, "switch") }
    /// Plain number, W.
    public func devicePower(_ id: String) -> String { device(id, "power") }
    /// Plain number, kWh (lifetime, never decreasing).
    public func deviceEnergy(_ id: String) -> String { device(id, "energy") }
    /// Plain `online` / `offline`.
    public func deviceAvailability(_ id: String) -> String { device(id, "availability") }
    /// Plain number, V.
    public func deviceVoltage(_ id: String) -> String { device(id, "voltage") }
    /// Plain number, A.
    public func deviceCurrent(_ id: String) -> String { device(id, "current") }
    /// The plain topic of a device's `quantity`: `power`, `energy` (kWh), `voltage`, `current`
    /// (`<base>/device/<id>/<quantity>`).
    public func devicePlain(_ id: String, _ quantity: Quantity) -> String { device(id, quantity.rawValue) }
    /// JSON (retained): the animal's state, without owner data.
    public func animalState(_ id: String) -> String { base + "/animal/" + id + "/state" }
    /// JSON (retained): members, how many are on.
    public func groupState(_ id: String) -> String { base + "/group/" + id + "/state" }
    /// Plain `ON` (any member on) / `OFF` (retained).
    public func groupSwitch(_ id: String) -> String { base + "/group/" + id + "/switch" }
    /// Switches every member of a group: `ON`, `OFF`, `TOGGLE`, or JSON.
    public func groupSwitchSet(_ id: String) -> String { base + "/group/" + id + "/switch/set" }
    /// `<base>/events/<stream>/<type>`; a stream such as `device/lamp` keeps its slash.
    public func event(stream: String, type: String) -> String { base + "/events/" + stream + "/" + type }

    // MARK: In

    /// Switches a device: `ON`, `OFF`, `TOGGLE`, or JSON.
    public func deviceSwitchSet(_ id: String) -> String { device(id, "switch/set") }
    /// Sets a device's activations (JSON).
    public func deviceActivationsSet(_ id: String) -> String { device(id, "activations/set") }
    /// Admits an animal (the admission form, JSON).
    public var animalAdmit: String { base + "/animal/admit" }
    /// Discharges an animal (JSON).
    public func animalDischarge(_ id: String) -> String { base + "/animal/" + id + "/discharge" }
    /// Records an animal's vital signs (JSON).
    public func animalVitals(_ id: String) -> String { base + "/animal/" + id + "/vitals" }
    /// `<base>/request/<name>`, e.g. `request("device/add")`.
    public func request(_ name: String) -> String { base + "/request/" + name }
    /// Home Assistant's birth / last-will topic: `online` means re-publish discovery and state.
    public var homeAssistantStatus: String { discoveryPrefix + "/" + Self.statusLevel }

    /// The last level of both status topics (the hub's and Home Assistant's), which `route` and
    /// `isStatus` recognise by their bytes.
    static let statusLevel: Substring = "status"

    /// Every filter the hub subscribes to: the command topics, the same under `<base>/from/+/`, and
    /// Home Assistant's status.
    public var subscriptions: [String] {
        Self.commandFilters(under: base) + [homeAssistantStatus] + Self.commandFilters(under: base + "/" + Self.fromLevel + "/+")
    }

    /// The command topics' filters under `prefix`.
    static func commandFilters(under prefix: String) -> [String] {
        [
            prefix + "/device/+/switch/set", prefix + "/device/+/activations/set", prefix + "/group/+/switch/set", prefix + "/animal/admit",
            prefix + "/animal/+/discharge", prefix + "/animal/+/vitals", prefix + "/request/#"
        ]
    }

    /// The level of the attributed command topics: `<base>/from/<client>/...`.
    static let fromLevel = "from"

    /// The topics as a client `client` sends its commands under `<base>/from/<client>/`: the same
    /// names (``deviceSwitchSet(_:)``, ``request(_:)``, ...) one level deeper.
    public func attributed(to client: String) -> MQTTTopics {
        MQTTTopics(base: base + "/" + Self.fromLevel + "/" + client, discoveryPrefix: discoveryPrefix)
    }

    private func device(_ id: String, _ leaf: String) -> String { base + "/device/" + id + "/" + leaf }

    // MARK: Responses

    /// Where errors go for a command topic that cannot be mirrored (it holds a wildcard character, which no
    /// MQTT topic name may contain, or the mirrored name would be too long).
    public var errorResponse: String { base + "/response/error" }

    /// The answer topic of a command topic: `<base>/<path>` is answered on `<base>/response/<path>`,
    /// except `<base>/request/<name>`, answered on `<base>/response/<name>`. Nil for topics outside the base
    /// and for the hub's own output topics (`status`, `response/...`, `events/...`). A topic that holds `+` or
    /// `#`, or whose answer would not fit in an MQTT topic, is answered on `errorResponse`.
    /// Use this for `.invalid` routes; for valid ones `response(for:)` gives the same topic.
    public func response(forTopic topic: String) -> String? {
        let prefix = base + "/"
        guard topic.hasPrefix(prefix) else { return nil }
        var path = topic.dropFirst(prefix.count)
        let first = path.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        if first == "status" || first == "response" || first == "events" { return nil }
        // `<base>/from/<client>/<path>` is answered on `<base>/response/from/<client>/<path's answer>`.
        var responses = base + "/response"
        let levels = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        if first == Self.fromLevel, levels.count == 3 {
            responses += "/" + Self.fromLevel + "/" + levels[1]
            path = levels[2]
        }
        let answer: String
        if path == "request" {
            answer = responses
        } else if path.hasPrefix("request/") {
            answer = responses + "/" + path.dropFirst("request/".count)
        } else {
            answer = responses + "/" + path
        }
        if answer.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") })
            || answer.utf8.count > MQTTTopics.maxTopicBytes
        {
            return errorResponse
        }
        return answer
    }

    /// Why the hub must not answer on `topic`, an MQTT 5 response topic a request named; nil when it may.
    ///
    /// The hub never publishes where it, Home Assistant, a device or a bridge reads: an answer there would
    /// be a command (a client allowed to send only a query could so run any command, or switch a real
    /// device). Refused: a topic that is not a valid topic name (`+`, `#`, U+0000, longer than 65,535
    /// bytes), one that starts with `$` (the broker's), one that matches a filter the hub subscribes to,
    /// anything under the base topic but its `response` subtree, anything under the discovery prefix, and
    /// anything in a driver's or bridge's scope.
    /// - Parameters:
    ///   - topic: The response topic (not empty).
    ///   - deviceScopes: The filters drivers and bridges are scoped to (`MQTTRelay.scopes`).
    /// - Returns: One sentence naming the topic and the rule it breaks, or nil.
    public func responseTopicProblem(_ topic: String, deviceScopes: [String] = []) -> String? {
        let reason: String
        if let bad = topic.unicodeScalars.first(where: { $0 == "+" || $0 == "#" || $0 == "\0" }) {
            reason = "it contains \(bad == "\0" ? "the character U+0000" : "the wildcard character '\(bad)'"), which no topic name may"
        } else if topic.utf8.count > MQTTTopics.maxTopicBytes {
            reason = "it is \(topic.utf8.count) bytes long, more than a topic may be (\(MQTTTopics.maxTopicBytes))"
        } else if topic.hasPrefix("$") {
            reason = "topics that start with $ are the broker's"
        } else if let filter = subscriptions.first(where: { mqttTopic(topic, matches: $0) }) {
            reason = "the hub reads it (\(filter))"
        } else if topic == discoveryPrefix || topic.hasPrefix(discoveryPrefix + "/") {
            reason = "it is under the discovery prefix \(discoveryPrefix)/, which Home Assistant reads"
        } else if (topic == base || topic.hasPrefix(base + "/")) && topic != base + "/response" && !topic.hasPrefix(base + "/response/") {
            reason = "it is one of the hub's own topics, and under \(base)/ the hub answers only on \(base)/response/..."
        } else if let filter = deviceScopes.first(where: { mqttTopic(topic, matches: $0) }) {
            reason = "a device or bridge the hub drives reads it (\(filter)), so an answer there would be a command to it"
        } else {
            return nil
        }
        return "response topic \(JSONValue.string(MQTTTopics.shown(topic)).serialized()) is refused: \(reason); "
            + "give a topic of your own outside \(base)/ and \(discoveryPrefix)/, or one under \(base)/response/"
    }

    /// The answer topic of a routed command; nil for `.ignored`, `.invalid` (use `response(forTopic:)` with
    /// the original topic) and `.homeAssistantStatus` (not a command).
    public func response(for route: MQTTRoute) -> String? {
        switch route {
        case .command(let request): return response(for: request)
        case .attributed(let client, let request):
            // `<base>/response/from/<client>/...`: the plain answer's path under the client's level.
            guard let plain = response(for: request) else { return nil }
            let below: Substring = plain.dropFirst(base.count + "/response".count)
            let level: String = base + "/response/" + Self.fromLevel + "/" + client
            return level + below
        case .homeAssistantStatus, .ignored: return nil
        }
    }

    private func response(for request: RequestRoute) -> String? {
        switch request {
        case .switchSet(let id): return base + "/response/device/" + id + "/switch/set"
        case .activationsSet(let id): return base + "/response/device/" + id + "/activations/set"
        case .groupSwitchSet(let id): return base + "/response/group/" + id + "/switch/set"
        case .animalAdmit: return base + "/response/animal/admit"
        case .animalDischarge(let id): return base + "/response/animal/" + id + "/discharge"
        case .animalVitals(let id): return base + "/response/animal/" + id + "/vitals"
        case .request(let name): return base + "/response/" + name
        case .invalid: return nil
        }
    }

    // MARK: Routing

    /// Classifies an incoming topic. See `MQTTRoute`.
    public func route(topic: String) -> MQTTRoute {
        if Self.below(discoveryPrefix, topic) == Self.statusLevel { return .homeAssistantStatus }
        guard let rest = Self.below(base, topic) else { return .ignored }
        if let request = RequestRoute(path: rest, named: topic, base: base) { return .command(request) }
        // `<base>/from/<client>/<path>`: split by bytes (every message is routed).
        guard let below = Self.below(Self.fromLevel, String(rest)), let slash = below.utf8.firstIndex(of: UInt8(ascii: "/")) else {
            return .ignored
        }
        let client = String(below[..<slash])
        let path = below[below.utf8.index(after: slash)...]
        guard let request = RequestRoute(path: path, named: topic, base: base + "/" + Self.fromLevel + "/" + client) else {
            return .ignored
        }
        return .attributed(client: client, request)
    }

    /// Whether `topic` is the hub's own `<base>/status`, told without building that topic (every
    /// message the hub receives is checked).
    public func isStatus(_ topic: String) -> Bool { Self.below(base, topic) == Self.statusLevel }

    /// The part of `topic` after `prefix` and a slash; nil when `topic` does not start so. Compares
    /// bytes and builds no string: the command path routes every message with it.
    static func below(_ prefix: String, _ topic: String) -> Substring? {
        let t = topic.utf8, p = prefix.utf8
        guard t.count > p.count, t.starts(with: p) else { return nil }
        let slash = t.index(t.startIndex, offsetBy: p.count)
        guard t[slash] == UInt8(ascii: "/") else { return nil }
        return topic[t.index(after: slash)...]
    }

    /// At most 80 characters of `text`, for error messages (see ``Shown``).
    static func shown(_ text: some StringProtocol) -> String { Shown.text(text) }
}

/// What an incoming topic is, for the hub.
public enum MQTTRoute: Sendable, Equatable {
    /// A request or command topic (`<base>/device/<id>/switch/set`, `<base>/request/<name>`, ...),
    /// in the engine's transport-neutral form.
    case command(RequestRoute)
    /// `<base>/from/<client>/<path>`: a command as `.command`, sent by the broker user `client`
    /// (a broker ACL such as `pattern write hub/from/%u/#` vouches for it). `client` is as the topic
    /// has it: ``ClientName`` says whether it is valid.
    case attributed(client: String, RequestRoute)
    /// `<prefix>/status`: Home Assistant's birth (`online`) or last will.
    case homeAssistantStatus
    /// Anything else, e.g. the hub's own state topics: not for the hub to act on.
    case ignored

    /// `MQTTTopics(base:).route(topic:)`.
    public static func route(topic: String, topics: MQTTTopics = MQTTTopics()) -> MQTTRoute {
        topics.route(topic: topic)
    }

    /// The command route, when the topic is one (plain or attributed).
    public var request: RequestRoute? {
        switch self {
        case .command(let r), .attributed(_, let r): return r
        case .homeAssistantStatus, .ignored: return nil
        }
    }

    /// The client of an attributed command (`<base>/from/<client>/...`); nil otherwise.
    public var client: String? {
        if case .attributed(let client, _) = self { return client }
        return nil
    }
}
