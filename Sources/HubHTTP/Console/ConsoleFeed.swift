import HubDomain
import HubEngine
import HubLog
import Synchronization

/// One committed event as the console's live updates announce it.
package struct ConsoleChange: Sendable, Equatable {
    var sequence: UInt64
    var stream: String
    var type: String
    /// For a `SwitchRequested`: who asked for which state and when (the device page's line).
    var request: SwitchRequestLine? = nil
    /// The record and its decoding, for the device page's "Recent events" row (rendered only when
    /// a page is sent it); nil for another stream's and for an event the page does not list.
    var record: EventRecord? = nil
    var event: HubEvent? = nil

    package init(sequence: UInt64, stream: String, type: String) {
        self.sequence = sequence
        self.stream = stream
        self.type = type
    }

    /// The change `record` makes; `event` is the record decoded (nil for a type this hub cannot read).
    package init(_ record: EventRecord, event: HubEvent?) {
        self.init(sequence: record.sequence, stream: record.stream, type: record.type)
        if StreamKey(stream: record.stream)?.deviceId != nil, DevicePage.lists(type: record.type) {
            self.record = record
            self.event = event
        }
        if case .switchRequested(let e)? = event {
            request = SwitchRequestLine(state: e.state.name, actor: record.causation.actor, timestamp: record.timestamp)
        }
    }
}

/// Who asked a device to switch, and when: the device page's "Switched on by mqtt:alice,
/// automation.porch_lights, 2026-11-27 18:00:02", rendered when it is shown.
struct SwitchRequestLine: Sendable, Equatable {
    /// `on` or `off`.
    var state: String
    /// The record's actor field as stored (the actor, and `#cause` when one was declared).
    var actor: String
    var timestamp: Int64

    /// The line, with the time in the household's zone.
    var text: String {
        "Switched \(state.lowercased()) by \(Attribution(stored: actor).text), \(ConsoleFormat.time(timestamp))"
    }
}

/// The console's live updates: the log follower (the one that feeds MQTT) hands every committed
/// event here, and each open page (`GET /console/events`) has a subscription with a bounded
/// buffer. A page that falls ``capacity`` events behind is dropped and told to reload, so a slow
/// or stalled browser cannot make the hub hold more than that for it.
package final class ConsoleFeed: Sendable {
    /// Events kept per page before it is dropped.
    let capacity: Int
    private let state = Mutex<(next: Int, subscribers: [Int: Subscription], finished: Bool)>((0, [:], false))

    package init(capacity: Int = 1024) { self.capacity = capacity }

    /// One page's queue; ``ConsoleFeed`` fills it, the page's response drains it.
    final class Subscription: Sendable {
        let capacity: Int
        private let queue = Mutex<(changes: [ConsoleChange], overflowed: Bool, finished: Bool)>(([], false, false))
        private let wake: AsyncStream<Void>.Continuation
        /// Yields whenever something arrived (coalesced: at most one wake-up waits).
        let wakes: AsyncStream<Void>

        init(capacity: Int) {
            self.capacity = capacity
            (wakes, wake) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        }

        func offer(_ change: ConsoleChange) {
            let accepted = queue.withLock { q -> Bool in
                guard !q.overflowed, !q.finished else { return false }
                if q.changes.count >= capacity {
                    q.overflowed = true
                    q.changes.removeAll()
                } else {
                    q.changes.append(change)
                }
                return true
            }
            if accepted { wake.yield() }
        }

        /// Wakes the page with nothing new (it sends a keep-alive comment).
        func poke() { wake.yield() }

        func finish() {
            queue.withLock { $0.finished = true }
            wake.finish()
        }

        /// What arrived since the last call: the changes, whether the page fell behind, whether the feed ended.
        func take() -> (changes: [ConsoleChange], overflowed: Bool, finished: Bool) {
            queue.withLock { q in
                defer { q.changes.removeAll(keepingCapacity: true) }
                return (q.changes, q.overflowed, q.finished)
            }
        }

        /// Events waiting (for tests).
        var waiting: Int { queue.withLock { $0.changes.count } }
    }

    /// A new page's subscription; nil once the hub is shutting down.
    func subscribe() -> (id: Int, subscription: Subscription)? {
        state.withLock { s in
            guard !s.finished else { return nil }
            let subscription = Subscription(capacity: capacity)
            s.next += 1
            s.subscribers[s.next] = subscription
            return (s.next, subscription)
        }
    }

    func unsubscribe(_ id: Int) {
        let gone = state.withLock { $0.subscribers.removeValue(forKey: id) }
        gone?.finish()
    }

    /// Pages open now.
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Called by the log follower for every committed event. Never blocks.
    package func publish(_ change: ConsoleChange) {
        let subscribers = state.withLock { Array($0.subscribers.values) }
        for subscriber in subscribers { subscriber.offer(change) }
    }

    /// Ends every page's stream (the hub is stopping), so the HTTP listener can close its connections.
    package func finish() {
        let subscribers = state.withLock { s -> [Subscription] in
            s.finished = true
            defer { s.subscribers.removeAll() }
            return Array(s.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }
}
