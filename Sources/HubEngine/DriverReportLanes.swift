import DriverAPI
import Synchronization

/// The drivers' reports on their way to the host: bounded lanes keyed by device, each consumed by
/// one long-lived child task of `DriverHost.run()`. A driver's `report` waits until its lane's
/// consumer has handled it (recorded or filtered), so one device's reports keep their order and a
/// driver never runs ahead of the hub; the deep path (host, command service, the log's append)
/// runs in the consumers, not in the drivers' long-lived tasks, which so keep only their own frames.
///
/// **Bound and overflow policy** (`driver_reports`): each lane holds at most ``capacity`` reports.
/// When a lane is full, a new reading displaces the oldest reading waiting in it (that one is
/// dropped: its driver's `report` returns, as for a reading the filter drops) and
/// `hub_queue_overflow_total{queue="driver_reports"}` counts it; any other report (switch state,
/// availability, a failed command, activations) or a reading in a lane holding no reading waits for
/// room (counted too), so no state report is ever lost.
final class DriverReportLanes: Sendable {
    struct Report: Sendable {
        var device: String
        var driver: String
        var observation: Observation
    }

    private struct Waiting {
        var report: Report
        /// Resumed with false once the report is handled (or displaced, or the lanes closed), with
        /// true when the lane was full and the report must wait for room.
        var done: UnsafeContinuation<Bool, Never>
    }

    private struct Lane {
        var items: [Waiting] = []
        var head = 0
        var count: Int { items.count - head }
        /// The consumer, waiting for work.
        var consumer: UnsafeContinuation<Waiting?, Never>?
        /// Reporters waiting for room.
        var roomWaiters: [UnsafeContinuation<Void, Never>] = []

        /// The index of the oldest reading waiting, if any.
        func firstReading() -> Int? {
            items[head...].firstIndex {
                if case .reading = $0.report.observation { true } else { false }
            }
        }

        mutating func popFirst() -> Waiting? {
            guard head < items.count else { return nil }
            let first = items[head]
            head += 1
            if head == items.count {
                // Drained: the buffer goes (an idle lane holds no memory; the consumer usually takes
                // reports straight from their reporter and this array stays empty).
                items = []
                head = 0
            } else if head >= 64, head * 2 >= items.count {
                items.removeFirst(head)
                head = 0
            }
            return first
        }
    }

    private struct State {
        var lanes: [Lane]
        var closed = false
    }

    /// Lanes (consumers).
    let laneCount: Int
    /// Reports one lane holds at most.
    let capacity: Int
    private let state: Mutex<State>
    private let overflowed: @Sendable () -> Void

    /// - Parameters:
    ///   - laneCount: how many lanes (and consumer tasks).
    ///   - capacity: reports per lane.
    ///   - overflowed: counts one overflow (the metric).
    init(laneCount: Int = 32, capacity: Int = 256, overflowed: @escaping @Sendable () -> Void) {
        self.laneCount = laneCount
        self.capacity = capacity
        self.overflowed = overflowed
        state = Mutex(State(lanes: Array(repeating: Lane(), count: laneCount)))
    }

    private func lane(of device: String) -> Int {
        var hasher = Hasher()
        hasher.combine(device)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(laneCount))
    }

    /// Report slots the lanes' buffers hold, used or not (0 once every lane has drained).
    var bufferedSlots: Int { state.withLock { $0.lanes.reduce(0) { $0 + $1.items.capacity } } }

    /// Reports waiting in the lanes now (not yet taken by their consumer).
    var waiting: Int { state.withLock { $0.lanes.reduce(0) { $0 + $1.count } } }

    /// Queues `report` and returns once its consumer handled it (or it was displaced, or the
    /// lanes are closed).
    ///
    /// Drivers report from their long-lived tasks, and a task keeps the memory of its deepest calls
    /// until it ends: the common path is this one small frame around ``offer(_:done:)``, which does
    /// its work synchronously; only a full lane takes the longer way (``waitForRoom(_:)``).
    func submit(_ report: Report) async {
        if await withUnsafeContinuation({ offer(report, done: $0) }) { await submitWhenFull(report) }
    }

    /// A report that found its lane full: counted once, then offered again whenever there is room.
    @inline(never)
    private func submitWhenFull(_ report: Report) async {
        overflowed()
        repeat {
            await waitForRoom(lane(of: report.device))
        } while await withUnsafeContinuation({ offer(report, done: $0) })
    }

    /// Hands `report` to its lane's waiting consumer or queues it (a reading displacing the oldest
    /// reading of a full lane); `done` is resumed with false once it is handled, or at once: with
    /// false when the lanes are closed, with true when the lane is full and `report` must wait.
    private func offer(_ report: Report, done: UnsafeContinuation<Bool, Never>) {
        let index = lane(of: report.device)
        var handOff: UnsafeContinuation<Waiting?, Never>?
        var displaced: UnsafeContinuation<Bool, Never>?
        let accepted = state.withLock { s -> Bool? in
            if s.closed { return false }
            if let consumer = s.lanes[index].consumer {
                s.lanes[index].consumer = nil
                handOff = consumer
                return true
            }
            if s.lanes[index].count >= capacity {
                guard case .reading = report.observation, let oldest = s.lanes[index].firstReading() else { return nil }
                displaced = s.lanes[index].items.remove(at: oldest).done
            }
            s.lanes[index].items.append(Waiting(report: report, done: done))
            return true
        }
        if let handOff { handOff.resume(returning: Waiting(report: report, done: done)) }
        switch accepted {
        case false?: done.resume(returning: false)
        case nil: done.resume(returning: true)
        default: break
        }
        if let displaced {
            overflowed()
            displaced.resume(returning: false)
        }
    }

    /// Returns once lane `index` has room (or the lanes are closed).
    private func waitForRoom(_ index: Int) async {
        await withUnsafeContinuation { (room: UnsafeContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.closed || s.lanes[index].count < capacity { return true }
                s.lanes[index].roomWaiters.append(room)
                return false
            }
            if now { room.resume() }
        }
    }

    /// The next report of lane `index`, waiting for one; nil once the lanes are closed and it is empty.
    private func next(_ index: Int) async -> Waiting? {
        await withUnsafeContinuation { (consumer: UnsafeContinuation<Waiting?, Never>) in
            let (item, room, end) = state.withLock { s -> (Waiting?, UnsafeContinuation<Void, Never>?, Bool) in
                if let item = s.lanes[index].popFirst() {
                    let room = s.lanes[index].roomWaiters.isEmpty ? nil : s.lanes[index].roomWaiters.removeFirst()
                    return (item, room, false)
                }
                if s.closed { return (nil, nil, true) }
                s.lanes[index].consumer = consumer
                return (nil, nil, false)
            }
            room?.resume()
            if let item { consumer.resume(returning: item) } else if end { consumer.resume(returning: nil) }
        }
    }

    /// Lane `index`'s consumer: hands each report to `handle`, in order, until the lanes are closed
    /// and the lane is empty.
    func consume(_ index: Int, _ handle: (Report) async -> Void) async {
        while let item = await next(index) {
            await handle(item.report)
            item.done.resume(returning: false)
        }
    }

    /// Takes no more reports (later ones return at once); the consumers end once their lanes are empty.
    func close() {
        let (consumers, rooms) = state.withLock { s -> ([UnsafeContinuation<Waiting?, Never>], [UnsafeContinuation<Void, Never>]) in
            s.closed = true
            var consumers: [UnsafeContinuation<Waiting?, Never>] = []
            var rooms: [UnsafeContinuation<Void, Never>] = []
            for i in s.lanes.indices {
                if let c = s.lanes[i].consumer { consumers.append(c) }
                s.lanes[i].consumer = nil
                rooms += s.lanes[i].roomWaiters
                s.lanes[i].roomWaiters = []
            }
            return (consumers, rooms)
        }
        for c in consumers { c.resume(returning: nil) }
        for r in rooms { r.resume() }
    }
}
