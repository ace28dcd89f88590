import Foundation
import HubDomain
import HubHistory
import HubLog
import HubMetrics

/// Where the hub keeps its data: `<dataDir>/log` (segments) and `<dataDir>/snapshots`.
public struct HubPaths: Sendable {
    /// The data directory.
    public var dataDirectory: String
    /// Where the event log is kept when it is not the segment log in ``log``: a
    /// `postgres://user@host:5432/database` URL (`--log`, or `log` in the configuration file);
    /// nil for the embedded segment log. The data directory still holds snapshots and keys.
    public var logURL: String?
    /// The paths of `dataDirectory`; `logURL` nil for the embedded segment log.
    public init(dataDirectory: String, logURL: String? = nil) {
        self.dataDirectory = dataDirectory
        self.logURL = logURL
    }
    /// The segment log's directory, `<dataDir>/log`.
    public var log: String { dataDirectory + "/log" }
    /// The snapshots' directory, `<dataDir>/snapshots`.
    public var snapshots: String { dataDirectory + "/snapshots" }
    /// The history read model's files (see `HistoryFiles`).
    public var history: String { dataDirectory + "/history" }

    /// Whether there may be a log to open read-only: the segment log's directory exists, or a
    /// PostgreSQL log is named (its tables are checked when it opens).
    public var mayHoldLog: Bool { logURL != nil || FileManager.default.fileExists(atPath: log) }

}

/// The outcome of one command.
public enum CommandOutcome: Sendable, Equatable {
    /// Accepted: the events appended (none when nothing changed). `duplicate` marks a retried command id.
    case accepted(events: [HubEvent], result: AppendResult?, duplicate: Bool)
    /// Refused: why, and where the refusal was recorded (a CommandRejected event).
    case rejected(Rejection, result: AppendResult?, duplicate: Bool)
}

/// The running hub's core: it owns the event log, keeps the read models current, and turns
/// commands into events (or recorded rejections).
public actor Hub {
    /// The event log, through the storage protocol only (any backend); the hub closes it in ``close()``.
    public nonisolated let store: any EventStore
    let snapshots: SnapshotStore
    /// The read models, folded through the last event appended or caught up.
    public private(set) var state: HubState
    /// The history read model, on disk; `state` folds no history.
    let history: HistoryFiles
    let limits: DomainLimits
    /// A projection snapshot is written after this many new events (and on close).
    let snapshotEvery: UInt64
    var snapshotSequence: UInt64 = 0
    /// After a snapshot could not be written: why, and the sequence before which it is not tried again.
    public private(set) var snapshotProblem: String? = nil
    var snapshotRetryAt: UInt64 = 0
    /// When the newest snapshot was written (seconds since the epoch; the file's time for one found at start).
    var snapshotWrittenAt: Double?
    /// Where the hub's own measurements go (appends; the log's syncs when it opened the log itself).
    public nonisolated let metrics: HubMetrics
    /// What opening found (the store's own notes, snapshot used, events replayed), for the log.
    public nonisolated let openingNotes: [String]
    /// Seals owner contact data before it is logged; erasing deletes the key.
    public nonisolated let vault: OwnerDataVault
    /// The events folded last, decoded: what the follower and the event feed read instead of
    /// decoding each record again (``event(of:)``).
    package nonisolated let recent = RecentEvents()

    /// Bumped whenever the read models' shape or rules change, so older snapshots are ignored
    /// (6: latest readings by measured time, history weighted by time; 7: the audit trail keeps
    /// each change's declared cause; 8: a device may be an outlet of a strip, an animal keeps its earlier stays).
    package static let snapshotFormat = 8

    /// Starts the hub on an opened event store of any backend, restoring the read models from the
    /// newest snapshot the log vouches for and replaying the rest of the log. A snapshot the log does
    /// not vouch for (damaged, unsealed, or recording another chain hash at its sequence), or of
    /// another read-model format, is set aside, never used, and named in ``openingNotes``.
    ///
    /// - Parameters:
    ///   - store: The event log; the hub owns it from now on and closes it in ``close()``.
    ///   - paths: Where the snapshots and the owner-data keys are kept.
    ///   - limits: The domain's limits.
    ///   - snapshotEvery: Write a snapshot after this many new events.
    ///   - metrics: where appends are measured.
    ///   - opening: Notes said before the store's own (what the caller found opening the data directory).
    /// - Throws: When the snapshot directory cannot be made or the log cannot be read.
    public init(
        store: any EventStore, paths: HubPaths, limits: DomainLimits = .standard, snapshotEvery: UInt64 = 10_000,
        metrics: HubMetrics = .disabled, notes opening: [String] = []
    ) async throws {
        self.store = store
        self.metrics = metrics
        snapshots = try SnapshotStore(directory: paths.snapshots)
        let vault = OwnerDataVault(dataDirectory: paths.dataDirectory)
        self.vault = vault
        self.limits = limits
        self.snapshotEvery = snapshotEvery
        var notes = opening + store.openingNotes + snapshots.notes
        var state = HubState(foldsHistory: false)
        // Only a snapshot the log vouches for (sealed here, and the log has its chain hash at its
        // sequence); the others are set aside, each with a note.
        let found = try await snapshots.loadLatest { try await store.chainHash(at: $0) }
        notes += found.notes
        if let snapshot = found.snapshot {
            let sequence = snapshot.sequence
            if let restored = Self.decodeSnapshot(snapshot.bytes) {
                if restored.lastSequence == sequence {
                    state = restored
                    state.foldsHistory = false
                    snapshotSequence = sequence
                    let file = paths.snapshots + "/" + snapshot.name
                    snapshotWrittenAt = (try? FileManager.default.attributesOfItem(atPath: file)[.modificationDate] as? Date)?
                        .map { $0.timeIntervalSince1970 }
                    notes.append("read models restored from the snapshot at sequence \(sequence)")
                } else {
                    notes.append(
                        try snapshots.setAside(
                            snapshot.name, because: "its read models end at sequence \(restored.lastSequence), not \(sequence)"))
                }
            } else {
                // Another read-model format (an earlier build's): set aside with every other one
                // like it, so that no build ever folds on from files it does not read as written.
                for name in try snapshots.names() {
                    guard case .success(let other) = snapshots.read(name), Self.decodeSnapshot(other.bytes) == nil else { continue }
                    let found =
                        Self.snapshotFormat(of: other.bytes).map { "read-model format \($0)" } ?? "a read-model format it cannot read"
                    notes.append(
                        try snapshots.setAside(
                            name, because: "it is from another hub version (\(found); this hub's is \(Self.snapshotFormat))"))
                }
            }
        }
        let history = try HistoryFiles(directory: paths.history)
        notes += try await Self.checkHistory(history, against: store)
        let before = state.lastSequence
        let historyBefore = history.foldedThrough
        try await history.foldingInBulk {
            try await Self.fold(store: store, into: &state, history: history, through: store.lastSequence)
        }
        notes.append("replayed \(state.lastSequence - before) events; log holds \(store.lastSequence)")
        if history.foldedThrough - historyBefore != state.lastSequence - before {
            notes.append("history files folded \(history.foldedThrough - historyBefore) events from sequence \(historyBefore + 1)")
        }
        if let problem = history.problem { notes.append("history files: \(problem)") }
        self.history = history
        // An erasure logged just before a crash: finish it (the key must not outlive the event).
        for animal in state.animals.byId.values where animal.ownerErased && vault.hasKey(animal: animal.id) {
            try vault.erase(animal: animal.id)
        }
        self.state = state
        openingNotes = notes
    }

    // MARK: Commands

    /// Validates and applies one command. Rejections of well-formed commands are recorded as
    /// CommandRejected events (nothing hidden). A retried command id returns the original outcome.
    /// `durability` is ``Durability/observation`` for what a driver or bridge reports (its events may
    /// be synced a bounded delay later, see `EventStore`); commands are immediate.
    public func execute(
        _ command: HubCommand, commandId: String? = nil, actor: String, now: Int64,
        durability: Durability = .immediate
    ) async throws -> CommandOutcome {
        var command = command
        if case .admitAnimal(let admission) = command {
            // Owner contact data is logged sealed, so that it can be erased later (see OwnerDataVault).
            command = .admitAnimal(try vault.sealOwner(admission))
        }
        let outcome = try await decideAndAppend(command, commandId: commandId, actor: actor, now: now, durability: durability)
        if case .eraseOwnerData(let id) = command, case .accepted(let events, _, _) = outcome, !events.isEmpty {
            do {
                try vault.erase(animal: id)
            } catch {
                throw HubError.failed("OwnerDataErased is logged, but \(error); the hub deletes it again at its next start")
            }
        }
        return outcome
    }

    private func decideAndAppend(
        _ command: HubCommand, commandId: String?, actor: String, now: Int64,
        durability: Durability
    ) async throws -> CommandOutcome {
        // Commands on one stream (and those guarding a cross-stream rule) take turns; others overlap
        // and share the log's group commit.
        let keys = Self.serializationKeys(command)
        for key in keys { await acquire(key) }
        defer { for key in keys { release(key) } }
        try await catchUpWithoutBlocking()
        if let commandId, let original = try await store.commandResult(commandId) {
            return try await outcome(ofEarlier: original)
        }
        for _ in 0..<8 {
            switch decide(command, state: state, now: now, limits: limits) {
            case .accepted(let events):
                guard !events.isEmpty else { return .accepted(events: [], result: nil, duplicate: false) }
                let stream = events[0].stream
                let expected: ExpectedVersion = try await store.streamVersion(stream).map { .exact($0) } ?? .noStream
                do {
                    let result = try await append(
                        events, stream: stream, expected: expected, commandId: commandId, actor: actor, now: now,
                        durability: durability)
                    if result.duplicate { return try await outcome(ofEarlier: result) }
                    return .accepted(events: events, result: result, duplicate: false)
                } catch EventLogError.wrongExpectedVersion {
                    try await catchUpWithoutBlocking()  // another command got there first: decide again on the newer state
                    continue
                }
            case .rejected(let rejection):
                let event = rejectionEvent(for: command, rejection: rejection, commandId: commandId)
                let result = try await append(
                    [event], stream: event.stream, expected: .any, commandId: commandId, actor: actor, now: now,
                    durability: durability)
                if result.duplicate { return try await outcome(ofEarlier: result) }
                return .rejected(rejection, result: result, duplicate: false)
            }
        }
        throw HubError.failed("command \(command.name) kept conflicting with concurrent commands; try again")
    }

    /// What commands take turns on: a stream they write, or a rule that spans streams.
    package enum SerializationKey: Hashable, Sendable {
        case stream(StreamKey)
        /// A beacon is bound to at most one admitted animal.
        case beaconRule
        /// A hardware id is bound to at most one active device.
        case hardwareIdRule
    }

    /// The stream a command writes first, then any rule it must guard.
    package static func serializationKeys(_ command: HubCommand) -> [SerializationKey] {
        switch command {
        case .admitAnimal(let a): return [.stream(.animal(a.animal)), .beaconRule]
        case .registerDevice(let id, _, _, _, _): return [.stream(.device(id)), .hardwareIdRule]
        case .registerStrip(let id, _, _, _, let outlets):
            return [.stream(.device(id))] + outlets.map { .stream(.device("\(id)-\($0.number)")) } + [.hardwareIdRule]
        case .recordReading(let subject, _, _, _): return [.stream(subject.streamKey)]
        case .dischargeAnimal(let id, _, _, _), .sightAnimal(let id, _, _, _), .markAnimalUnseen(let id, _, _), .eraseOwnerData(let id):
            return [.stream(.animal(id))]
        case .defineGroup(let id, _, _), .removeGroup(let id), .switchGroup(let id, _): return [.stream(.group(id))]
        case .defineScene(let id, _, _), .removeScene(let id), .applyScene(let id): return [.stream(.scene(id))]
        default: return [.stream(.device(command.target ?? ""))]
        }
    }

    private var busyKeys: Set<SerializationKey> = []
    private var keyWaiters: [SerializationKey: [CheckedContinuation<Void, Never>]] = [:]

    private func acquire(_ key: SerializationKey) async {
        while busyKeys.contains(key) {
            await withCheckedContinuation { keyWaiters[key, default: []].append($0) }
        }
        busyKeys.insert(key)
    }

    private func release(_ key: SerializationKey) {
        busyKeys.remove(key)
        if var waiting = keyWaiters[key], !waiting.isEmpty {
            let next = waiting.removeFirst()
            keyWaiters[key] = waiting.isEmpty ? nil : waiting
            next.resume()
        }
    }

    private func append(
        _ events: [HubEvent], stream: String, expected: ExpectedVersion, commandId: String?,
        actor: String, now: Int64, durability: Durability
    ) async throws -> AppendResult {
        let proposed = events.map {
            ProposedEvent(type: $0.typeName, schemaVersion: $0.schemaVersion, timestamp: now, payload: $0.encodePayload())
        }
        let started = ContinuousClock.now
        let result = try await store.append(
            AppendRequest(
                stream: stream, expected: expected,
                causation: Causation(commandId: commandId, actor: actor), events: proposed,
                durability: durability))
        if !result.duplicate { metrics.appended(events: proposed.count, duration: ContinuousClock.now - started) }
        try await catchUpWithoutBlocking()
        return result
    }

    /// Rebuilds the outcome of an already-logged command from its events.
    private func outcome(ofEarlier result: AppendResult) async throws -> CommandOutcome {
        let events = try await store.records(from: result.firstSequence, through: result.lastSequence).map { record in
            try HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
        }
        if events.count == 1, case .commandRejected(let r) = events[0] {
            return .rejected(Rejection(code: r.code, message: r.message), result: result, duplicate: true)
        }
        return .accepted(events: events, result: result, duplicate: true)
    }

    // MARK: Read models

    /// What the state topics show of one device.
    public struct DeviceView: Sendable {
        /// The device's record.
        public var record: DeviceRecord
        /// Its energy account, nil before its first energy reading.
        public var energy: EnergyAccount?
        /// Its activations, in order.
        public var activations: [Activation]
        /// A difference from the device's own list, recorded and left unreconciled (policy `report`).
        public var divergence: ActivationsDiverged?

        /// The view of `record` in `state`.
        public init(_ state: HubState, _ record: DeviceRecord) {
            self.record = record
            energy = state.energy[record.id]
            activations = state.activations[record.id]
            divergence = state.activations.unresolved[record.id]
        }
    }

    /// Narrow reads for hot paths: copying `state` out of the actor would make the next event copy
    /// every read model (copy-on-write), so publishers ask for just what they show.
    public func views(devices: [String], animals: [String]) -> (devices: [DeviceView], animals: [AnimalRecord]) {
        (
            devices.compactMap { id in
                state.devices[id].map { DeviceView(state, $0) }
            },
            animals.compactMap { state.animals[$0] }
        )
    }

    /// The device with this id (removed ones included), nil when never registered.
    public func device(_ id: String) -> DeviceRecord? { state.devices[id] }
    /// The active outlets of the strip `strip`, in the strip's order (empty: no such strip).
    public func outlets(of strip: String) -> [DeviceRecord] { state.devices.outlets(of: strip) }

    /// The animal with this id (discharged ones included), nil when never admitted.
    public func animal(_ id: String) -> AnimalRecord? { state.animals[id] }
    /// The admitted animal wearing `beacon` (lowercased), if any.
    public func animal(wearing beacon: String) -> String? { state.animals.beaconIndex[beacon] }
    /// The device's activations, empty when none.
    public func activations(of device: String) -> [Activation] { state.activations[device] }
    /// Every device's activations (the scheduler's working set; changes only with ActivationChanged).
    public func allActivations() -> [String: [Activation]] { state.activations.byDevice }

    /// The state payloads of the groups named in `groups` or containing one of `devices`, and the
    /// ids in `groups` that no longer exist (computed here, so no read model leaves the actor).
    public func groupPayloads(groups: Set<String>, devices: Set<String>) -> (current: [(GroupRecord, JSONValue)], removed: [String]) {
        let household = state.household
        let current = household.groups.values
            .filter { groups.contains($0.id) || $0.members.contains(where: devices.contains) }
            .map { ($0, StateJSON.group($0, devices: state.devices)) }
        return (current, groups.filter { household.groups[$0] == nil }.sorted())
    }

    /// Why the history files stopped (a write failed), or nil; history queries are refused meanwhile.
    public var historyProblem: String? { history.problem }

    /// Answers a history query from the read models, inside the actor (no copy of the state).
    /// - Throws: The domain's `Rejection` (`unknown_subject`, `not_retained`), or `history_unavailable`
    ///   when the history files cannot be read.
    public func history(_ query: HistoryQuery) throws(Rejection) -> HistoryAnswer { try state.history(query, in: history) }

    /// Keeps the history files only when their sync record names this log (its chain hash at the
    /// record's sequence); otherwise they are removed, to be folded again from the whole log.
    static func checkHistory(_ history: HistoryFiles, against store: any EventStore) async throws -> [String] {
        guard let reason = try await HistoryFiles.distrust(history.synced, hasSeries: !history.isEmpty, store: store) else { return [] }
        try history.reset()
        return ["history files rebuilt from the log: \(reason)"]
    }

    /// Folds every committed event the read models have not seen yet (the live tail, which stores
    /// such as the segment store serve from memory).
    public func catchUp() async throws {
        let last = store.lastSequence
        guard last > state.lastSequence else { return }
        try await store.read(from: state.lastSequence + 1, through: last) { record in
            // While a chunk is read the actor may fold records (another catch-up): skip those.
            if record.sequence == state.lastSequence + 1 { fold(record) }
            return true
        }
        if snapshotIsDue { await snapshotQuietly() }
    }

    /// ``catchUp()`` on the command path: the records are read with ``EventStore/records(from:through:)``,
    /// so a backend behind a network suspends the command instead of blocking a thread. Records
    /// another task folded meanwhile are skipped.
    package func catchUpWithoutBlocking() async throws {
        let last = store.lastSequence
        guard last > state.lastSequence else { return }
        let records = try await store.records(from: state.lastSequence + 1, through: last)
        for record in records where record.sequence == state.lastSequence + 1 { fold(record) }
        guard snapshotIsDue else { return }
        // With a snapshot writer running, the snapshot is encoded and written off the command path.
        if let snapshotDue { snapshotDue.yield() } else { await snapshotQuietly() }
    }

    /// Whether enough events were folded since the last snapshot (and since a failed one) to write one.
    private var snapshotIsDue: Bool {
        state.lastSequence - snapshotSequence >= snapshotEvery && state.lastSequence >= snapshotRetryAt
    }

    /// Folds one record into the read models (an event this version cannot read is skipped, counted).
    private func fold(_ record: EventRecord) {
        let context = EventContext(
            sequence: record.sequence, timestamp: record.timestamp,
            actor: record.causation.actor, commandId: record.causation.commandId)
        let event = try? HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
        recent.keep(event, at: record.sequence)
        if let event {
            state.apply(event, context: context)
            history.apply(event, context: context)
        } else {
            state.skip(sequence: record.sequence)
            history.skip(sequence: record.sequence)
        }
    }

    /// The decoded event of a logged record, decoded once: taken from the events the read models
    /// folded last when they hold it (``RecentEvents``). Nil when this version cannot read it.
    public nonisolated func event(of record: EventRecord) -> HubEvent? { recent.event(of: record) }

    /// Whether the log can write now, as far as its disk goes (``EventStore/storageCondition``):
    /// `full` while commands are refused with `storage_full`. Cheap; safe from any thread (a
    /// readiness check may poll it).
    public nonisolated var storageCondition: StorageCondition { store.storageCondition }

    /// True while the disk holding the log is full (see ``storageCondition``).
    public nonisolated var isStorageFull: Bool { storageCondition.isFull }

    /// Writes a snapshot; a failure (a full disk) is kept in ``snapshotProblem`` instead of thrown:
    /// the previous snapshot stays in use, nothing is left half-written, and the next attempt waits
    /// for another eighth of `snapshotEvery` events (a full disk is not hammered with snapshots).
    func snapshotQuietly() async {
        do {
            try await snapshot()
            snapshotProblem = nil
        } catch {
            snapshotFailed(error)
        }
    }

    private func snapshotFailed(_ error: any Error) {
        snapshotProblem = "the snapshot at sequence \(state.lastSequence) was not written: \(error); the previous one stays in use"
        snapshotRetryAt = state.lastSequence + max(1, snapshotEvery / 8)
    }

    /// Writes a snapshot of the read models with the sequence it covers and the log's chain hash
    /// there, which binds it to this log.
    public func snapshot() async throws {
        while snapshotWriting != nil { await snapshotSettled() }  // one snapshot at a time
        snapshotWriting = []
        defer { snapshotDone() }
        guard let material = try await snapshotMaterial() else { return }
        try snapshots.save(sequence: material.sequence, chainHash: material.chainHash, bytes: Self.encodeSnapshot(material.state))
        snapshotSaved(at: material.sequence)
    }

    /// What a snapshot holds: the read models at one sequence and the log's chain hash there.
    struct SnapshotMaterial: Sendable {
        var sequence: UInt64
        var chainHash: [UInt8]
        var state: HubState
    }

    /// The actor's half of a snapshot: the log's chain hash at the read models' sequence, the
    /// history files synced (they go first: when they cannot be synced, a full disk, no snapshot is
    /// tried either), and the read models as they are. Nil when nothing was folded since the last one.
    private func snapshotMaterial() async throws -> SnapshotMaterial? {
        guard state.lastSequence > snapshotSequence || history.needsSync else { return nil }
        var sequence = state.lastSequence
        var found = try await store.chainHash(at: sequence)
        // The read models may have moved on while the hash was read: it must be the one at their sequence.
        while state.lastSequence != sequence {
            sequence = state.lastSequence
            found = try await store.chainHash(at: sequence)
        }
        guard let chainHash = found else { return nil }
        if history.needsSync, history.foldedThrough == sequence {
            try history.sync(sequence: sequence, chainHash: chainHash)
        }
        guard sequence > snapshotSequence else { return nil }
        return SnapshotMaterial(sequence: sequence, chainHash: chainHash, state: state)
    }

    private func snapshotSaved(at sequence: UInt64) {
        snapshotSequence = max(snapshotSequence, sequence)
        snapshotWrittenAt = Date().timeIntervalSince1970
    }

    // MARK: Snapshots off the command path

    /// Set while a ``SnapshotWriter`` runs: a due snapshot is handed to it instead of being written
    /// inside the command that made it due.
    private var snapshotDue: AsyncStream<Void>.Continuation?
    /// Set while a snapshot is being written (its chain hash read, its file written off the actor):
    /// whoever waits for it to end. One snapshot is written at a time.
    private var snapshotWriting: [CheckedContinuation<Void, Never>]?

    /// Hands due snapshots to `due` from now on (nil: written in the command path again).
    func handSnapshots(to due: AsyncStream<Void>.Continuation?) { snapshotDue = due }

    /// Writes a due snapshot with its encoding, write and sync off the actor, so commands go on
    /// meanwhile: only the history files' sync and a copy of the read models (copy-on-write) happen
    /// on it. A failure is kept in ``snapshotProblem``, as by the command path.
    func writeSnapshotOffTheActor() async {
        guard snapshotWriting == nil, snapshotIsDue else { return }
        snapshotWriting = []
        defer { snapshotDone() }
        let material: SnapshotMaterial
        do {
            guard let taken = try await snapshotMaterial() else { return }
            material = taken
        } catch {
            return snapshotFailed(error)
        }
        switch await Self.save(material, in: snapshots) {
        case .success:
            snapshotSaved(at: material.sequence)
            snapshotProblem = nil
        case .failure(let error): snapshotFailed(error)
        }
    }

    /// Ends the snapshot being written: wakes whoever waits for it.
    private func snapshotDone() {
        let waiters = snapshotWriting ?? []
        snapshotWriting = nil
        for waiter in waiters { waiter.resume() }
    }

    /// Encodes and writes a snapshot on the global executor, off any actor.
    @concurrent private static func save(_ material: SnapshotMaterial, in snapshots: SnapshotStore) async -> Result<Void, any Error> {
        Result {
            try snapshots.save(sequence: material.sequence, chainHash: material.chainHash, bytes: encodeSnapshot(material.state))
        }
    }

    /// Returns once no snapshot is being written off the actor.
    private func snapshotSettled() async {
        guard snapshotWriting != nil else { return }
        await withCheckedContinuation { snapshotWriting?.append($0) }
    }

    /// What `/metrics` reads when scraped: devices per driver by availability, and the snapshot's
    /// time and distance from the head of the log.
    func metricsSummary() -> MetricsSummary {
        var devices: [String: MetricsSummary.Availability] = [:]
        for record in state.devices.active {
            switch record.available {
            case true?: devices[record.driver, default: .init()].available += 1
            case false?: devices[record.driver, default: .init()].unavailable += 1
            case nil: devices[record.driver, default: .init()].unknown += 1
            }
        }
        return MetricsSummary(
            devices: devices, snapshotWrittenAt: snapshotWrittenAt,
            eventsSinceSnapshot: Int(store.lastSequence - min(snapshotSequence, store.lastSequence)))
    }

    /// Snapshots and closes the log. The log is closed whatever happens to the snapshot.
    ///
    /// - Returns: Why no snapshot was written (a full disk), or nil: the next start replays the log
    ///   from the previous snapshot, nothing is lost.
    /// - Throws: When the log's tail cannot be read.
    @discardableResult
    public func close() async throws -> String? {
        do {
            try await catchUp()
        } catch {
            await store.close()
            throw error
        }
        snapshotRetryAt = 0
        await snapshotQuietly()
        history.closeFiles()
        await store.close()
        return snapshotProblem
    }

    static func encodeSnapshot(_ state: HubState) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return [UInt8](try encoder.encode(SnapshotFile(format: snapshotFormat, state: state)))
    }

    static func decodeSnapshot(_ bytes: [UInt8]) -> HubState? {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        guard let file = try? decoder.decode(SnapshotFile.self, from: Data(bytes)), file.format == snapshotFormat else { return nil }
        return file.state
    }

    /// The read-model format a snapshot's bytes say they are, whatever their shape.
    static func snapshotFormat(of bytes: [UInt8]) -> Int? {
        struct Format: Decodable { var format: Int }
        return (try? JSONDecoder().decode(Format.self, from: Data(bytes)))?.format
    }

    struct SnapshotFile: Codable {
        var format: Int
        var state: HubState
    }
}
