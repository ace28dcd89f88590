import HubEngine
import Synchronization

/// One of the MQTT surface's command lanes, run: commands on one entity (device, animal; the
/// command's first serialization key) run one after another in arrival order; commands on
/// different entities of the lane run side by side, so their appends share the log's group
/// commits instead of each waiting for the one before to be durable.
///
/// At most ``inFlight`` commands are taken from the lane's stream at once (running, or waiting
/// behind a command on the same entity); while that many are held the lane reads no more, and its
/// stream (``MQTTSurface/laneCapacity``) fills until `dispatch` answers `hub_busy`.
struct CommandLane {
    let surface: MQTTSurface
    /// Commands held at once: running or waiting behind one on the same entity.
    static let inFlight = 64

    /// Runs the lane until its stream finishes, then until every command it took is answered.
    func run(_ stream: AsyncStream<MQTTSurface.Work>) async {
        let held = HeldCommands<MQTTSurface.Work, MQTTSurface.Entity>()
        await withDiscardingTaskGroup { group in
            for await work in stream {
                await held.waitForRoom(below: Self.inFlight)
                guard held.take(work, on: work.entity) else { continue }  // queued behind one on its entity
                group.addTask {
                    var next: MQTTSurface.Work? = work
                    while let current = next {
                        await surface.handle(current)
                        next = held.finished(current.entity, below: Self.inFlight)
                    }
                }
            }
        }
    }
}

/// The commands a lane holds: which entities have one running, what waits behind them, and the
/// lane's reader waiting for room.
final class HeldCommands<Command: Sendable, Entity: Hashable & Sendable>: Sendable {
    private struct State {
        var count = 0
        var running: Set<Entity> = []
        var waiting: [Entity: [Command]] = [:]
        var reader: CheckedContinuation<Void, Never>?
    }
    private let state = Mutex(State())

    /// Takes `command`: true when nothing on its entity runs (the caller runs it), false when it
    /// was queued behind the command that does.
    func take(_ command: Command, on entity: Entity) -> Bool {
        state.withLock { s in
            s.count += 1
            if s.running.insert(entity).inserted { return true }
            s.waiting[entity, default: []].append(command)
            return false
        }
    }

    /// A command on `entity` was answered: the next one waiting on it, if any (to run now).
    func finished(_ entity: Entity, below limit: Int) -> Command? {
        let (next, reader) = state.withLock { s -> (Command?, CheckedContinuation<Void, Never>?) in
            s.count -= 1
            var next: Command? = nil
            if var queue = s.waiting[entity], !queue.isEmpty {
                next = queue.removeFirst()
                s.waiting[entity] = queue.isEmpty ? nil : queue
            } else {
                s.running.remove(entity)
            }
            var reader: CheckedContinuation<Void, Never>? = nil
            if s.count < limit { swap(&reader, &s.reader) }
            return (next, reader)
        }
        reader?.resume()
        return next
    }

    /// Returns once fewer than `limit` commands are held (the lane's one reader waits here).
    func waitForRoom(below limit: Int) async {
        if state.withLock({ $0.count < limit }) { return }
        await withCheckedContinuation { (room: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.count < limit { return true }
                s.reader = room
                return false
            }
            if now { room.resume() }
        }
    }
}
