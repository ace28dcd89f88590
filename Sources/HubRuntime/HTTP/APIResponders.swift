import HubDomain
import HubLog
import Hummingbird

/// Answers the JSON API (``APIRoutes``). Nothing here decides anything: a request is parsed as
/// the MQTT surface parses the same payload (``MQTTCommands/parse(route:message:now:)``, strict
/// keys, 64 KiB), answered by ``Requests`` (the one command path, actor from ``HTTPAccess``), and
/// sent with the MQTT answer as its body and a status that says the outcome (``status(of:)``).
struct APIResponders: Sendable {
    let hub: Hub
    let requests: Requests
    /// The surface's topics (or the default ones without MQTT): a route's target topic is routed
    /// through them, so an id in a path is checked exactly as one in a topic.
    let topics: MQTTTopics

    static let eventsLimit = 1000

    func respond(_ route: APIRoute, _ request: Request, context: HubRequestContext) async throws -> Response {
        let id: String?
        switch Self.pathId(context.parameters.get("id")) {
        case .success(let decoded): id = decoded
        case .failure(let refusal): return refusal.response
        }
        switch route.target {
        case .topic(let template):
            if let refusal = BodyLimits.unsupportedType(request, accepted: route.mediaTypes) { return refusal }
            let body: ByteBuffer
            switch await BodyLimits.collect(request, limit: MQTTCommands.maxPayloadBytes) {
            case .success(let read): body = read
            case .failure(let refusal): return refusal.response
            }
            return Self.response(await answer(topic: template, id: id, payload: Array(buffer: body), actor: context.actor))
        case .query(let name):
            var fields: [(String, JSONValue)] = request.uri.queryParameters.map { (String($0.key), .string(String($0.value))) }
            if let id { fields.insert(("id", .string(id)), at: 0) }
            let payload = fields.isEmpty ? [] : Array(JSONValue.object(fields).serialized().utf8)
            let result = await answer(topic: "request/" + name, id: nil, payload: payload, actor: context.actor)
            if let id, result["status"] == "ok", result["data"] == .null {
                // `request/device/get` answers `data: null` for an unknown id; a GET of its URL is a 404.
                let kind = name == "device/get" ? "device" : "animal"
                return Self.response(MQTTResponse.error("no \(kind) \"\(MQTTTopics.shown(id))\"", code: "unknown_\(kind)"))
            }
            return Self.response(result)
        case .events:
            return events(request)
        }
    }

    /// The `{id}` of a path, percent-decoded (`living%20room` is `living room`), so that what is
    /// said about it names the id, never a `%`: it is then checked as the same id in a topic or a
    /// request is.
    static func pathId(_ raw: String?) -> Result<String?, BodyLimits.Refusal> {
        guard let raw else { return .success(nil) }
        guard let decoded = raw.removingPercentEncoding else {
            return .failure(BodyLimits.Refusal(response: response(MQTTResponse.error(
                "the id in the path, \"\(MQTTTopics.shown(raw))\", is not valid percent-encoding", code: "invalid_id"))))
        }
        return .success(decoded)
    }

    /// Parses `payload` as a message on `<base>/<template>` would be, and answers it.
    func answer(topic template: String, id: String?, payload: [UInt8], actor: String) async -> JSONValue {
        if let id, id.contains("/") {
            // A decoded `/` would make another topic of the path: refused as a topic level would be.
            let kind = template.split(separator: "/").first.map(String.init) ?? "an"
            return MQTTResponse.error("\(kind) id \"\(MQTTTopics.shown(id))\" contains the character '/': ids are 1 to \(Identifier.maxLength) "
                                      + "characters of A-Z, a-z, 0-9, _ and -")
        }
        let route = topics.route(topic: topics.base + "/" + template.replacingOccurrences(of: "{id}", with: id ?? ""))
        if route == .ignored {
            return (MQTTResponse.error("id \"\(MQTTTopics.shown(id ?? ""))\" is not valid: ids are 1 to \(Identifier.maxLength) "
                                                  + "characters of A-Z, a-z, 0-9, _ and -"))
        }
        do {
            let parsed = try MQTTCommands.parse(route: route, message: payload, now: currentMicros())
            return await requests.answer(parsed, actor: actor)
        } catch {
            return MQTTResponse.error(error)
        }
    }

    /// `GET /api/events?after=SEQ&limit=N`: the events after `after` (default 0), at most `limit`
    /// (default 100, at most 1000), each as `hub events` prints it.
    func events(_ request: Request) -> Response {
        var after: UInt64 = 0, limit = 100
        for (key, value) in request.uri.queryParameters {
            switch key {
            case "after":
                guard let n = UInt64(value) else { return Self.response(MQTTResponse.error("after: expected a sequence number (0 or more), not \"\(value)\"")) }
                after = n
            case "limit":
                guard let n = Int(value), (1...Self.eventsLimit).contains(n) else {
                    return Self.response(MQTTResponse.error("limit: expected a number from 1 to \(Self.eventsLimit), not \"\(value)\""))
                }
                limit = n
            default:
                return Self.response(MQTTResponse.error("unknown parameter \"\(MQTTTopics.shown(key))\"; known: after, limit"))
            }
        }
        var lines: [JSONValue] = []
        let last = hub.store.lastSequence
        guard after < last else { return Self.response(MQTTResponse.ok(.array([]))) }
        do {
            try hub.store.read(from: after + 1, through: min(last, after + UInt64(limit))) { record in
                lines.append(EventLines.json(record, event: try? HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion,
                                                                                 payload: record.payload)))
                return true
            }
        } catch {
            return Self.response(MQTTResponse.error("the log could not be read: \(error)", code: "internal"))
        }
        return Self.response(MQTTResponse.ok(.array(lines)))
    }

    /// The answer as the body, with the status its outcome calls for (and `Retry-After` when
    /// the hub is not the active one, or its log's database cannot be reached: a retry is answered).
    static func response(_ answer: JSONValue, status: HTTPResponse.Status? = nil) -> Response {
        var response = ObservabilityResponders.json(status ?? Self.status(of: answer), answer)
        if case .string(let code)? = answer["code"], let after = retryAfter(code: code) { response.headers[.retryAfter] = after }
        return response
    }

    /// When to send again a command refused with `not_active`: about the time a standby takes to
    /// take over an expired lease.
    static let retryAfterSeconds = "3"

    /// When to send again a command refused with `log_unavailable`: the hub connects to its
    /// database again at most a second after it is back.
    static let logRetryAfterSeconds = "1"

    /// The `Retry-After` of an answer with this code, or nil when a retry would not help.
    static func retryAfter(code: String) -> String? {
        switch code {
        case CommandService.notActive: return retryAfterSeconds
        case CommandService.logUnavailable: return logRetryAfterSeconds
        default: return nil
        }
    }

    /// 200 for `ok`; for an error, by its code: none (a malformed request) 400, an unknown subject
    /// 404, a state that forbids it 409, a full disk 507, not the active hub or the log's database
    /// out of reach 503, the hub's own
    /// failure 500, else 400.
    static func status(of answer: JSONValue) -> HTTPResponse.Status {
        guard answer["status"] != "ok" else { return .ok }
        guard case .string(let code)? = answer["code"] else { return .badRequest }
        switch code {
        case "unknown_device", "unknown_animal", "unknown_activation", "unknown_subject", "unknown_group", "unknown_scene":
            return .notFound
        case "device_exists", "device_removed", "activation_exists", "activation_repeat_conflict", "activation_slots_full",
             "animal_already_admitted", "animal_not_admitted", "beacon_in_use", "beacon_mismatch", "hardware_in_use", "manual_mode":
            return .conflict
        case "storage_full": return HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
        case CommandService.notActive, CommandService.logUnavailable: return .serviceUnavailable
        case "too_large": return .contentTooLarge
        case "unsupported_media_type": return .unsupportedMediaType
        case "method_not_allowed": return .methodNotAllowed
        case "unknown_host": return HTTPResponse.Status(code: 421, reasonPhrase: "Misdirected Request")
        case "internal": return .internalServerError
        case "unauthorized": return .unauthorized
        case "cross_site", "csrf": return .forbidden
        default: return .badRequest
        }
    }
}
