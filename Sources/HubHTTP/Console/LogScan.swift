import HubDomain
import HubEngine
import HubLog

/// Reads the log backwards for the pages that list events (a device's recent events, the audit
/// timeline): newest first, at most `limit` matching events, reading at most `budget` records per
/// request so that a page over a long log stays fast; the answer says where to go on.
struct LogScan {
    let store: any EventStore

    struct Entry: Sendable {
        var sequence: UInt64
        var timestamp: Int64
        var stream: String
        var type: String
        var actor: String
        /// Why, when the command declared it (`automation.porch_lights`).
        var cause: String?
        var commandId: String?
        /// The event's fields (sealed owner data hidden); nil for a type this hub cannot read.
        var data: JSONValue?
    }

    struct Page: Sendable {
        var entries: [Entry]
        /// Where the next (older) page starts; nil when the start of the log was reached.
        var nextBefore: UInt64?
        /// Records read.
        var scanned: Int
    }

    /// - Parameters:
    ///   - before: The newest sequence to consider (inclusive).
    ///   - limit: Events to return at most.
    ///   - budget: Records to read at most.
    ///   - matches: Which records to keep (decoded only when kept).
    func newest(
        before: UInt64, limit: Int, budget: Int = 50_000, chunk: UInt64 = 2048,
        matches: (RecordView) -> Bool
    ) async throws -> Page {
        var entries: [Entry] = []
        var high = min(before, store.lastSequence), scanned = 0
        while high >= 1 {
            let low = high > chunk ? high - chunk + 1 : 1
            // Views, not records: a record is copied out only when it is kept.
            var found: [Entry] = []
            try await store.readViews(from: low, through: high) { view in
                if matches(view) { found.append(Self.entry(view)) }
                return true
            }
            scanned += Int(high - low + 1)
            for entry in found.reversed() {
                if entries.count == limit {
                    return Page(entries: entries, nextBefore: entries.last.map { $0.sequence - 1 }, scanned: scanned)
                }
                entries.append(entry)
            }
            if low == 1 { break }
            if scanned >= budget { return Page(entries: entries, nextBefore: low - 1, scanned: scanned) }
            high = low - 1
        }
        return Page(entries: entries, nextBefore: nil, scanned: scanned)
    }

    static func entry(_ view: RecordView) -> Entry {
        let event = try? HubEvent.decode(type: view.type, schemaVersion: view.schemaVersion, payload: view.payload)
        return entry(
            sequence: view.sequence, timestamp: view.timestamp, stream: view.stream, type: view.type, actor: view.actor,
            commandId: view.commandId, event: event)
    }

    /// The entry of a committed record, `event` its decoding (nil for a type this hub cannot read).
    static func entry(_ record: EventRecord, event: HubEvent?) -> Entry {
        entry(
            sequence: record.sequence, timestamp: record.timestamp, stream: record.stream, type: record.type,
            actor: record.causation.actor, commandId: record.causation.commandId, event: event)
    }

    private static func entry(
        sequence: UInt64, timestamp: Int64, stream: String, type: String, actor: String, commandId: String?, event: HubEvent?
    ) -> Entry {
        let attribution = Attribution(stored: actor)
        return Entry(
            sequence: sequence, timestamp: timestamp, stream: stream, type: type,
            actor: attribution.actor, cause: attribution.cause, commandId: commandId, data: event.map { hideSealed($0.jsonBody()) })
    }

    /// Sealed owner contact data shows as `"sealed"`: never its ciphertext on a page.
    static func hideSealed(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let s) where OwnerDataVault.isSealed(s): return .string("sealed")
        case .object(let pairs): return .object(pairs.map { ($0.0, hideSealed($0.1)) })
        case .array(let items): return .array(items.map(hideSealed))
        default: return value
        }
    }
}
