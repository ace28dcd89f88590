import HubDomain

/// The switch commands handed to drivers whose confirmation time is not up yet, oldest first:
/// what the driver host checks when each one's time is up.
///
/// One watcher serves them all. The timeout is the same for every command, so deadlines arrive in
/// order and a queue is enough. (A sleeping task per command kept thousands of tasks alive under a
/// burst, and each task's end cost more with every task alive.) Only the device's latest command
/// counts: a command sent again replaces the one before it, which is then not failed on its own
/// earlier deadline.
struct SwitchConfirmations {
    struct Watch {
        let device: String
        let state: SwitchState
        /// The driver's name, for the failure's actor (`driver:<name>`).
        let driverName: String
        let deadline: ContinuousClock.Instant
        /// Numbers the commands; the device's latest is in `latest`.
        let number: Int
    }

    private var watches: [Watch] = []
    private var head = 0
    private var numbered = 0
    /// Per device with a command waiting: the number of its latest.
    private var latest: [String: Int] = [:]

    /// Commands waiting, superseded ones included.
    var count: Int { watches.count - head }

    /// When the oldest waiting command's time is up; nil when none waits.
    var nextDeadline: ContinuousClock.Instant? { head < watches.count ? watches[head].deadline : nil }

    /// Adds a command handed to `device`'s driver; it replaces the device's earlier ones.
    /// - Parameter deadline: no earlier than any deadline added before (the timeout is fixed).
    mutating func watch(device: String, state: SwitchState, driverName: String, deadline: ContinuousClock.Instant) {
        numbered += 1
        latest[device] = numbered
        watches.append(Watch(device: device, state: state, driverName: driverName, deadline: deadline, number: numbered))
    }

    /// Takes out every command whose deadline is at or before `now`, and returns those that are
    /// still their device's latest (to be failed if the device has not confirmed them).
    mutating func due(at now: ContinuousClock.Instant) -> [Watch] {
        var out: [Watch] = []
        while head < watches.count, watches[head].deadline <= now {
            let watch = watches[head]
            head += 1
            if latest[watch.device] == watch.number {
                latest[watch.device] = nil
                out.append(watch)
            }
        }
        if head == watches.count {
            watches.removeAll(keepingCapacity: watches.count <= 64)  // a burst's storage goes back
            head = 0
        } else if head >= 256, head * 2 >= watches.count {
            watches.removeFirst(head)
            head = 0
        }
        return out
    }
}
