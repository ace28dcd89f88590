import Foundation
import HubEngine
import HubLog
import Logging
import MQTT
import ServiceLifecycle
import Synchronization

/// Every logged event on `<base>/events/<stream>/<type>`, at QoS 1, in log order, starting after
/// the last one the broker acknowledged (kept in a checkpoint file, written in place every 30 s),
/// so none is skipped across restarts. At least once: after a crash the events sent since the
/// last checkpoint go out again.
///
/// Up to `window` events are in flight at once. Waiting for each PUBACK before sending the next
/// would cap the stream at one event per broker round trip, below what the log takes in under load.
///
/// A publish the broker refuses (an ACL, a queue limit) or that fails stops the window: the first
/// unacknowledged event is then sent alone, after 0.5 s, doubling to 30 s while the broker keeps
/// refusing it (each refusal counted in `hub_mqtt_events_refused_total`), and the window opens again
/// once it is taken. A broker that refuses the feed gets one publish per back-off step, not the
/// whole backlog again and again.
final class MQTTEventsPublisher: Service {
    let hub: Hub
    let client: MQTTClient
    let topics: MQTTTopics
    let checkpointPath: String
    let logger: Logger
    /// Events awaiting their PUBACK at most.
    static let window = 256
    /// How long the checkpoint may lag the broker's acknowledgements (and at shutdown it is saved):
    /// at a household's pace of an event every few seconds, a save a second would rewrite the file
    /// for nearly every event, and each save is a page and a journal block an SD card writes. After
    /// a crash, at most this much (and the log's delay) is sent again.
    static let saveInterval: Duration = .seconds(300)
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
        /// The saver was asked and has not saved since.
        var saveAsked = false

        mutating func complete(_ sequence: UInt64) {
            guard sequence > acknowledged else { return }
            ahead.insert(sequence)
            while ahead.remove(acknowledged + 1) != nil { acknowledged += 1 }
        }

        /// Whether the checkpoint is due: every 1,000 events, or ``MQTTEventsPublisher/saveInterval``
        /// after the last save (after a failed save, only then).
        var saveDue: Bool {
            (!failing && acknowledged >= saved + 1000)
                || (acknowledged > saved && ContinuousClock.now - savedAt > MQTTEventsPublisher.saveInterval)
        }

        /// Whether to ask the saver now: the checkpoint is due and the saver was not asked already.
        mutating func askToSave() -> Bool {
            guard !saveAsked, saveDue else { return false }
            saveAsked = true
            return true
        }
    }

    /// Asks the saver task to write the checkpoint: acknowledgements are told on the MQTT client's
    /// network thread, which must not wait for a file to be written.
    private let saves = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

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
        // Never past the log's end: after a power cut the log may end before the observations the
        // feed had sent (they were not synced yet), and the events logged next reuse their sequences.
        let start = min(readCheckpoint(), hub.store.lastSequence)
        progress.withLock { $0 = Progress(acknowledged: start, saved: start) }
        let saver = Task { [hub] in
            for await _ in saves.stream {
                // Saved when the log next writes (its write then shares the log's moment: one
                // journal commit), as far as that made durable.
                let target = progress.withLock { $0.acknowledged }
                if hub.store.durableSequence < target {
                    do { try await hub.store.waitForDurable(after: target - 1) } catch { return }
                }
                saveCheckpoint()
            }
        }
        var lastProblem: (text: String, at: ContinuousClock.Instant)?
        while !Task.isCancelled {
            let error = await feedUntilFailure(from: acknowledged + 1)
            if Task.isCancelled {
                await settle()
                break
            }
            hub.metrics.mqttEventRefused()
            // Said once, and again every minute while it lasts: a stalled feed is not hidden.
            let problem =
                "mqtt: the event feed stopped after event \(acknowledged): \(error.map { "\($0)" } ?? "unknown error"); "
                + "retrying that event alone with back-off (0.5 s doubling to 30 s)"
            if lastProblem?.text != problem || ContinuousClock.now - (lastProblem?.at ?? .now) > .seconds(60) {
                logger.error("\(problem)")
                lastProblem = (problem, ContinuousClock.now)
            }
            await retryAlone()
        }
        saves.continuation.finish()
        saver.cancel()  // a save waiting for the log's next write is made below
        await saver.value  // one writer at a time
        // What the log holds for its next write moment is written now (in a task of its own: this
        // one is cancelled), so the last checkpoint names every event the broker took.
        try? await Task { [hub] in try await hub.store.makeDurable() }.value
        saveCheckpoint()
    }

    /// The first wait before a refused event is sent again, and the longest.
    static let firstRetry: Duration = .milliseconds(500)
    static let longestRetry: Duration = .seconds(30)

    /// After a refusal: sends the first unacknowledged event alone, after ``firstRetry``, doubling
    /// the wait up to ``longestRetry`` each time the broker refuses it again. Returns once the broker
    /// took it (the windowed feed goes on from the next one), or when cancelled.
    private func retryAlone() async {
        var delay = Self.firstRetry
        var refusals = 1
        while !Task.isCancelled {
            do { try await Task.sleep(for: delay) } catch { return }
            let sequence = acknowledged + 1
            var found: EventRecord?
            do {
                try await hub.store.read(from: sequence, through: sequence) {
                    found = $0; return false
                }
            } catch {
                logger.warning("mqtt: the event feed cannot read event \(sequence) to send it again", metadata: ["error": "\(error)"])
            }
            guard let record = found else { return }  // let the feed itself say what is wrong
            while !client.isConnected {
                do { try await client.waitUntilConnected(timeout: .seconds(60)) } catch let error as MQTTError where error.kind == .timeout
                {
                } catch { return }
            }
            switch await publishAlone(record) {
            case .success:
                acknowledge(sequence)
                if refusals > 1 {
                    logger.notice("mqtt: the broker took event \(sequence) after \(refusals) refusals; the event feed goes on")
                }
                return
            case .failure(let error):
                if Task.isCancelled { return }
                refusals += 1
                hub.metrics.mqttEventRefused()
                delay = min(delay * 2, Self.longestRetry)
                if refusals == 3 || refusals % 10 == 0 {
                    logger.warning("mqtt: the broker refused event \(sequence) \(refusals) times in a row (\(error)); next try in \(delay)")
                }
            }
        }
    }

    /// Publishes one event and waits for what became of it (or for cancellation: a stopping feed
    /// does not wait for a broker that never answers).
    private func publishAlone(_ record: EventRecord) async -> Result<Void, any Error> {
        let topic = topics.event(stream: record.stream, type: record.type)
        let payload = EventLines.bytes(record, event: hub.event(of: record))
        let waiter = Mutex<CheckedContinuation<Result<Void, any Error>, Never>?>(nil)
        @Sendable func finish(_ result: Result<Void, any Error>) {
            waiter.withLock { w in
                defer { w = nil }
                return w
            }?.resume(returning: result)
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, any Error>, Never>) in
                waiter.withLock { $0 = continuation }
                if Task.isCancelled { finish(.failure(CancellationError())); return }
                do {
                    try client.publish(topic, payload, qos: 1) { result in finish(result) }
                } catch {
                    finish(.failure(error))
                }
            }
        } onCancel: {
            finish(.failure(CancellationError()))
        }
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

    /// Events published and not yet acknowledged (nor failed). Counted without a lock: the network
    /// thread tells every acknowledgement, and takes ``waiting``'s lock only when the count crosses
    /// what a waiter waits for.
    private let flying = Atomic<Int>(0)

    /// Who waits for the count to fall.
    private struct Waiting {
        /// The feed, waiting for room in the window.
        var room: CheckedContinuation<Void, Never>?
        /// Stopping: waiting for the count to reach 0, until `settled`.
        var drain: CheckedContinuation<Void, Never>?
        var settled = false
    }
    private let waiting = Mutex(Waiting())

    /// Events published and not yet acknowledged: at most `window` (a test checks that nothing is
    /// held once the broker acknowledged everything).
    var inFlight: Int { flying.load(ordering: .acquiring) }

    private func feed(from first: UInt64, failed: AsyncStream<any Error>.Continuation) async -> (any Error)? {
        do {
            for try await record in hub.store.subscribe(from: first) {
                let topic = topics.event(stream: record.stream, type: record.type)
                let payload = EventLines.bytes(record, event: hub.event(of: record))
                let sequence = record.sequence
                // While disconnected the events stay in the log rather than pile up in the client's
                // queue (libmosquitto would send them all at once, racing the new connection's set-up).
                while !client.isConnected {
                    do { try await client.waitUntilConnected(timeout: .seconds(60)) } catch let error as MQTTError
                        where error.kind == .timeout
                    {}
                }
                if inFlight >= Self.window { await roomInWindow() }
                try Task.checkCancellation()
                flying.add(1, ordering: .acquiringAndReleasing)
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
                // Checked again under the lock: an acknowledgement that took the count below the
                // window after this looked finds the waiter, or this finds the count.
                let now = waiting.withLock { w -> Bool in
                    if inFlight < Self.window || Task.isCancelled { return true }
                    w.room = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            waiting.withLock { w in
                defer { w.room = nil }
                return w.room
            }?.resume()
        }
    }

    /// One event acknowledged or failed (network thread). Wakes, after the lock is let go, the feed
    /// when the count fell below the window, and a stopping feed when it reached 0.
    private func landed() {
        let left = flying.subtract(1, ordering: .acquiringAndReleasing).newValue
        guard left == Self.window - 1 || left == 0 else { return }
        let woken = waiting.withLock { w -> [CheckedContinuation<Void, Never>] in
            var woken: [CheckedContinuation<Void, Never>] = []
            if let room = w.room {
                woken.append(room)
                w.room = nil
            }
            if left == 0, let drain = w.drain {
                woken.append(drain)
                w.drain = nil
            }
            return woken
        }
        for waiter in woken { waiter.resume() }
    }

    /// Stopping: what is in flight gets up to 2 s to be acknowledged (so it is not sent again after
    /// the restart); then the rest is given up.
    private func settle() async {
        guard client.isConnected else { return }  // nothing will be acknowledged soon: sent again after the restart
        let timer = Task {
            try? await Task.sleep(for: .seconds(2))
            waiting.withLock { w in
                w.settled = true
                defer { w.drain = nil }
                return w.drain
            }?.resume()
        }
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let now = waiting.withLock { w -> Bool in
                if inFlight == 0 || w.settled { return true }
                w.drain = waiter
                return false
            }
            if now { waiter.resume() }
        }
        timer.cancel()
    }

    func readCheckpoint() -> UInt64 {
        guard let text = try? String(contentsOfFile: checkpointPath, encoding: .utf8),
            let value = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return 0 }
        return value
    }

    /// One event acknowledged (network thread): advance the prefix, and ask the saver when the
    /// checkpoint is due (one lock per event).
    private func acknowledge(_ sequence: UInt64) {
        let ask = progress.withLock { p in
            p.complete(sequence)
            return p.askToSave()
        }
        if ask { saves.continuation.yield() }
    }

    /// Writes the acknowledged prefix now, as far as the log has made it durable (the checkpoint
    /// never names an event a power cut could take back: the events logged after the restart
    /// would take those sequences, and the feed would skip them), if it moved since the last save.
    /// One caller at a time (the saver task, then the stopping feed); the file is written outside
    /// the lock, so acknowledgements never wait for it.
    func saveCheckpoint() {
        let durable = hub.store.durableSequence
        let (target, saved, wasFailing) = progress.withLock { p in
            p.saveAsked = false
            return (min(p.acknowledged, durable), p.saved, p.failing)
        }
        guard target > saved else { return }
        let problem = write(target)
        progress.withLock { p in
            p.savedAt = ContinuousClock.now
            p.failing = problem != nil
            if problem == nil { p.saved = target }
        }
        if let problem, !wasFailing {
            // Not fatal: the feed sends again from the last saved point after a restart (at least once).
            logger.warning(
                "mqtt: could not save the event feed's checkpoint; retrying every second",
                metadata: ["file": "\(problem.file)", "error": "\(problem.error)"])
        }
        if problem == nil, wasFailing { logger.notice("mqtt: the event feed's checkpoint is saved again") }
    }

    /// Writes `sequence` to the checkpoint file; which file failed and why, if it failed.
    private func write(_ sequence: UInt64) -> (file: String, error: String)? {
        Self.writeCheckpoint(sequence, to: checkpointPath).map { (checkpointPath, $0) }
    }

    /// Writes `sequence` over the file at `path` in place: 20 digits and a newline at its start,
    /// not synced. The checkpoint only says where the at-least-once feed goes on after a restart:
    /// a temporary file synced and renamed over it cost a new inode, a directory entry and a
    /// journal commit at every save, most of what a quiet household's hub wrote. After a power
    /// cut the file may hold an older number (the feed sends again from there) or, for a file
    /// just made, none (from the start); a number past the log's end is not followed.
    /// - Returns: Why the write failed, or nil.
    static func writeCheckpoint(_ sequence: UInt64, to path: String) -> String? {
        let digits = String(sequence)
        let line = Array((String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "\n").utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return "open: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        let written = line.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        guard written == line.count else { return "write: \(written < 0 ? String(cString: strerror(errno)) : "short write")" }
        var st = stat()
        if fstat(fd, &st) == 0, Int(st.st_size) > line.count { _ = ftruncate(fd, off_t(line.count)) }
        return nil
    }
}
