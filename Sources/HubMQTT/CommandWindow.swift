import HubEngine
import Synchronization

/// The QoS 1 window, measured. libmosquitto 2.0 sends the PUBACK for an incoming QoS 1 message
/// before it calls the application, and has no way to delay it; so from `MQTTMessage.receivedAt` until
/// the command's append is durable, the broker has forgotten the command and only the hub's memory
/// holds it. A crash then loses it (the client can retry with the same `command_id`, see
/// docs/mqtt.md, "What the hub promises for a command").
///
/// Always counted (two atomics per command): how many commands sit in the lanes, received but not
/// yet durable, now and at most. Timed per command only while `record` is on (the benchmark).
public final class CommandWindow: Sendable {
    /// One command message, in seconds from `MQTTMessage.receivedAt` (the libmosquitto callback).
    public struct Sample: Sendable {
        /// Until its lane took it: time in the client's stream, routing and parsing, the lane's queue.
        public var taken: Double
        /// Until its append was durable (its answer was decided).
        public var durable: Double
        /// Until its answer was handed to the client library.
        public var answered: Double
    }

    private let inWindow = Atomic<Int>(0)
    private let refusedTotal = Atomic<Int>(0)
    private let peak = Atomic<Int>(0)
    private let recording = Atomic<Bool>(false)
    private let samples = Mutex<[Sample]>([])

    /// A window with nothing in it and no samples.
    public init() {}

    /// Commands in the lanes now: received (acknowledged), parsed, not yet durable.
    public var current: Int { inWindow.load(ordering: .relaxed) }
    /// The most there were at once since start (or since `resetPeak`).
    public var maximum: Int { peak.load(ordering: .relaxed) }
    /// Commands refused since start because their lane was full (answered `hub_busy`).
    public var refusedBusy: Int { refusedTotal.load(ordering: .relaxed) }
    /// Restarts `maximum` from the commands in the window now.
    public func resetPeak() { peak.store(inWindow.load(ordering: .relaxed), ordering: .relaxed) }

    /// Starts timing each command (dropping earlier samples).
    public func record() {
        samples.withLock { $0.removeAll() }
        recording.store(true, ordering: .relaxed)
    }

    /// Stops timing and returns the samples since `record()`.
    public func stopRecording() -> [Sample] {
        recording.store(false, ordering: .relaxed)
        return samples.withLock { taken in
            defer { taken = [] }; return taken
        }
    }

    func queued() {
        let now = inWindow.wrappingAdd(1, ordering: .relaxed).newValue
        var seen = peak.load(ordering: .relaxed)
        while now > seen {
            let (exchanged, original) = peak.compareExchange(expected: seen, desired: now, ordering: .relaxed)
            if exchanged { break }
            seen = original
        }
    }

    /// A command its lane could not take (answered `hub_busy`): it leaves the window unrun.
    func refused() {
        inWindow.wrappingSubtract(1, ordering: .relaxed)
        refusedTotal.wrappingAdd(1, ordering: .relaxed)
    }

    func finished(
        _ work: MQTTSurface.Work, taken: ContinuousClock.Instant, durable: ContinuousClock.Instant,
        answered: ContinuousClock.Instant
    ) {
        inWindow.wrappingSubtract(1, ordering: .relaxed)
        guard recording.load(ordering: .relaxed), work.parsed.query == nil, let received = work.message.receivedAt else { return }
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        let sample = Sample(taken: seconds(taken - received), durable: seconds(durable - received), answered: seconds(answered - received))
        samples.withLock { $0.append(sample) }
    }
}
