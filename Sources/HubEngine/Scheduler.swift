import DriverAPI
import Foundation
import HubDomain
import HubSchedule
import ServiceLifecycle

/// Where the scheduler gets the time: the wall clock, or a test's hand-set clock.
public protocol ScheduleClock: Sendable {
    /// Microseconds since the Unix epoch.
    func now() -> Int64
    /// Waits about `micros` (the scheduler re-reads `now()` afterwards, so a hand-set clock may return early).
    func sleep(micros: Int64) async
}

/// The system clock, and `Task.sleep`.
public struct WallClock: ScheduleClock {
    /// The system clock.
    public init() {}
    /// Now, µs since the Unix epoch.
    public func now() -> Int64 { currentMicros() }
    /// Sleeps about `micros` (at least 1 µs); returns early when cancelled.
    public func sleep(micros: Int64) async { try? await Task.sleep(for: .microseconds(max(1, micros))) }
}

/// The hub's activation scheduler, for devices whose driver does not run activations itself
/// (everything but the seed's TCP plug). It switches a device on when one of its activations'
/// windows opens and off when the last open window closes, with cause `schedule`, and only while
/// the device is in automatic mode (switching it on by hand suspends its activations until it is
/// switched off: the seed plug's manual override).
///
/// Every switch carries a command id naming the device, activation, window and edge
/// (`schedule:<device>:<activation>:<window start>:on|off`), and the log keeps command ids for
/// ever: so after a restart or a clock jump (an NTP correction) the scheduler re-evaluates "what
/// should be now" and can neither double a switch (the id was used) nor skip one whose window is
/// still open. A window missed entirely while the hub was down is skipped, as the seed plug rolls
/// missed windows forward.
///
/// It wakes at the next window edge (re-reading the clock at least every second, so a jump is
/// noticed within a second) and whenever a device's activations, mode or registration change.
public actor Scheduler: Service {
    let hub: Hub
    let commands: CommandService
    let drivers: DriverHost
    let clock: ScheduleClock
    /// The next window edge of any scheduled device (µs), or nil when none is ahead.
    var nextDue: Int64?
    var lastTick: Int64?
    /// Devices to evaluate on the next tick (event-driven changes).
    var pending: Set<String> = []

    /// A scheduler switching through `commands`, for the devices `drivers` runs whose driver has no activations of its own.
    public init(commands: CommandService, drivers: DriverHost, clock: ScheduleClock = WallClock()) {
        self.hub = commands.hub
        self.commands = commands
        self.drivers = drivers
        self.clock = clock
    }

    /// Keeps every scheduled device where its activations want it, until graceful shutdown.
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.loop() }
    }

    /// Reacts to a committed event: devices whose schedule may have changed are evaluated at once.
    public func handle(_ event: HubEvent) async {
        switch event {
        case .activationChanged(let e): await touch(e.device)
        case .modeChanged(let e): await touch(e.device)
        case .deviceRegistered(let e): await touch(e.device)
        case .availabilityChanged(let e) where e.available: await touch(e.device)
        default: break
        }
    }

    func touch(_ device: String) async {
        await evaluate(device, now: clock.now())
        nextDue = await computeNextDue(after: clock.now())
    }

    func loop() async {
        await evaluateAll(now: clock.now())
        while !Task.isCancelled {
            let now = clock.now()
            let jumped = lastTick.map { now < $0 || now - $0 > 3_000_000 } ?? false
            lastTick = now
            if jumped || nextDue.map({ now >= $0 }) == true {
                await evaluateAll(now: now)
            }
            let wait = nextDue.map { min(max($0 - clock.now(), 1_000), 1_000_000) } ?? 1_000_000
            await clock.sleep(micros: wait)
        }
    }

    func evaluateAll(now: Int64) async {
        let ids = await hub.allActivations().keys.sorted()
        for id in ids { await evaluate(id, now: now) }
        nextDue = await computeNextDue(after: now)
    }

    /// The earliest window edge after `now` over every device the scheduler runs.
    func computeNextDue(after now: Int64) async -> Int64? {
        let byDevice = await hub.allActivations()
        var best: Int64?
        let seconds = now / 1_000_000
        for (device, list) in byDevice where await runsActivations(of: device) {
            for a in list {
                if let t = ScheduleMath.nextTransition(of: a, after: seconds) {
                    best = min(best ?? Int64.max, t * 1_000_000)
                }
            }
        }
        return best
    }

    /// Devices whose driver keeps activations itself are left to the device.
    func runsActivations(of device: String) async -> Bool {
        !(await drivers.storesActivations(device))
    }

    /// Brings one device to what its activations want now.
    func evaluate(_ id: String, now: Int64) async {
        guard await runsActivations(of: id) else { return }
        guard let device = await hub.device(id), !device.removed, device.mode == .automatic else { return }
        let list = await hub.activations(of: id)
        guard !list.isEmpty else { return }
        let seconds = now / 1_000_000
        // The open window that opened first keeps the device on.
        let open = list.compactMap { a in ScheduleMath.window(of: a, containing: seconds).map { (a, $0) } }
            .min { $0.1.start < $1.1.start }
        if let (activation, window) = open {
            await switchDevice(id, .on, commandId: Self.commandId(id, activation.name, window.start, "on"), now: now)
            return
        }
        // No window open: the one that closed last switches off what the schedule switched on
        // (a window whose opening this hub switched, or a device the schedule left on).
        let closed = list.compactMap { a in ScheduleMath.lastEnded(of: a, atOrBefore: seconds).map { (a, $0) } }
            .max { $0.1.end < $1.1.end }
        guard let (activation, window) = closed, device.switchState == .on || device.pending?.state == .on else { return }
        let openedHere: Bool
        do {
            openedHere = try await hub.store.commandResult(Self.commandId(id, activation.name, window.start, "on")) != nil
        } catch {
            return  // the log cannot be asked now (its database is out): nothing is switched until it can
        }
        guard openedHere || device.lastSwitchCause == .schedule || device.pending?.bySchedule == true else { return }
        await switchDevice(id, .off, commandId: Self.commandId(id, activation.name, window.start, "off"), now: now)
    }

    static func commandId(_ device: String, _ activation: String, _ windowStart: Int64, _ edge: String) -> String {
        "schedule:\(device):\(activation):\(windowStart):\(edge)"
    }

    func switchDevice(_ id: String, _ state: SwitchState, commandId: String, now: Int64) async {
        await commands.execute(.scheduleSwitch(id: id, state: state), commandId: commandId, actor: Scheduling.actor, now: now)
    }
}
