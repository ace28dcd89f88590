import Foundation
import HubDomain
import HubLog
import Synchronization
import Testing
import VirtualDriver

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// A clock the test sets by hand; the scheduler's sleeps return at once (it re-reads the time).
final class HandClock: ScheduleClock {
    private let micros: Mutex<Int64>
    /// How many times the scheduler's loop has gone to sleep.
    private let sleeps = Atomic<Int>(0)
    init(_ seconds: Int64) { micros = Mutex(seconds * 1_000_000) }
    func now() -> Int64 { micros.withLock { $0 } }
    func set(_ seconds: Int64) { micros.withLock { $0 = seconds * 1_000_000 } }
    func sleep(micros: Int64) async {
        sleeps.add(1, ordering: .sequentiallyConsistent)
        try? await Task.sleep(for: .milliseconds(5))
    }

    /// Returns once the scheduler's loop has made a whole turn since the call: it read the time as
    /// it is now and did what that time asks (its switch requests appended) before sleeping again.
    func turned(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let wanted = sleeps.load(ordering: .sequentiallyConsistent) + 2
        let deadline = ContinuousClock.now + .seconds(5)
        while sleeps.load(ordering: .sequentiallyConsistent) < wanted {
            guard ContinuousClock.now < deadline else {
                Issue.record("the scheduler's loop did not turn within 5 s", sourceLocation: sourceLocation)
                return
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}

/// The hub's scheduler with a hand-set clock and virtual switches (which confirm at once), no broker.
@Suite(.serialized) struct SchedulerTests {
    let t0: Int64 = 1_795_370_400  // 2026-11-22T18:00:00Z

    func service(_ clock: HandClock, dir: String = temporaryDirectory()) async throws -> HubService {
        var config = HubConfig()
        config.mqtt.enabled = false
        config.devices = [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp")]
        var options = HubServiceOptions(paths: HubPaths(dataDirectory: dir), config: config, factories: [VirtualDriverFactory()])
        options.scheduleClock = clock
        return try await HubService.start(options, logger: .discarding)
    }

    func add(_ s: HubService, _ name: String, start: Int64, length: Int, period: Int = 0, daily: DailyRepeat? = nil) async throws {
        let outcome = try await s.hub.execute(
            .setActivation(
                device: "lamp", op: .add, name: name, start: start, lengthMinutes: length,
                periodMinutes: period, daily: daily), actor: "test", now: currentMicros())
        if case .rejected(let r, _, _) = outcome { Issue.record("rejected: \(r)") }
    }

    func waitFor(_ what: String, _ s: HubService, _ condition: (DeviceRecord) -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if let d = await s.hub.device("lamp"), condition(d) { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("timed out waiting for \(what): \(String(describing: await s.hub.device("lamp")))")
    }

    /// The scheduler's switch requests so far (actor `scheduler`).
    func scheduledSwitches(_ s: HubService) async throws -> [(SwitchState, String?)] {
        var out: [(SwitchState, String?)] = []
        try await s.hub.store.read(from: 1, through: s.hub.store.lastSequence) { record in
            if record.causation.actor == Scheduling.actor, record.type == "SwitchRequested",
                case .switchRequested(let e) = try HubEvent.decode(
                    type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
            {
                out.append((e.state, record.causation.commandId))
            }
            return true
        }
        return out
    }

    @Test func oneShotWindowSwitchesOnAndOffWithCauseSchedule() async throws {
        let clock = HandClock(t0 - 60)
        let s = try await service(clock)
        try await add(s, "once", start: t0, length: 10)
        try await clock.turned()
        #expect(await s.hub.device("lamp")?.switchState != .on)
        #expect(try await scheduledSwitches(s).isEmpty)
        clock.set(t0)
        try await waitFor("on at the window's start", s) { $0.switchState == .on && $0.lastSwitchCause == .schedule }
        clock.set(t0 + 10 * 60)
        try await waitFor("off at the window's end", s) { $0.switchState == .off && $0.lastSwitchCause == .schedule }
        #expect(try await scheduledSwitches(s).map(\.0) == [.on, .off])
        #expect(try await scheduledSwitches(s).map(\.1) == ["schedule:lamp:once:\(t0):on", "schedule:lamp:once:\(t0):off"])
        try await s.stop()
    }

    @Test func aClockJumpNeitherSkipsNorDoubles() async throws {
        let clock = HandClock(t0 - 10)
        let s = try await service(clock)
        try await add(s, "hourly", start: t0, length: 5, period: 60)
        clock.set(t0 + 60)  // inside the first window
        try await waitFor("on", s) { $0.switchState == .on }
        clock.set(t0 - 3600)  // NTP steps the clock back an hour...
        try await clock.turned()
        clock.set(t0 + 120)  // ...and forward again, still inside the same window
        try await clock.turned()
        #expect(try await scheduledSwitches(s).count == 1)
        clock.set(t0 + 3600 + 4 * 60)  // a jump past the first window's end into the second: it stays on
        try await clock.turned()
        #expect(await s.hub.device("lamp")?.switchState == .on)
        #expect(try await scheduledSwitches(s).count == 1)
        clock.set(t0 + 3600 + 5 * 60)  // the second window ends: off, once
        try await waitFor("off after the second window", s) { $0.switchState == .off }
        clock.set(t0 + 3600 + 2 * 60)  // back again into the second window: its edges are used up
        try await clock.turned()
        let ids = try await scheduledSwitches(s).compactMap(\.1)
        #expect(
            ids == [
                "schedule:lamp:hourly:\(t0):on", "schedule:lamp:hourly:\(t0 + 3600):off",
                "schedule:lamp:hourly:\(t0 + 3600):on"
            ])
        try await s.stop()
    }

    @Test func restartResumesInsideAWindowAndFinishesIt() async throws {
        let dir = temporaryDirectory()
        let clock = HandClock(t0 + 30)
        var s = try await service(clock, dir: dir)
        try await add(s, "evening", start: t0, length: 60)
        try await waitFor("on", s) { $0.switchState == .on }
        try await s.stop()
        // Down for twenty minutes, still inside the window: nothing doubled on restart.
        clock.set(t0 + 20 * 60)
        s = try await service(clock, dir: dir)
        try await clock.turned()
        #expect(try await scheduledSwitches(s).count == 1)
        clock.set(t0 + 61 * 60)
        try await waitFor("off after the restart", s) { $0.switchState == .off }
        #expect(try await scheduledSwitches(s).map(\.0) == [.on, .off])
        try await s.stop()
    }

    @Test func onTimeWithTheWallClock() async throws {
        var config = HubConfig()
        config.mqtt.enabled = false
        config.devices = [HubConfig.Device(id: "lamp", driver: "virtual", name: "Lamp")]
        let s = try await HubService.start(
            HubServiceOptions(
                paths: HubPaths(dataDirectory: temporaryDirectory()), config: config,
                factories: [VirtualDriverFactory()]), logger: .discarding)
        let start = currentMicros() / 1_000_000 + 2
        try await add(s, "soon", start: start, length: 1)
        let deadline = ContinuousClock.now + .seconds(6)
        var switchedAt: Int64?
        while switchedAt == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            if let d = await s.hub.device("lamp"), d.switchState == .on { switchedAt = d.switchChangedAt }
        }
        let late = (switchedAt ?? Int64.max) - start * 1_000_000
        // A timer, not a poll: on an idle machine this is a few milliseconds; the bound leaves room
        // for a CI machine busy compiling (a once-a-minute poll would miss it by tens of seconds).
        #expect(late >= 0 && late < 3_000_000, "switched \(late) µs after the window opened")
        try await s.stop()
    }

    @Test func aWindowMissedWhileDownIsSkipped() async throws {
        let clock = HandClock(t0 + 2 * 3600)  // long after the 10-minute one-shot
        let s = try await service(clock)
        try await add(s, "missed", start: t0, length: 10)
        try await clock.turned()
        // A window open now, added after it: the scheduler takes their events in order, so once
        // this one has switched the lamp on, the missed one was seen, and asked for nothing.
        try await add(s, "now", start: t0 + 2 * 3600 - 60, length: 10)
        try await waitFor("on for the window open now", s) { $0.switchState == .on && $0.lastSwitchCause == .schedule }
        #expect(try await scheduledSwitches(s).compactMap(\.1) == ["schedule:lamp:now:\(t0 + 2 * 3600 - 60):on"])
        try await s.stop()
    }

    @Test func manualOverrideSuspendsUntilSwitchedOff() async throws {
        let clock = HandClock(t0 - 60)
        let s = try await service(clock)
        try await add(s, "a", start: t0, length: 10, period: 60)
        _ = try await s.hub.execute(.switchDevice(id: "lamp", target: .on), actor: "user", now: currentMicros())
        try await waitFor("manual on", s) { $0.switchState == .on && $0.mode == .manual }
        clock.set(t0 + 11 * 60)  // the window ended: in manual mode nothing is switched off
        try await clock.turned()
        #expect(await s.hub.device("lamp")?.switchState == .on)
        #expect(try await scheduledSwitches(s).isEmpty)
        _ = try await s.hub.execute(.switchDevice(id: "lamp", target: .off), actor: "user", now: currentMicros())
        try await waitFor("automatic", s) { $0.mode == .automatic && $0.switchState == .off }
        clock.set(t0 + 60 * 60)  // the next window runs again
        try await waitFor("on by schedule", s) { $0.switchState == .on && $0.lastSwitchCause == .schedule }
        try await s.stop()
    }

    @Test func dailyAtLocalTimeFollowsDaylightSaving() async throws {
        // 2026-10-25 is Lisbon's change from UTC+1 to UTC+0. 18:00 local is 17:00Z on the 24th, 18:00Z on the 25th.
        let oct24 = ISO8601.parse("2026-10-24T16:59:00Z")! / 1_000_000
        let clock = HandClock(oct24)
        let s = try await service(clock)
        try await add(
            s, "evening", start: oct24, length: 30,
            daily: DailyRepeat(minuteOfDay: 18 * 60, timeZone: "Europe/Lisbon"))
        clock.set(ISO8601.parse("2026-10-24T17:00:00Z")! / 1_000_000)
        try await waitFor("on at 18:00 summer time", s) { $0.switchState == .on }
        clock.set(ISO8601.parse("2026-10-24T17:30:00Z")! / 1_000_000)
        try await waitFor("off", s) { $0.switchState == .off }
        clock.set(ISO8601.parse("2026-10-25T17:00:00Z")! / 1_000_000)  // 17:00 local now: not yet
        try await clock.turned()
        #expect(await s.hub.device("lamp")?.switchState == .off)
        #expect(try await scheduledSwitches(s).count == 2)
        clock.set(ISO8601.parse("2026-10-25T18:00:00Z")! / 1_000_000)
        try await waitFor("on at 18:00 winter time", s) { $0.switchState == .on }
        try await s.stop()
    }
}
