import HubDomain

/// The requests and commands of the hub's surfaces, answered the same way whatever carried them:
/// the MQTT surface (`<base>/request/<name>`, the command topics) and the HTTP API (`/api/...`)
/// both parse with ``RequestParser/parse(route:message:now:)`` and hand the result here. Commands go
/// through the one ``CommandService``; queries are answered from the read models; the answer is the
/// JSON both transports send (`{"status":"ok","data":...}` or `{"status":"error","error":...,"code":...}`).
public struct Requests: Sendable {
    let hub: Hub
    let commands: CommandService
    package let drivers: DriverHost
    /// Live beacon presence for the animals' state, and the beacons no animal wears.
    let bridges: BridgeHost

    /// Requests answered from `hub`, commands run through `commands`, driver and beacon questions asked of `drivers` and `bridges`.
    public init(hub: Hub, commands: CommandService, drivers: DriverHost, bridges: BridgeHost) {
        self.hub = hub
        self.commands = commands
        self.drivers = drivers
        self.bridges = bridges
    }

    /// Runs a parsed request: its commands (recorded with `actor`) or its query.
    ///
    /// - Parameters:
    ///   - parsed: what ``RequestParser/parse(route:message:now:)`` read.
    ///   - actor: who is acting (`mqtt`, `http:admin`, ...), recorded on every event the commands cause,
    ///     with the request's declared cause (``RequestParser/ParsedCommand/cause``).
    /// - Returns: the answer, with the request's `id` and `transaction` echoed.
    public func answer(_ parsed: RequestParser.ParsedCommand, actor: String) async -> Answer {
        if case .history(let query)? = parsed.query {
            do {
                return .ok(HistoryJSON.data(try await hub.history(query)), echo: parsed.echo)
            } catch {
                return .refused(error.message, code: error.code, kind: RejectionKind(code: error.code), echo: parsed.echo)
            }
        }
        if let query = parsed.query { return .ok(await answer(query), echo: parsed.echo) }
        let commands = parsed.commands.enumerated().map { index, command in
            (command: command, commandId: index < parsed.commandIds.count ? parsed.commandIds[index] : parsed.commandId)
        }
        return await self.commands.execute(commands, actor: actor, cause: parsed.cause).answer(echo: parsed.echo)
    }

    /// The `data` of a query's answer, from the read models (`null` for an unknown device or animal).
    public func answer(_ query: RequestParser.Query) async -> JSONValue {
        let state = await hub.state
        let today = Civil.dayKey(dayNumber: Civil.dayNumber(micros: currentMicros()))
        func device(_ d: DeviceRecord) -> JSONValue {
            StateJSON.device(Hub.DeviceView(state, d), dayKey: today, now: currentMicros())
        }
        switch query {
        case .devices: return .array(state.devices.active.map(device))
        case .device(let id): return state.devices[id].map(device) ?? .null
        case .animals:
            let live = await bridges.presence
            return .array(state.animals.byId.values.sorted { $0.id < $1.id }.map { StateJSON.animal($0, live: live[$0.id]) })
        case .animal(let id):
            let live = await bridges.presence[id]
            return state.animals[id].map { StateJSON.animal($0, live: live) } ?? .null
        case .discovered:
            return .array(
                await drivers.discovered().map { d in
                    .object([
                        ("id", .string(d.suggestedId)), ("driver", .string(d.driver)), ("name", .string(d.name)),
                        ("config", (try? JSONValue.parse(Array(d.settingsJSON.utf8))) ?? .string(d.settingsJSON)),
                        ("hardware_id", d.hardwareId.map { .string($0) } ?? .null)
                    ])
                })
        case .unknownBeacons:
            return await bridges.unknownBeacons()
        case .groups:
            return .array(state.household.groups.values.sorted { $0.id < $1.id }.map { StateJSON.group($0, devices: state.devices) })
        case .scenes:
            return .array(state.household.scenes.values.sorted { $0.id < $1.id }.map(StateJSON.scene))
        case .history:
            return .null  // answered by answer(_:actor:), which can refuse
        }
    }
}
