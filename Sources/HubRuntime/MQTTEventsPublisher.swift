import Foundation
import HubLog
import Logging
import MQTT
import ServiceLifecycle
import Synchronization

/// Every logged event on `<base>/events/<stream>/<type>`, at QoS 1, in log order, starting after
/// the last one the broker acknowledged (kept in a checkpoint file), so none is skipped across
/// restarts. At least once: after a crash the events sent since the last checkpoint go out again.
///
/// Up to `window` events are in flight at once. Waiting for each PUBACK before sending the next
/// would cap the stream at one event per broker round trip, below what the log takes in under load.
final class MQTTEventsPublisher: Service {
    let hub: Hub
    let client: MQTTClient
    let topics: MQTTTopics
    let checkpointPath: String
    let logger: Logger
    /// Events awaiting their PUBACK at most.
    static let window = 256
    private let progress = Mutex(Progress())

    /// The contiguous prefix of the log the broker has acknowledged, and how much of it is saved.
    struct Progress {
        var acknowledged: UInt64 = 0
        /// Acknowledged out of order (beyond a gap), folded in when the gap closes.
        var ahead: Set<UInt64> = []
        var saved: UInt64 = 0
        /// The last attempt to save (successful or not).
        var savedAt = ContinuousClock.now
        /// The last save failed (a full disk): said once, retried once a second.
        var failing = false

        mutating func complete(_ sequence: UInt64) {
            guard sequence > acknowledged else { return }
            ahead.insert(sequence)
            while ahead.remove(acknowledged + 1) != nil { acknowledged += 1 }
        }

        /// Whether the checkpoint is due: every 1,000 events, or a second after the last save (after
        /// a failed save, only a second after it).
        var saveDue: Bool {
            (!failing && acknowledged >= saved + 1000) || (acknowledged > saved && ContinuousClock.now - savedAt > .seconds(1))
        }
    }

    init(hub: Hub, client: MQTTClient, topics: MQTTTopics, checkpointPath: String, logger: Logger) {
        self.hub = hub
        self.client = client
        self.topics = topics
        self.checkpointPath = checkpointPath
        self.logger = logger
    }

    /// The last sequence such that it and every event before it were acknowledged by the broker.
    var acknowledged: UInt64 { progress.withLock { $0.acknowledged } }

    /// Feeds until graceful shutdown, then waits briefly for what is in flight and saves the checkpoint.
    func run() async throws {
        await cancelWhenGracefulShutdown { await self.feedUntilCancelled() }
    }

    /// Runs until its task is cancelled, then waits briefly for what is in flight and saves the checkpoint.
    func feedUntilCancelled() async {
        let start = readCheckpoint()
        progress.withLock { $0 = Progress(acknowledged: start, saved: start) }
        var lastProblem: (text: String, at: ContinuousClock.Instant)?
        while !Task.isCancelled {
            let (pending, error) = await feedUntilFailure(from: acknowledged + 1)
            if Task.isCancelled {
                await settle(pending)
                break
            }
            // A refused or failed publish: everything after the acknowledged prefix goes out again.
            for task in pending { task.cancel() }
            // Said once, and again every minute while it lasts: a stalled feed is not hidden.
            let problem = "mqtt: the event feed stopped after event \(acknowledged): \(error.map { "\($0)" } ?? "unknown error"); retrying"
            if lastProblem?.text != problem || ContinuousClock.now - (lastProblem?.at ?? .now) > .seconds(60) {
                logger.error("\(problem)")
                lastProblem = (problem, ContinuousClock.now)
            }
            try? await Task.sleep(for: .milliseconds(500))
        }
        saveCheckpoint()
    }

    /// Publishes from `first` on until cancelled or until the broker refuses (or fails) one event;
    /// returns what is still in flight and the failure.
    private func feedUntilFailure(from first: UInt64) async -> (pending: [Task<Void, any Error>], error: (any Error)?) {
        let (failures, failed) = AsyncStream<any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        return await withTaskGroup(of: (pending: [Task<Void, any Error>], error: (any Error)?).self) { group in
            group.addTask { await self.feed(from: first, failed: failed) }
            group.addTask {
                for await error in failures { return ([], error) }
                return ([], nil)
            }
            // Whichever ends first (a failed acknowledgement, or the feed itself) ends the other.
            var result = await group.next() ?? ([], nil)
            group.cancelAll()
            failed.finish()
            for await other in group {
                result.pending += other.pending
                if result.error == nil { result.error = other.error }
            }
            return result
        }
    }

    /// Tasks the feed holds (in flight, or acknowledged but not yet let go): at most `window` plus
    /// a few, whatever the number of events (a test checks it).
    var heldTasks: Int { held.load(ordering: .relaxed) }
    private let held = Atomic<Int>(0)

    private func feed(from first: UInt64, failed: AsyncStream<any Error>.Continuation) async -> (pending: [Task<Void, any Error>], error: (any Error)?) {
        // Each event's acknowledgement task, oldest first; `head` is the first one still held.
        var inFlight: [(sequence: UInt64, task: Task<Void, any Error>)] = []
        var head = 0
        defer { held.store(0, ordering: .relaxed) }
        do {
            for try await record in hub.store.subscribe(from: first) {
                let topic = topics.event(stream: record.stream, type: record.type)
                let payload = Array(EventLines.render(record).utf8)
                let sequence = record.sequence
                // While disconnected the events stay in the log rather than pile up in the client's
                // queue (libmosquitto would send them all at once, racing the new connection's set-up).
                while !client.isConnected {
                    do { try await client.waitUntilConnected(timeout: .seconds(60)) } catch let error as MQTTError where error.kind == .timeout {}
                }
                let ticket = try client.publishTracked(topic, payload, qos: 1)
                inFlight.append((sequence, Task {
                    do {
                        try await ticket.acknowledged()
                    } catch {
                        failed.yield(error)
                        throw error
                    }
                    self.acknowledge(sequence)
                }))
                // Let go of every task the broker's acknowledgements have passed (not only when the
                // window is full: at a household's pace it never is, and the tasks piled up).
                let done = acknowledged
                while head < inFlight.count && inFlight[head].sequence <= done { head += 1 }
                while inFlight.count - head >= Self.window {
                    try await inFlight[head].task.value
                    head += 1
                }
                if head >= 16 {
                    inFlight.removeFirst(head)
                    head = 0
                }
                held.store(inFlight.count, ordering: .relaxed)
            }
            return (inFlight[head...].map(\.task), nil)
        } catch {
            return (inFlight[head...].map(\.task), error)
        }
    }

    /// Stopping: what is in flight gets a moment to be acknowledged (so it is not sent again after
    /// the restart); then the rest is given up.
    private func settle(_ pending: [Task<Void, any Error>]) async {
        guard !pending.isEmpty else { return }
        guard client.isConnected else {
            for task in pending { task.cancel() } // nothing will be acknowledged soon: sent again after the restart
            return
        }
        let timer = Task {
            try? await Task.sleep(for: .seconds(2))
            for task in pending { task.cancel() }
        }
        for task in pending { _ = await task.result }
        timer.cancel()
    }

    func readCheckpoint() -> UInt64 {
        guard let text = try? String(contentsOfFile: checkpointPath, encoding: .utf8),
              let value = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return 0 }
        return value
    }

    /// One event acknowledged: advance the prefix, and save it when due (one lock per event).
    private func acknowledge(_ sequence: UInt64) {
        progress.withLock { p in
            p.complete(sequence)
            if p.saveDue { save(&p) }
        }
    }

    /// Writes the acknowledged prefix now, if it moved since the last save.
    func saveCheckpoint() {
        progress.withLock { p in
            if p.acknowledged != p.saved { save(&p) }
        }
    }

    /// Under the progress lock: one writer at a time.
    private func save(_ p: inout Progress) {
        let temp = checkpointPath + ".tmp"
        do {
            try "\(p.acknowledged)\n".write(toFile: temp, atomically: false, encoding: .utf8)
        } catch {
            unlink(temp) // a full disk leaves no empty or partial temp file behind
            // Not fatal: the feed sends again from the last saved point after a restart (at least once).
            if !p.failing {
                let reason = (error as NSError).userInfo[NSUnderlyingErrorKey].map { "\($0)" } ?? "\(error)"
                logger.warning("mqtt: could not save the event feed's checkpoint; retrying every second",
                               metadata: ["file": "\(temp)", "error": "\(reason)"])
            }
            p.failing = true
            p.savedAt = ContinuousClock.now
            return
        }
        guard rename(temp, checkpointPath) == 0 else {
            logger.warning("mqtt: could not save the event feed's checkpoint", metadata: ["file": "\(checkpointPath)", "errno": "\(errno)"])
            return
        }
        if p.failing { logger.notice("mqtt: the event feed's checkpoint is saved again") }
        p.failing = false
        p.saved = p.acknowledged
        p.savedAt = ContinuousClock.now
    }
}
