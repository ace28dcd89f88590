import HubDomain
import HubLog
import Synchronization

/// The events the read models folded last, by sequence: the follower and the MQTT event feed take
/// the decoded ``HubEvent`` from here instead of decoding the record's payload again (each live
/// record is decoded once, by ``Hub``). A fixed ring: the entry for sequence `s` sits at
/// `s % capacity` and is overwritten `capacity` events later; a reader that falls that far behind
/// decodes for itself.
package final class RecentEvents: Sendable {
    private struct Ring {
        var sequences: [UInt64]
        var events: [HubEvent?]
        /// Events taken from the ring / decoded again because they had left it (or were not folded yet).
        var kept = 0
        var decoded = 0
    }
    private let ring: Mutex<Ring>
    /// How many events the ring holds.
    package let capacity: Int

    package init(capacity: Int = 512) {
        self.capacity = max(1, capacity)
        ring = Mutex(Ring(sequences: Array(repeating: 0, count: max(1, capacity)), events: Array(repeating: nil, count: max(1, capacity))))
    }

    /// Keeps the event folded at `sequence` (nil: the record could not be decoded by this version).
    func keep(_ event: HubEvent?, at sequence: UInt64) {
        let slot = Int(sequence % UInt64(capacity))
        ring.withLock { ring in
            ring.sequences[slot] = sequence
            ring.events[slot] = event
        }
    }

    /// The decoded event of `record`: the folded one when the ring still holds it, else decoded here.
    /// Nil when this hub version cannot read the record's payload.
    package func event(of record: EventRecord) -> HubEvent? {
        let slot = Int(record.sequence % UInt64(capacity))
        let kept: HubEvent?? = ring.withLock { ring in
            guard ring.sequences[slot] == record.sequence, record.sequence != 0 else {
                ring.decoded += 1
                return .none
            }
            ring.kept += 1
            return .some(ring.events[slot])
        }
        if let kept { return kept }
        return try? HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
    }

    /// How many events readers took from the ring, and how many they had to decode again.
    package var counts: (kept: Int, decoded: Int) { ring.withLock { ($0.kept, $0.decoded) } }
}
