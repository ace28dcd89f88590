import HubDomain
import HubEngine
import Hummingbird

/// `GET /console/events`: server-sent events for one open page, from ``ConsoleFeed``.
///
/// - `event: device` with the device's state object (the same JSON as `<base>/device/<id>/state`)
///   whenever an event on its stream is committed;
/// - `event: request` with `{"id","text"}` after a device's, when a switch of it was asked for:
///   the device page's line, "Switched on by mqtt:alice, automation.porch_lights, 2026-11-27 18:00:02";
/// - `event: entry` with `{"id","seq","row"}`, to a page that asked for the events of one device
///   (`?entries=<id>`, the device page), for every event on its stream the page lists (all but
///   readings), in the log's order: the row of its "Recent events" table (`row`, its HTML), not
///   coalesced;
/// - `event: change` with `{"seq","stream","type"}` for every other stream;
/// - `event: reload` when the page fell too far behind (its buffer overflowed) or the hub stops:
///   the page reloads itself and the stream ends.
///
/// Changes that arrive together are coalesced: a device changed five times is sent once, as it is now.
struct ConsoleEventStream: Sendable {
    let hub: Hub
    let feed: ConsoleFeed
    /// The device whose events this page shows as rows (`?entries=<id>`); nil: none.
    var entriesOf: String? = nil
    /// A comment line is sent this often, so a closed connection is noticed without waiting for an event.
    var keepAlive: Duration = .seconds(15)

    func response() -> Response {
        guard let subscribed = feed.subscribe() else {
            return ConsoleResponse.text(.serviceUnavailable, "the hub is stopping\n")
        }
        let (id, subscription) = subscribed
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store"]
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { [self] writer in
                let pinger = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: keepAlive)
                        subscription.poke()
                    }
                }
                defer {
                    pinger.cancel()
                    feed.unsubscribe(id)
                }
                try await writer.write(ByteBuffer(string: "retry: 2000\n: live updates from the hub's log\n\n"))
                for await _ in subscription.wakes {
                    let (changes, overflowed, finished) = subscription.take()
                    if overflowed || finished {
                        try await writer.write(ByteBuffer(string: Self.frame("reload", overflowed ? "behind" : "stopping")))
                        break
                    }
                    if changes.isEmpty {
                        try await writer.write(ByteBuffer(string: ": ping\n\n"))
                    } else {
                        try await writer.write(ByteBuffer(string: await frames(for: changes)))
                    }
                }
                try await writer.finish(nil)
            })
    }

    /// The frames for a batch of changes: one per changed device (as it is now), one per other change.
    func frames(for changes: [ConsoleChange]) async -> String {
        var devices: [String] = [], seen: Set<String> = []
        var requests: [String: SwitchRequestLine] = [:]  // the latest per device
        var entries: [(device: String, entry: LogScan.Entry)] = []
        var out = ""
        for change in changes {
            if let key = StreamKey(stream: change.stream), let device = key.deviceId {
                if seen.insert(device).inserted { devices.append(device) }
                if let request = change.request { requests[device] = request }
                if device == entriesOf, let record = change.record { entries.append((device, LogScan.entry(record, event: change.event))) }
            } else {
                out += Self.frame(
                    "change",
                    JSONValue.object([
                        ("seq", .number(Double(change.sequence))),
                        ("stream", .string(change.stream)), ("type", .string(change.type))
                    ]).serialized())
            }
        }
        if !devices.isEmpty {
            let now = currentMicros()
            let views = await hub.views(devices: devices, animals: []).devices
            for view in views {
                out += Self.frame(
                    "device", StateJSON.device(view, dayKey: Civil.dayKey(dayNumber: Civil.dayNumber(micros: now))).serialized())
            }
            for device in devices {
                guard let request = requests[device] else { continue }
                out += Self.frame("request", JSONValue.object([("id", .string(device)), ("text", .string(request.text))]).serialized())
            }
            for (device, entry) in entries {
                out += Self.frame(
                    "entry",
                    JSONValue.object([
                        ("id", .string(device)), ("seq", .number(Double(entry.sequence))),
                        ("row", .string(EventTable.row(entry, showStream: false).text))
                    ]).serialized())
            }
        }
        return out
    }

    /// One server-sent event; `data` must be one line (JSON is).
    static func frame(_ event: String, _ data: String) -> String { "event: \(event)\ndata: \(data)\n\n" }
}
