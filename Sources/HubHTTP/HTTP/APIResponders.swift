import HubDomain
import HubEngine
import HubLog
import Hummingbird

/// Answers the JSON API (``APIRoutes``). Nothing here decides anything: a path is mapped to the
/// engine's ``RequestRoute`` and its payload parsed by ``RequestParser`` (strict keys, 64 KiB), as
/// the MQTT surface parses the same payload; ``Requests`` answers it (the one command path, actor
/// from ``HTTPAccess``), and the answer's body is sent with the status its kind calls for
/// (``status(of:)``).
struct APIResponders: Sendable {
    let hub: Hub
    let requests: Requests
    /// The base the MQTT surface's topics are under (`hub` without MQTT): messages about a request's
    /// address name it as the topic that takes the same payload, so an id in a path is checked and
    /// named exactly as one in a topic.
    let base: String

    static let eventsLimit = 1000

    func respond(_ route: APIRoute, _ request: Request, context: HubRequestContext) async throws -> Response {
        let id: String?
        switch Self.pathId(context.parameters.get("id")) {
        case .success(let decoded): id = decoded
        case .failure(let refusal): return refusal.response
        }
        switch route.target {
        case .request(let template):
            if let refusal = BodyLimits.unsupportedType(request, accepted: route.mediaTypes) { return refusal }
            let body: ByteBuffer
            switch await BodyLimits.collect(request, limit: RequestParser.maxPayloadBytes) {
            case .success(let read): body = read
            case .failure(let refusal): return refusal.response
            }
            return Self.response(await answer(path: template, id: id, payload: Array(buffer: body), actor: context.actor))
        case .query(let name):
            var fields: [(String, JSONValue)] = request.uri.queryParameters.map { (String($0.key), .string(String($0.value))) }
            if let id { fields.insert(("id", .string(id)), at: 0) }
            let payload = fields.isEmpty ? [] : Array(JSONValue.object(fields).serialized().utf8)
            let result = await answer(path: "request/" + name, id: nil, payload: payload, actor: context.actor)
            if let id, result.refusal == nil, result.body["data"] == .null {
                // `request/device/get` answers `data: null` for an unknown id; a GET of its URL is a 404.
                let kind = name == "device/get" ? "device" : "animal"
                return Self.response(.refused("no \(kind) \"\(Shown.text(id))\"", code: "unknown_\(kind)", kind: .notFound))
            }
            return Self.response(result)
        case .events:
            return await events(request)
        }
    }

    /// The `{id}` of a path, percent-decoded (`living%20room` is `living room`), so that what is
    /// said about it names the id, never a `%`: it is then checked as the same id in a topic or a
    /// request is.
    static func pathId(_ raw: String?) -> Result<String?, BodyLimits.Refusal> {
        guard let raw else { return .success(nil) }
        guard let decoded = raw.removingPercentEncoding else {
            return .failure(
                BodyLimits.Refusal(
                    response: response(
                        .refused(
                            "the id in the path, \"\(Shown.text(raw))\", is not valid percent-encoding", code: "invalid_id", kind: .invalid)
                    )))
        }
        return .success(decoded)
    }

    /// Parses `payload` as a request on the path `template` (`device/{id}/switch/set`, `{id}`
    /// filled), as a message on the topic `<base>/<path>` is, and answers it.
    func answer(path template: String, id: String?, payload: [UInt8], actor: String) async -> Answer {
        if let id, id.contains("/") {
            // A decoded `/` would make another topic of the path: refused as a topic level would be.
            let kind = template.split(separator: "/").first.map(String.init) ?? "an"
            return .refused(
                "\(kind) id \"\(Shown.text(id))\" contains the character '/': ids are 1 to \(Identifier.maxLength) "
                    + "characters of A-Z, a-z, 0-9, _ and -", code: nil, kind: .invalid)
        }
        let path = template.replacingOccurrences(of: "{id}", with: id ?? "")
        guard let route = RequestRoute(path: Substring(path), named: base + "/" + path, base: base) else {
            return .refused(
                "id \"\(Shown.text(id ?? ""))\" is not valid: ids are 1 to \(Identifier.maxLength) "
                    + "characters of A-Z, a-z, 0-9, _ and -", code: nil, kind: .invalid)
        }
        do {
            let parsed = try RequestParser.parse(route: route, message: payload, now: currentMicros())
            return await requests.answer(parsed, actor: actor)
        } catch {
            return .refused(error)
        }
    }

    /// `GET /api/events?after=SEQ&limit=N`: the events after `after` (default 0), at most `limit`
    /// (default 100, at most 1000), each as `hub events` prints it.
    func events(_ request: Request) async -> Response {
        var after: UInt64 = 0, limit = 100
        for (key, value) in request.uri.queryParameters {
            switch key {
            case "after":
                guard let n = UInt64(value) else {
                    return Self.response(
                        .refused("after: expected a sequence number (0 or more), not \"\(value)\"", code: nil, kind: .invalid))
                }
                after = n
            case "limit":
                guard let n = Int(value), (1...Self.eventsLimit).contains(n) else {
                    return Self.response(
                        .refused("limit: expected a number from 1 to \(Self.eventsLimit), not \"\(value)\"", code: nil, kind: .invalid))
                }
                limit = n
            default:
                return Self.response(.refused("unknown parameter \"\(Shown.text(key))\"; known: after, limit", code: nil, kind: .invalid))
            }
        }
        var lines: [JSONValue] = []
        let last = hub.store.lastSequence
        guard after < last else { return Self.response(.ok(.array([]))) }
        do {
            try await hub.store.read(from: after + 1, through: min(last, after + UInt64(limit))) { record in
                lines.append(
                    EventLines.json(
                        record,
                        event: try? HubEvent.decode(
                            type: record.type, schemaVersion: record.schemaVersion,
                            payload: record.payload)))
                return true
            }
        } catch {
            return Self.response(.refused("the log could not be read: \(error)", code: "internal", kind: .internal))
        }
        return Self.response(.ok(.array(lines)))
    }

    /// The answer as the body, with the status its kind calls for (and `Retry-After` when the hub
    /// cannot take it now: the active hub, or this one once its log is back, answers a retry).
    static func response(_ answer: Answer) -> Response {
        var response = ObservabilityResponders.json(status(of: answer.refusal), answer.body)
        if answer.refusal == .unavailable { response.headers[.retryAfter] = answer.code.flatMap(retryAfter(code:)) ?? retryAfterSeconds }
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

    /// 200 when it succeeded; for a refusal, by its kind: invalid 400, not found 404, conflict 409,
    /// unavailable 503, storage 507, the hub's own failure 500.
    static func status(of refusal: RejectionKind?) -> HTTPResponse.Status {
        switch refusal {
        case nil: return .ok
        case .invalid?: return .badRequest
        case .notFound?: return .notFound
        case .conflict?: return .conflict
        case .unavailable?: return .serviceUnavailable
        case .storage?: return HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
        case .internal?: return .internalServerError
        }
    }
}
