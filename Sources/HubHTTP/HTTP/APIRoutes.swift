import HubEngine
import Hummingbird

/// One route of the JSON API: the table the router is built from, and that the test compares with
/// `docs/openapi.json` in both directions.
struct APIRoute: Sendable, Equatable {
    /// Where the request's body (or query) goes.
    enum Target: Sendable, Equatable {
        /// The request path (``RequestRoute``) that takes the same payload, `{id}` filled from the
        /// URL's path (`device/{id}/switch/set`): the body is parsed exactly as a message on the
        /// MQTT topic `<base>/<path>` is.
        case request(String)
        /// A read-only request (`request/<name>`) whose payload is the query string as a JSON object
        /// of strings, plus `{"id": ...}` from the path when it has one.
        case query(String)
        /// The log itself: `after` and `limit`.
        case events
    }

    var method: HTTPRequest.Method
    /// Hummingbird's form (`/api/device/{id}/switch`), which is OpenAPI's form too.
    var path: String
    var target: Target

    /// The body's `Content-Type`s the route reads (any other is refused with 415): JSON, and plain
    /// text where the request takes a bare word (`ON`); none for a GET.
    var mediaTypes: [String] {
        switch target {
        case .request(let path) where path.hasSuffix("/switch/set"): return ["application/json", "text/plain"]
        case .request: return ["application/json"]
        case .query, .events: return []
        }
    }
}

/// The JSON API: every request and command of the MQTT surface (docs/mqtt.md), with the same
/// payloads and the same answers, and GET conveniences for what is read most. docs/http.md
/// explains each; docs/openapi.json describes them.
enum APIRoutes {
    static let all: [APIRoute] = {
        var routes: [APIRoute] = [
            APIRoute(method: .post, path: "/api/command", target: .request("request/command")),
            APIRoute(method: .post, path: "/api/device/{id}/switch", target: .request("device/{id}/switch/set")),
            APIRoute(method: .post, path: "/api/device/{id}/activations", target: .request("device/{id}/activations/set")),
            APIRoute(method: .post, path: "/api/group/{id}/switch", target: .request("group/{id}/switch/set")),
            APIRoute(method: .post, path: "/api/animal/admit", target: .request("animal/admit")),
            APIRoute(method: .post, path: "/api/animal/{id}/discharge", target: .request("animal/{id}/discharge")),
            APIRoute(method: .post, path: "/api/animal/{id}/vitals", target: .request("animal/{id}/vitals")),
            APIRoute(method: .get, path: "/api/devices", target: .query("devices")),
            APIRoute(method: .get, path: "/api/devices/{id}", target: .query("device/get")),
            APIRoute(method: .get, path: "/api/animals", target: .query("animals")),
            APIRoute(method: .get, path: "/api/animals/{id}", target: .query("animal/get")),
            APIRoute(method: .get, path: "/api/groups", target: .query("groups")),
            APIRoute(method: .get, path: "/api/scenes", target: .query("scenes")),
            APIRoute(method: .get, path: "/api/discovered", target: .query("discovered")),
            APIRoute(method: .get, path: "/api/beacons/unknown", target: .query("beacons/unknown")),
            APIRoute(method: .get, path: "/api/history", target: .query("history")),
            APIRoute(method: .get, path: "/api/events", target: .events)
        ]
        // Every `<base>/request/<name>` topic, with the same payload.
        for name in RequestParser.requestNames {
            routes.append(APIRoute(method: .post, path: "/api/request/" + name, target: .request("request/" + name)))
        }
        return routes
    }()

    /// Adds every route of ``all`` to `router`, answered by `responders`.
    static func register(on router: Router<HubRequestContext>, _ responders: APIResponders) {
        for route in all {
            router.on(RouterPath(route.path), method: route.method) { request, context in
                try await responders.respond(route, request, context: context)
            }
        }
    }
}
