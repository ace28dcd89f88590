import HubDomain
import HubEngine
import Hummingbird

/// The console's paths: the pages (`/`, `/devices/{id}`, `/animals`, `/animals/{id}`, `/audit`,
/// `/discovered`), its assets, its live updates (`/console/events`) and its actions
/// (`POST /console/command`, `POST /console/photo`). Every action goes through the one command
/// path with the request's actor; the pages only read.
struct ConsoleRoutes: Sendable {
    let routes: HubRoutes

    var hub: Hub { routes.hub }

    func add(to router: Router<HubRequestContext>) {
        router.get("/") { _, _ in await local { await devicesPage() } }
        router.get("devices/{id}") { _, context in await local { await devicePage(context.parameters.get("id") ?? "") } }
        router.get("animals") { request, _ in await local { await animalsPage(request) } }
        router.get("animals/{id}") { request, context in await local { await animalPage(context.parameters.get("id") ?? "", request) } }
        router.get("audit") { request, _ in await local { await auditPage(request) } }
        router.get("discovered") { _, _ in await local { await discoveredPage() } }
        router.get("console/console.css") { _, _ in ConsoleResponse.asset(ConsoleAssets.css, contentType: "text/css; charset=utf-8") }
        router.get("console/console.js") { _, _ in ConsoleResponse.asset(ConsoleAssets.js, contentType: "text/javascript; charset=utf-8") }
        router.get("console/events") { request, _ in
            ConsoleEventStream(hub: hub, feed: routes.console, entriesOf: request.uri.queryParameters["entries"].map(String.init))
                .response()
        }
        // Not the stream's own: a HEAD must not subscribe a stream that is never read.
        router.head("console/events") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"])
        }
        router.get("console/photos/{name}") { _, context in photos.serve(context.parameters.get("name") ?? "") }
        router.post("console/command") { request, context in await command(request, actor: context.actor) }
        router.post("console/photo") { request, _ in await photos.upload(request) }
    }

    var photos: PhotoStore { PhotoStore(dataDirectory: routes.dataDirectory) }

    /// Renders a page with the household's time zone (``LocalTime/current``).
    func local(_ render: () async -> Response) async -> Response {
        await LocalTime.$current.withValue(routes.time) { await render() }
    }

    func devicesPage() async -> Response {
        DevicesPage(snapshot: await hub.read { DevicesSnapshot($0) }, drivers: routes.requests.drivers.catalog.factories.keys.sorted()).page
            .response
    }

    /// `POST /console/command`: one command object (or a list, run in order until one is refused),
    /// exactly as on MQTT and `hub exec` (`CommandJSON`); the answer is `hub exec`'s line.
    func command(_ request: Request, actor: String) async -> Response {
        if let refusal = BodyLimits.unsupportedType(request, accepted: ["application/json"]) { return refusal }
        let body: ByteBuffer
        switch await BodyLimits.collect(request, limit: BodyLimits.limit(for: "/console/command")) {
        case .success(let read): body = read
        case .failure(let refusal): return refusal.response
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(Array(body.readableBytesView))
        } catch {
            return ConsoleResponse.error(.badRequest, code: "bad_json", "the body must be a JSON command object: \(error)")
        }
        let items: [JSONValue]
        if case .array(let list) = value { items = list } else { items = [value] }
        guard !items.isEmpty else { return ConsoleResponse.error(.badRequest, code: "bad_command", "an empty list of commands") }
        var parsed: [(command: HubCommand, commandId: String?)] = []
        var causes: Set<String?> = []
        for (i, item) in items.enumerated() {
            let place = items.count > 1 ? "command \(i + 1): " : ""
            do {
                parsed.append(try CommandJSON.parse(item, now: currentMicros()))
                causes.insert(try RequestParser.cause(item))
            } catch let error as RequestError {
                return ConsoleResponse.error(.badRequest, code: error.code ?? "bad_command", place + error.message)
            } catch {
                return ConsoleResponse.error(.badRequest, code: "bad_command", place + "\(error)")
            }
        }
        // A list is one action: it declares one cause (or none), recorded on each of its commands.
        guard causes.count == 1, let cause = causes.first else {
            return ConsoleResponse.error(
                .badRequest, code: DeclaredCause.invalidCode, "the commands of one list declare different causes: give them one")
        }
        let answer =
            parsed.count == 1
            ? await routes.commands.execute(parsed[0].command, commandId: parsed[0].commandId, actor: actor, cause: cause)
            : await routes.commands.execute(parsed, actor: actor, cause: cause)
        // The status by the refusal's kind, as the API answers (a refused switch is 409, an unknown
        // device 404, a full disk 507, not the active hub 503).
        var response = ConsoleResponse.json(APIResponders.status(of: answer.rejection?.kind), answer.execLine)
        if let code = answer.rejection?.code, let after = APIResponders.retryAfter(code: code) { response.headers[.retryAfter] = after }
        return response
    }
}

extension ConsoleRoutes {
    func devicePage(_ id: String) async -> Response {
        guard let snapshot = await hub.read({ DevicePage.Snapshot($0, id: id) }) else {
            return ConsoleResponse.notFound(.devices, "No device \"\(id)\" is registered.")
        }
        let now = currentMicros()
        let charts = await DeviceCharts.load(hub: hub, device: id, now: now)
        let store = hub.store, stream = StreamKey.device(id).stream
        let reading = Array(EventType.readingRecorded.rawValue.utf8)  // DevicePage.lists(type:), on the bytes
        let events: Result<LogScan.Page, LogUnreadable>
        do {
            events = .success(
                try await Self.offloaded {
                    try await LogScan(store: store).newest(before: store.lastSequence, limit: DevicePage.recentEvents, budget: 20_000) {
                        !$0.typeEquals(reading) && $0.stream == stream
                    }
                })
        } catch {
            events = .failure(LogUnreadable(message: Self.unreadable(error)))
        }
        return DevicePage(snapshot: snapshot, charts: charts, events: events, now: now).page.response
    }
}
