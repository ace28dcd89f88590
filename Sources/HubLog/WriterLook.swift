/// When a writer thread looks for the next write before it sleeps: until
/// `SegmentStore.lookBeforeSleeping` after its last commit, and only while writes come that soon
/// (one caller writing in a loop, or many callers). Spaced writes (a switch command's two, a
/// household's pace) would find nothing and only burn a core. Public for the benchmark's hand-off
/// floor, whose writer must look exactly as the log's does.
public struct WriterLook: Sendable {
    private var looking = true
    private var committedAt = ContinuousClock.now

    /// Looking, as after a commit now.
    public init() {}

    /// Until when to look for the next write; nil to sleep at once.
    public var until: ContinuousClock.Instant? { looking ? committedAt + SegmentStore.lookBeforeSleeping : nil }

    /// A batch was taken whose first write was queued at `arrived`: look next time only if it came
    /// within the look's time after the commit before it.
    public mutating func took(firstQueuedAt arrived: ContinuousClock.Instant) {
        looking = arrived - committedAt <= SegmentStore.lookBeforeSleeping
    }

    /// The batch is committed: the next look counts from now.
    public mutating func committed() { committedAt = .now }
}
