import Foundation
import HubLog
import MQTT
import Synchronization

/// Every logged event on `<base>/events/<stream>/<type>`, at QoS 1, in log order, starting after
/// the last one the broker acknowledged (kept in a checkpoint file), so none is skipped across
/// restarts. At least once: after a crash the events sent but not yet checkpointed go out again.
///
/// Up to `window` events are in flight at once. Waiting for each PUBACK before sending the next
/// would cap the stream at one event per broker round trip, below what the log takes in under load.
final class MQTTEventsPublisher: Sendable {
    let hub: Hub
    let client: MQTTClient
    let topics: MQTTTopics
    let checkpointPath: String
    let window: Int
    private let progress = Mutex(Progress())

    /// The contiguous prefix of the log the broker has acknowledged.
    struct Progress {
        var acknowledged: UInt64 = 0
        /// Acknowledged out of order (beyond a gap), folded in when the gap closes.
        var ahead: Set<UInt64> = []

        mutating func complete(_ sequence: UInt64) {
            guard sequence > acknowledged else { return }
            ahead.insert(sequence)
            while ahead.remove(acknowledged + 1) != nil { acknowledged += 1 }
        }
    }

    init(hub: Hub, client: MQTTClient, topics: MQTTTopics, checkpointPath: String, window: Int = 256) {
        self.hub = hub
        self.client = client
        self.topics = topics
        self.checkpointPath = checkpointPath
        self.window = window
    }

    /// The last sequence such that it and every event before it were acknowledged by the broker.
    var acknowledged: UInt64 { progress.withLock { $0.acknowledged } }

    /// Runs until its task is cancelled, then waits briefly for what is in flight and saves the checkpoint.
    func run() async {
        let start = readCheckpoint()
        progress.withLock { $0 = Progress(acknowledged: start) }
        var lastSaved = start
        var lastSave = ContinuousClock.now
        var inFlight: [Task<Void, any Error>] = []
        var head = 0
        while !Task.isCancelled {
            do {
                for try await record in hub.store.subscribe(from: acknowledged + UInt64(inFlight.count - head) + 1) {
                    let topic = topics.event(stream: record.stream, type: record.type)
                    let payload = Array(EventLines.render(record).utf8)
                    let sequence = record.sequence
                    // Published here, in log order; only the wait for the acknowledgement runs apart.
                    let ticket = try client.publishTracked(topic, payload, qos: 1)
                    inFlight.append(Task {
                        try await ticket.acknowledged()
                        self.progress.withLock { $0.complete(sequence) }
                    })
                    while inFlight.count - head >= window {
                        try await inFlight[head].value
                        head += 1
                    }
                    if head >= 4096 {
                        inFlight.removeFirst(head)
                        head = 0
                    }
                    let done = acknowledged
                    if done - lastSaved >= 1000 || (done > lastSaved && ContinuousClock.now - lastSave > .seconds(1)) {
                        writeCheckpoint(done)
                        lastSaved = done
                        lastSave = ContinuousClock.now
                    }
                }
                break // the subscription ends only when this task is cancelled
            } catch {
                if Task.isCancelled { break }
                // A refused or failed publish: everything after the acknowledged prefix goes out again.
                for task in inFlight[head...] { task.cancel() }
                for task in inFlight[head...] { _ = await task.result }
                inFlight = []
                head = 0
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
        await settle(inFlight[head...])
        writeCheckpoint(acknowledged)
    }

    /// Stopping: what is in flight gets a moment to be acknowledged (so it is not sent again after
    /// the restart); then the rest is given up.
    private func settle(_ pending: ArraySlice<Task<Void, any Error>>) async {
        guard !pending.isEmpty else { return }
        let pending = Array(pending)
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

    func writeCheckpoint(_ sequence: UInt64) {
        let temp = checkpointPath + ".tmp"
        guard (try? "\(sequence)\n".write(toFile: temp, atomically: false, encoding: .utf8)) != nil else { return }
        _ = rename(temp, checkpointPath)
    }
}
