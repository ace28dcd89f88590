import DriverAPI
import HubDomain
import HubLog
import HubSchedule
import Logging
import Synchronization

/// The one command path. Every entry point hands its commands here: the MQTT surface, `hub exec`,
/// the scheduler, the drivers' and bridges' observations, and the HTTP console to come. So every
/// command gets the same checks (a known driver, a repeat the device can hold), the same fan-out
/// (a group, a scene or "all off" switches each member and waits for its outcome) and one answer
/// type, `CommandAnswer`, that each transport renders.
///
/// A command the log cannot take (a full disk, a stopped writer) is never dropped silently: the
/// answer says so (`storage_full` for a full disk, `internal` otherwise), the failure is logged
/// with its cause and counted (`unrecorded`).
public struct CommandService: Sendable {
    /// The hub the commands are decided and logged by.
    public let hub: Hub
    package let catalog: DriverCatalog
    let confirmTimeout: Duration
    let logger: Logger
    /// With a hot standby (or a derived lease): whether this hub may still act as the active one.
    /// While it may not, every command is answered `not_active` before it is decided.
    let lease: LeaseStanding?
    private let unrecordedCount = Counter()

    /// - Parameters:
    ///   - hub: the log and read models the commands are decided against.
    ///   - catalog: the drivers this hub has (for `unknown_driver` and what a device can hold).
    ///   - confirmTimeout: how long a multi-device command waits for each member's confirmation;
    ///     zero (as in `hub exec`, where no driver runs) answers at once with `pending` members.
    ///   - logger: where failures to record a command are reported.
    ///   - lease: the active hub's lease (nil: the only hub, no lease): while it is not confirmed
    ///     (``LeaseStanding/mayAct``), commands are answered `not_active` and nothing is appended.
    public init(hub: Hub, catalog: DriverCatalog, confirmTimeout: Duration, logger: Logger, lease: LeaseStanding? = nil) {
        self.hub = hub
        self.catalog = catalog
        self.confirmTimeout = confirmTimeout
        self.logger = logger
        self.lease = lease
    }

    /// Commands the log could not record since start (each was logged at error level).
    public var unrecorded: Int { unrecordedCount.value }

    /// Checks, decides, appends and (for multi-device commands) fans out one command.
    ///
    /// - Parameters:
    ///   - command: what to do.
    ///   - commandId: the idempotency key: a retried id returns the original outcome, appending nothing.
    ///   - actor: who is acting (`mqtt`, `cli`, `driver:kasa`, `scheduler`...), recorded on the events.
    ///   - cause: why, as the sender declared it (`automation.porch_lights`, checked by
    ///     ``DeclaredCause``), recorded on the events beside the actor (``Attribution``); nil: none.
    ///   - now: the events' time, µs since the epoch.
    ///   - durability: ``Durability/observation`` for what a driver or bridge reports (no client
    ///     waits on it: its events may be synced a bounded delay later); immediate otherwise.
    /// - Returns: the answer; never throws (a failure to record is an answer too).
    @discardableResult
    public func execute(
        _ command: HubCommand, commandId: String? = nil, actor: String, cause: String? = nil, now: Int64 = currentMicros(),
        durability: Durability = .immediate
    ) async -> CommandAnswer {
        let answer = await answer(
            command, commandId: commandId, actor: Attribution(actor: actor, cause: cause).stored, now: now, durability: durability)
        hub.metrics.answered(answer)
        if logger.logLevel <= .debug { logAnswer(answer, to: command, actor: actor, cause: cause) }
        return answer
    }

    // The command path's async functions keep their frames small (the synchronous work, the logging
    // above all, in functions of their own): a long-lived task that runs commands, such as a driver
    // report lane's consumer, keeps the memory of its deepest frames until it ends.

    @inline(never)
    private func logAnswer(_ answer: CommandAnswer, to command: HubCommand, actor: String, cause: String?) {
        logger.debug(
            "command",
            metadata: [
                "command": "\(command.name)", "target": "\(command.target ?? "-")", "actor": "\(actor)",
                "cause": "\(cause ?? "-")", "outcome": "\(answer.outcomeName)", "code": "\(answer.rejection?.code ?? "-")"
            ])
    }

    @inline(never)
    private func answer(_ command: HubCommand, commandId: String?, actor: String, now: Int64, durability: Durability) async -> CommandAnswer
    {
        if let lease, !lease.mayAct { return .failed(lease.soleWriter ? Self.logUnavailableLease : Self.leaseUnconfirmed) }
        if let refusal = await precheck(command) { return .refused(refusal, seq: nil, duplicate: false) }
        var command = command
        if case let .registerDevice(id, driver, name, config, hardwareId) = command {
            switch catalog.outlets(driver: driver, deviceId: id, settingsJSON: config) {
            case .success(nil): break
            case .success(let outlets?):
                command = .registerStrip(id: id, driver: driver, name: name, hardwareId: hardwareId, outlets: outlets)
            case .failure(let refusal): return .refused(refusal, seq: nil, duplicate: false)
            }
        }
        if case .removeDevice(let id) = command, await hub.device(id).map({ $0.removed }) ?? true {
            let outlets = await hub.outlets(of: id)
            if !outlets.isEmpty { return await removeStrip(outlets, commandId: commandId, actor: actor, now: now) }
        }
        do {
            if HouseholdControl.isMultiDevice(command) { return try await household(command, commandId: commandId, actor: actor) }
            switch try await hub.execute(command, commandId: commandId, actor: actor, now: now, durability: durability) {
            case let .accepted(events, result, duplicate):
                return .ok(.object(Self.acceptedFields(events, result, duplicate) + (await activationConflicts(after: command))))
            case let .rejected(rejection, result, duplicate):
                return .refused(rejection, seq: result?.lastSequence, duplicate: duplicate)
            }
        } catch {
            return .failed(notRecorded(command, commandId: commandId, actor: actor, error))
        }
    }

    /// Removing a strip removes each of its outlets (one command each, on the outlet's own stream);
    /// the answer lists every outlet's answer, or is the first refusal.
    @inline(never)
    private func removeStrip(_ outlets: [DeviceRecord], commandId: String?, actor: String, now: Int64) async -> CommandAnswer {
        var results: [JSONValue] = []
        for outlet in outlets {
            let answer = await answer(
                .removeDevice(id: outlet.id), commandId: commandId.map { "\($0)/\(outlet.id)" }, actor: actor, now: now,
                durability: .immediate)
            guard case .ok(let data) = answer else { return answer }
            results.append(data)
        }
        return .ok(.object([("outlets", .array(results))]))
    }

    @inline(never)
    private func household(_ command: HubCommand, commandId: String?, actor: String) async throws -> CommandAnswer {
        try await HouseholdControl(hub: hub, confirmTimeout: confirmTimeout).run(command, commandId: commandId, actor: actor)
    }

    /// An accepted command's answer: `seq`, `duplicate` and its events.
    private static func acceptedFields(_ events: [HubEvent], _ result: AppendResult?, _ duplicate: Bool) -> [(String, JSONValue)] {
        [
            ("seq", result.map { .number(Double($0.lastSequence)) } ?? .null),
            ("duplicate", .bool(duplicate)),
            ("events", .array(events.map { .object([("type", .string($0.typeName)), ("data", $0.jsonBody())]) }))
        ]
    }

    /// A command the log could not take: counted, logged with its cause, and the answer's rejection.
    @inline(never)
    private func notRecorded(_ command: HubCommand, commandId: String?, actor: String, _ error: any Error) -> Rejection {
        unrecordedCount.add()
        let rejection = Self.notRecorded(error, soleWriter: lease?.soleWriter == true)
        // A full disk is said once by the storage watch (and on `<base>/status/storage`), an
        // unreachable database once by the lease keeper, not once per refused command.
        let quiet = rejection.code == Self.storageFull || rejection.code == Self.logUnavailable
        logger.log(
            level: quiet ? .debug : .error, "a command could not be recorded",
            metadata: [
                "command": "\(command.name)", "target": "\(command.target ?? "-")", "actor": "\(actor)",
                "command_id": "\(commandId ?? "-")", "error": "\(error)"
            ])
        return rejection
    }

    /// The code of a command refused because this hub lost its lease to another instance (hot standby).
    public static let notActive = "not_active"

    /// A command taken while this hub's lease is not confirmed (it was paused or cut off longer
    /// than the lease allows): not decided, not recorded.
    static let leaseUnconfirmed = Rejection(
        code: notActive,
        message: "this hub's lease is not confirmed (it was paused or cut off): "
            + "the command was not recorded and changed nothing; send it again (the same command_id is safe): "
            + "the active hub answers it")

    /// The code of a command refused because the disk holding the log is full.
    public static let storageFull = "storage_full"

    /// The code of a command not carried out because the log's database cannot be reached for now
    /// (it restarts, the network to it failed). Retryable: the same `command_id` is carried out once.
    public static let logUnavailable = "log_unavailable"

    /// The code of a command a surface could not queue (its queue was full): nothing was carried
    /// out. Retryable: the same `command_id` is carried out once.
    public static let hubBusy = "hub_busy"

    /// A command taken by the log's only writer while its lease is not confirmed (the database
    /// cannot be reached, or the hub was paused): no other hub can be active, so it says so.
    static let logUnavailableLease = Rejection(
        code: logUnavailable,
        message: "the event log's database cannot be reached "
            + "(this hub's lease on it is not confirmed): the command was not recorded and changed nothing; "
            + "send it again with the same command_id (it is carried out once)")

    /// The answer to a command the log could not take: `storage_full` when the disk is full (the
    /// hub goes on; the same command succeeds once space is freed), `log_unavailable` when the log's
    /// database cannot be reached (or, for the log's only writer, its lease lapsed meanwhile),
    /// `not_active` when another instance holds the lease, `internal` otherwise.
    static func notRecorded(_ error: Error, soleWriter: Bool = false) -> Rejection {
        if case EventLogError.storageFull = error {
            return Rejection(
                code: storageFull,
                message: "\(error): the command was not recorded and changed nothing; "
                    + "free space on that disk and send it again (the same command_id is safe)")
        }
        if case EventLogError.unreachable = error {
            return Rejection(
                code: logUnavailable,
                message: "\(error): the command was not carried out; "
                    + "send it again with the same command_id (it is carried out once)")
        }
        if soleWriter, case EventLogError.fenced = error { return logUnavailableLease }
        if case EventLogError.fenced = error {
            return Rejection(
                code: notActive,
                message: "\(error): the command was not recorded and changed nothing; "
                    + "send it again (the same command_id is safe): the active hub answers it")
        }
        return Rejection(code: "internal", message: "the hub could not record the command: \(error)")
    }

    /// Several commands from one message, in order (a vitals message gives two readings); stops at
    /// the first that is not accepted. One command answers with its own data, several with a list.
    public func execute(_ commands: [(command: HubCommand, commandId: String?)], actor: String, cause: String? = nil) async -> CommandAnswer
    {
        var results: [JSONValue] = []
        for (command, commandId) in commands {
            let answer = await execute(command, commandId: commandId, actor: actor, cause: cause)
            guard case .ok(let data) = answer else { return answer }
            results.append(data)
        }
        return .ok(results.count == 1 ? results[0] : .array(results))
    }

    /// The rules that depend on the drivers rather than on the log (refused before anything is appended).
    func precheck(_ command: HubCommand) async -> Rejection? {
        switch command {
        case .registerDevice(_, let driver, _, _, _) where !catalog.names.contains(driver):
            return Rejection(
                code: "unknown_driver", message: "no driver named \"\(driver)\"; known: \(catalog.names.joined(separator: ", "))")
        case let .setActivation(device, _, _, _, _, _, daily) where daily != nil:
            guard let record = await hub.device(device),
                catalog.storesActivations(driver: record.driver, deviceId: device, settingsJSON: record.config)
            else { return nil }
            return Rejection(
                code: "activation_repeat_unsupported",
                message: "device \"\(device)\" runs its activations itself and cannot hold a daily repeat at a local time; "
                    + "use a period (1440 minutes for daily)")
        default:
            return nil
        }
    }

    /// For an activation added or updated: the device's activations it now overlaps (empty: none).
    func activationConflicts(after command: HubCommand) async -> [(String, JSONValue)] {
        guard case let .setActivation(device, op, name, _, _, _, _) = command, op != .remove else { return [] }
        let list = await hub.activations(of: device)
        guard let candidate = list.first(where: { $0.name == name }) else { return [] }
        let others = list.filter { $0.name != name }
        return [("conflicts", StateJSON.conflicts(ScheduleMath.conflicts(of: candidate, with: others, from: currentMicros() / 1_000_000)))]
    }
}

/// The answer to one command, whatever the entry point; each transport renders it (`answer(echo:)`,
/// `execLine`).
public enum CommandAnswer: Sendable, Equatable {
    /// Accepted: the answer's data (`seq`, `duplicate`, `events`, and `conflicts` for activations;
    /// `seq`, `origin`, `devices`, `confirmed`, `total` for a multi-device command).
    case ok(JSONValue)
    /// Refused with a stable code. `seq` is the recorded `CommandRejected` event, nil when the
    /// command was refused before the log (`unknown_driver`, `activation_repeat_unsupported`).
    case refused(Rejection, seq: UInt64?, duplicate: Bool)
    /// Not recorded: the log could not take it. Nothing changed; the same command id may be retried.
    case failed(Rejection)

    /// True for `ok`.
    public var isOK: Bool { if case .ok = self { return true } else { return false } }

    /// `ok`, `refused` or `failed`: the `outcome` label of `hub_commands_total`.
    public var outcomeName: String {
        switch self {
        case .ok: return "ok"
        case .refused: return "refused"
        case .failed: return "failed"
        }
    }

    /// The rejection of a refused or failed command.
    public var rejection: Rejection? {
        switch self {
        case .ok: return nil
        case .refused(let r, _, _), .failed(let r): return r
        }
    }

    /// The answer every surface sends: `{"status":"ok","data":...}` or
    /// `{"status":"error","error":...,"code":...}`, with the echo, and the refusal's kind.
    public func answer(echo: RequestParser.Echo) -> Answer {
        switch self {
        case .ok(let data): return .ok(data, echo: echo)
        case .refused(let r, _, _), .failed(let r): return .refused(r, echo: echo)
        }
    }

    /// The line `hub exec` prints: the status, then the data's fields (or the rejection).
    public var execLine: JSONValue {
        switch self {
        case .ok(.object(let fields)): return .object([("status", "ok")] + fields)
        case .ok(let data): return .object([("status", "ok"), ("data", data)])
        case let .refused(r, seq, duplicate):
            return .object([
                ("status", "error"), ("code", .string(r.code)), ("error", .string(r.message)),
                ("duplicate", .bool(duplicate)), ("seq", seq.map { .number(Double($0)) } ?? .null)
            ])
        case .failed(let r):
            return .object([("status", "error"), ("code", .string(r.code)), ("error", .string(r.message))])
        }
    }
}

/// The drivers a hub links: their names, and what a device's driver can do.
public struct DriverCatalog: Sendable {
    /// The factories, by driver name (the first of a name wins).
    public let factories: [String: any DriverFactory]

    /// A catalog of `factories`.
    public init(_ factories: [any DriverFactory]) {
        self.factories = Dictionary(factories.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// The drivers' names, sorted.
    public var names: [String] { factories.keys.sorted() }

    /// The outlets a registration's settings name when they describe a strip (nil: one device), or
    /// the driver's refusal of the settings (`invalid_config`, in the driver's words).
    public func outlets(driver: String, deviceId: String, settingsJSON: String) -> Result<[StripOutlet]?, Rejection> {
        guard let factory = factories[driver] else { return .success(nil) }
        do {
            let configuration = DriverConfiguration(deviceId: deviceId, driver: driver, settingsJSON: settingsJSON)
            guard let outlets = try factory.outlets(of: configuration) else { return .success(nil) }
            return .success(outlets.map { StripOutlet(number: $0.number, name: $0.name, config: $0.settingsJSON) })
        } catch {
            return .failure(Rejection(code: "invalid_config", message: "\(error)"))
        }
    }

    /// Whether a device with this driver and these settings keeps and runs activations itself.
    /// Asked of a driver made for the purpose and never started (making one has no side effects).
    public func storesActivations(driver: String, deviceId: String, settingsJSON: String) -> Bool {
        guard let factory = factories[driver],
            let made = try? factory.make(configuration: DriverConfiguration(deviceId: deviceId, driver: driver, settingsJSON: settingsJSON))
        else { return false }
        return made.capabilities.storesActivations
    }
}

/// A counter that any task may bump.
package final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    package init() {}
    package func add(_ n: Int = 1) { count.add(n, ordering: .relaxed) }
    package var value: Int { count.load(ordering: .relaxed) }
}
