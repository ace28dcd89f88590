import Foundation
import HubDomain
import HubHistory
import HubLog

extension Hub {
    /// Decodes and folds records `state.lastSequence + 1 ... through` (optionally stopping at a bound).
    /// Events this hub version cannot read are skipped and counted, never guessed at.
    ///
    /// - Returns: How many events could not be read.
    @discardableResult
    public nonisolated(nonsending) static func fold(
        store: any EventStore, into state: inout HubState, through: UInt64, until bound: LogBound? = nil
    ) async throws -> Int {
        try await fold(store: store, into: &state, history: nil, through: through, until: bound)
    }

    /// Folds into `state` and the history files together, each from where it stands (the files may
    /// stand before or after the snapshot the state came from).
    nonisolated(nonsending) static func fold(
        store: any EventStore, into state: inout HubState, history: HistoryFiles?, through: UInt64,
        until bound: LogBound? = nil
    ) async throws -> Int {
        var reader = FoldReader()
        let from = min(state.lastSequence, history?.foldedThrough ?? state.lastSequence) + 1
        try await store.readViews(from: from, through: through) { view in
            if let bound, !bound.admits(sequence: view.sequence, timestamp: view.timestamp) { return false }
            let toState = view.sequence > state.lastSequence
            let toHistory = history.map { view.sequence > $0.foldedThrough } ?? false
            // Bound once, not kept as an optional and bound again: an event is a large enum, and
            // each binding of a kept value copies it.
            guard let (event, context) = reader.decode(view) else {
                if toState { state.skip(sequence: view.sequence) }
                if toHistory { history?.skip(sequence: view.sequence) }
                return true
            }
            if toState { state.apply(event, context: context) }
            if toHistory { history?.apply(event, context: context) }
            return true
        }
        return reader.unreadable
    }
}

/// Decodes record views into events, reusing the strings of the few types and actors a log has.
struct FoldReader {
    /// Each distinct event type's name and what it names.
    private var types = ByteKeyedCache<(name: String, known: EventType?)>()
    /// Each distinct actor field split into who and why.
    private var actors = ByteKeyedCache<Attribution>()
    private(set) var unreadable = 0

    /// The event and its context; nil (counted) for an event this hub version cannot read.
    mutating func decode(_ view: RecordView) -> (HubEvent, EventContext)? {
        let type = types.value(for: view.typeBytes) { bytes in
            let name = String(decoding: bytes, as: UTF8.self)
            return (name, EventType(rawValue: name))
        }
        do {
            let event = try HubEvent.decode(type: type.name, as: type.known, schemaVersion: view.schemaVersion, payload: view.payload)
            return (
                event,
                EventContext(
                    sequence: view.sequence, timestamp: view.timestamp,
                    attribution: actors.value(for: view.actorBytes) { Attribution(stored: String(decoding: $0, as: UTF8.self)) },
                    commandId: view.commandId)
            )
        } catch {
            unreadable += 1
            return nil
        }
    }
}

/// Reuses what was made of a byte sequence seen before (event types, actor fields: a handful of
/// distinct values repeated millions of times on replay), so replay does not make each one anew.
/// Internal to the engine, so that the replay's loop is specialized for each `Value` (a generic
/// cache in another module ran unspecialized: every lookup copied its entries through their
/// metadata, and replay fell to about two thirds of its rate).
struct ByteKeyedCache<Value> {
    private var entries: [(bytes: [UInt8], value: Value)] = []
    private let capacity: Int

    /// - Parameter capacity: How many distinct byte sequences to remember.
    init(capacity: Int = 64) { self.capacity = capacity }

    /// The value for `bytes`, made by `make` once per distinct byte sequence (pass the same `make`
    /// for every call on one cache).
    @inline(__always)
    mutating func value(for bytes: UnsafeRawBufferPointer, _ make: (UnsafeRawBufferPointer) -> Value) -> Value {
        for index in entries.indices where entries[index].bytes.count == bytes.count {
            let same =
                bytes.isEmpty || entries[index].bytes.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
            if same { return entries[index].value }
        }
        let value = make(bytes)
        if entries.count < capacity { entries.append((Array(bytes), value)) }
        return value
    }
}
