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
            let error = await feedUntilFailure(from: acknowledged + 1)
            if Task.isCancelled {
                await settle()
                break
            }
            // A refused or failed publish: everything after the acknowledged prefix goes out again.
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
    /// returns the failure.
    private func feedUntilFailure(from first: UInt64) async -> (any Error)? {
        let (failures, failed) = AsyncStream<any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
        return await withTaskGroup(of: (any Error)?.self) { group in
            group.addTask { await self.feed(from: first, failed: failed) }
            group.addTask {
                for await error in failures { return error }
                return nil
            }
            // Whichever ends first (a failed acknowledgement, or the feed itself) ends the other.
            var result = await group.next() ?? nil
            group.cancelAll()
            failed.finish()
            for await other in group where result == nil { result = other }
            return result
        }
    }

    /// Events published and not yet acknowledged (nor failed), and who waits for that number to fall.
    private struct Flight {
        var count = 0
        /// The feed, waiting for room in the window.
        var roomWaiter: CheckedContinuation<Void, Never>?
        /// Stopping: waiting for the count to reach 0, until `settled`.
        var drainWaiter: CheckedContinuation<Void, Never>?
        var settled = false
    }
    private let flight = Mutex(Flight())

    /// Events published and not yet acknowledged: at most `window` (a test checks that nothing is
    /// held once the broker acknowledged everything).
    var inFlight: Int { flight.withLock { $0.count } }

    private func feed(from first: UInt64, failed: AsyncStream<any Error>.Continuation) async -> (any Error)? {
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
                if inFlight >= Self.window { await roomInWindow() }
                try Task.checkCancellation()
                flight.withLock { $0.count += 1 }
                do {
                    // Told on the client's network thread: no task per event.
                    try client.publish(topic, payload, qos: 1) { [self] result in
                        switch result {
                        case .success: acknowledge(sequence)
                        case .failure(let error): failed.yield(error)
                        }
                        landed()
                    }
                } catch {
                    landed()
                    throw error
                }
            }
            return nil
        } catch is CancellationError {
            return nil
        } catch {
            return error
        }
    }

    /// Returns when fewer than `window` events are in flight, or the task is cancelled.
    private func roomInWindow() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = flight.withLock { f -> Bool in
                    if f.count < Self.window || Task.isCancelled { return true }
                    f.roomWaiter = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            flight.withLock { f in
                defer { f.roomWaiter = nil }
                return f.roomWaiter
            }?.resume()
        }
    }

    /// One event acknowledged or failed (network thread): wakes who waits for the count to fall,
    /// after the lock is let go.
    private func landed() {
        let woken = flight.withLock { f -> [CheckedContinuation<Void, Never>] in
            f.count -= 1
            var woken: [CheckedContinuation<Void, Never>] = []
            if f.count < Self.window, let waiter = f.roomWaiter {
                woken.append(waiter)
                f.roomWaiter = nil
            }
            if f.count == 0, let waiter = f.drainWaiter {
                woken.append(waiter)
                f.drainWaiter = nil
            }
            return woken
        }
        for waiter in woken { waiter.resume() }
    }

    /// Stopping: what is in flight gets up to 2 s to be acknowledged (so it is not sent again after
    /// the restart); then the rest is given up.
    private func settle() async {
        guard client.isConnected else { return } // nothing will be acknowledged soon: sent again after the restart
        let timer = Task {
            try? await Task.sleep(for: .seconds(2))
            flight.withLock { f in
                f.settled = true
                defer { f.drainWaiter = nil }
                return f.drainWaiter
            }?.resume()
        }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = flight.withLock { f -> Bool in
                if f.count == 0 || f.settled { return true }
                f.drainWaiter = waiter
                return false
            }
            if now { waiter.resume() }
        }
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
