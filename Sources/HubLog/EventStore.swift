/// The storage protocol: an append-only, hash-chained log of events that every backend implements.
///
/// The hub, replay, `events`, `export`, `import` and `verify` use a store only through this protocol,
/// so a backend is one new conforming type. ``SegmentStore`` (segment files in one directory) is the
/// embedded default; the SQLite benchmark peer conforms too.
///
/// # Implementation requirements
///
/// A store must keep these promises, whatever it stores records in:
///
/// - **Gapless global sequence.** The n-th record committed has ``EventRecord/sequence`` n (from 1).
///   ``lastSequence`` is the highest committed sequence; every sequence from 1 to it can be read, and
///   none beyond it.
/// - **Per-stream versions.** Within a stream, ``EventRecord/streamVersion`` counts from 0 without
///   gaps; ``streamVersion(_:)`` is the last committed one.
/// - **Atomic appends.** The events of one ``AppendRequest`` get consecutive sequences and are
///   committed together or not at all. Appends are committed one after another; concurrent
///   appends are ordered by the store.
/// - **Expected version.** An append whose ``AppendRequest/expected`` does not match the stream's
///   committed version at commit time writes nothing and throws
///   ``EventLogError/wrongExpectedVersion(stream:expected:actual:)``.
/// - **Idempotency by command id.** Once an append with a ``Causation/commandId`` (and at least one
///   event) is committed, the id is remembered for good: a later append with the same id writes
///   nothing and returns the original ``AppendResult`` with ``AppendResult/duplicate`` set, before
///   any expected-version check. ``commandResult(_:)`` answers the same question without appending.
/// - **Durability before return.** ``append(_:)`` of an immediate request
///   (``AppendRequest/needsDurability``: ``Durability/immediate``, or any request with a command id)
///   returns only once its events, and every event committed before them, would survive a crash
///   or power loss at that instant (fsync, a synchronous commit, a replica's acknowledgement...).
///   An append that throws may or may not have been committed only when the writer stopped
///   (``EventLogError/writerStopped(reason:)``); retry it with the same command id. An append
///   refused for want of space (``EventLogError/storageFull(path:operation:errno:)``) wrote nothing.
/// - **Observations: durable within a bound.** An ``Durability/observation`` request without a
///   command id may return once committed (sequenced, readable, in order) but before it is
///   durable. It becomes durable no later than the store's commit delay after it returned, when a
///   later immediate append returns, or when ``close()`` returns, whichever is first. A killed
///   process loses nothing a store returned; a power cut may lose the observations of the last
///   delay, and only a suffix of the log (never a record an immediate append returned, nor
///   anything before one). A store may treat observations as immediate (a delay of zero).
/// - **Record time only moves forward.** A record's ``EventRecord/timestamp`` is the time the hub
///   recorded it: the proposed event's ``ProposedEvent/timestamp``, raised to the timestamp of the
///   record before it when earlier, as the store assigns the sequence. Along the sequence,
///   timestamps never decrease (across appends, streams, batches and reopening), so a bound in time
///   (`hub replay --until TIME`) is one place in the log. An observation's own time is a field of
///   its event's payload, never this.
/// - **Nothing is rewritten.** A committed record is never changed or removed.
/// - **The hash chain.** Each record has a chain hash: SHA-256 over the previous record's chain hash
///   (32 zero bytes before the first record) and the record's canonical encoding
///   (see ``RecordFormat``). ``readViews(from:through:_:)`` hands it out as ``RecordView/hash``, and
///   ``verify(progress:)`` reports the last one. A backend may store it (to detect tampering) or
///   compute it while reading (the defaults do).
///
/// Reading may happen on any thread or task while appends proceed; readers see only committed
/// records. Every read is asynchronous, so a backend behind a network (PostgreSQL) suspends the
/// caller for a round trip instead of holding a thread: ``read(from:through:_:)``,
/// ``readViews(from:through:_:)``, ``chainHash(at:)`` and ``verify(progress:)`` (replay, export,
/// verify and a snapshot's binding stream through them) as well as the lookups on the command path
/// (``commandResult(_:)``, ``streamVersion(_:)``, ``records(from:through:)``). The reads that take
/// a closure are `nonisolated(nonsending)`: they run on the caller's actor, so `body` may touch the
/// caller's state, and `body` itself is synchronous (called for each record in turn). A backend
/// that reads from memory or local files may read synchronously inside them (the segment store
/// does), but should still declare its overrides of ``readViews(from:through:_:)``,
/// ``chainHash(at:)`` and ``verify(progress:)`` `async`: a synchronous method satisfies the
/// requirement, yet a call on the concrete type in an asynchronous context would pick the default
/// below instead of it.
/// A read that cannot reach the backend throws; it never answers as if the log were empty.
///
/// # What the defaults do
///
/// A backend implements the six core requirements (``append(_:)``, ``lastSequence``,
/// ``commandResult(_:)``, ``streamVersion(_:)``, ``read(from:through:_:)``,
/// ``waitForAppend(after:)``) and ``close()``. The others have defaults built on those; override
/// them when the backend can do better:
///
/// - ``records(from:through:)``: collects ``read(from:through:_:)``. Override it when the backend
///   can hand the records out more cheaply at once.
/// - ``appendAll(_:)``: one ``append(_:)`` after another. Override it to share one commit.
/// - ``readViews(from:through:_:)``: reads from sequence 1 with ``read(from:through:_:)``, encodes
///   each record and computes its chain hash. Override it when the chain hash is stored (then reading
///   from the middle of the log is cheap).
/// - ``chainHash(at:)``: one ``readViews(from:through:_:)`` of that record (with the default
///   `readViews`, the chain from sequence 1). Override it to answer from a stored hash.
/// - ``verify(progress:)``: checks the gapless sequence and stream versions of everything
///   ``readViews(from:through:_:)`` yields and reports the head hash. A backend that stores hashes
///   should also check them against the recomputed chain.
/// - ``openingNotes``: none.
/// - ``storageCondition``: always ok.
public protocol EventStore: Sendable {
    /// Appends one request's events atomically, returning once they are durable.
    ///
    /// - Parameter request: The stream, expected version, causation and events to append.
    /// - Returns: The sequences written and the stream's new version; for a command id appended
    ///   before, the original result with ``AppendResult/duplicate`` set (nothing is written).
    /// - Throws: ``EventLogError/wrongExpectedVersion(stream:expected:actual:)`` when the stream's
    ///   version does not match (nothing written); ``EventLogError/invalid(_:)`` when the request cannot
    ///   be stored or the store is read-only; ``EventLogError/storageFull(path:operation:errno:)``
    ///   when the disk is full (nothing written; the store goes on, and the same append succeeds once
    ///   space is freed); ``EventLogError/writerStopped(reason:)`` when a write or sync failed
    ///   otherwise (the store accepts nothing more); ``EventLogError/unreachable(_:)`` when the
    ///   backend's server cannot be reached for now (retry with the same command id);
    ///   ``EventLogError/closed`` after ``close()``.
    func append(_ request: AppendRequest) async throws -> AppendResult

    /// Appends several requests, in this order, each atomically and durably (as ``append(_:)``).
    ///
    /// A failed request does not stop the others. A backend may commit the whole batch together.
    ///
    /// - Parameter requests: The requests, in the order they are to be committed.
    /// - Returns: One result per request, in the same order: what ``append(_:)`` would have
    ///   returned or thrown for it.
    func appendAll(_ requests: [AppendRequest]) async -> [Result<AppendResult, Error>]

    /// The last committed global sequence (0 when the log is empty).
    var lastSequence: UInt64 { get }

    /// Answers whether a command id was appended before, without appending.
    ///
    /// Asynchronous so that a backend behind a network (PostgreSQL) asks without holding a thread;
    /// a backend that answers from memory implements it as a plain synchronous method.
    ///
    /// - Parameter commandId: The command id to look up.
    /// - Returns: The original append's result with ``AppendResult/duplicate`` set, or nil when no
    ///   committed append carried this id. (A store opened read-only may not index command ids and
    ///   answer nil.)
    /// - Throws: ``EventLogError/unreachable(_:)`` when the backend cannot be asked: an error is
    ///   never read as "no such command".
    func commandResult(_ commandId: String) async throws -> AppendResult?

    /// The current version of a stream.
    ///
    /// - Parameter stream: The stream's name.
    /// - Returns: The version of the stream's last committed event, or nil when it has none.
    /// - Throws: ``EventLogError/unreachable(_:)`` when the backend cannot be asked: an error is
    ///   never read as "no stream".
    func streamVersion(_ stream: String) async throws -> UInt64?

    /// The committed records with sequence in `from...through`, in order, read without blocking the
    /// calling thread where the backend can (the command path reads the records it appended).
    ///
    /// - Parameters:
    ///   - from: The first sequence (values below 1 read from 1).
    ///   - through: The last sequence (beyond ``lastSequence``: up to the last committed record).
    /// - Returns: The records; empty for an empty range.
    /// - Throws: What ``read(from:through:_:)`` throws; ``EventLogError/unreachable(_:)`` when the
    ///   backend cannot be asked.
    func records(from: UInt64, through: UInt64) async throws -> [EventRecord]

    /// Calls `body` for every committed record with sequence in `from...through`, in order.
    ///
    /// The caller is suspended while the backend fetches records (PostgreSQL: a chunk at a time);
    /// `body` runs on the caller's actor. `through` beyond ``lastSequence`` reads up to the last committed record; an empty range reads
    /// nothing. `body` is not called while a lock that appends need is held.
    ///
    /// - Parameters:
    ///   - from: The first sequence to read (values below 1 read from 1).
    ///   - through: The last sequence to read.
    ///   - body: Called with each record; return false to stop early.
    /// - Throws: What `body` throws, or ``EventLogError/corrupt(segment:offset:sequence:reason:)`` and
    ///   ``EventLogError/io(path:operation:errno:)`` when a committed record cannot be read;
    ///   ``EventLogError/unreachable(_:)`` when the backend cannot be asked (never an empty read).
    nonisolated(nonsending) func read(from: UInt64, through: UInt64, _ body: (EventRecord) throws -> Bool) async throws

    /// Calls `body` with a borrowed view of each committed record in `from...through`, in order: the
    /// record's canonical encoding with its chain hash (``RecordView/hash``). The fast path for
    /// replay and export; a view is valid only during the call.
    ///
    /// - Parameters:
    ///   - from: The first sequence to read (values below 1 read from 1).
    ///   - through: The last sequence to read (clamped to ``lastSequence``).
    ///   - body: Called with each view; return false to stop early.
    /// - Throws: What `body` throws, or what ``read(from:through:_:)`` throws.
    nonisolated(nonsending) func readViews(from: UInt64, through: UInt64, _ body: (RecordView) throws -> Bool) async throws

    /// The chain hash of the record at `sequence`: what ties a snapshot of the read models to the
    /// log it was taken from (a snapshot is used only when the log still has this hash there).
    ///
    /// - Parameter sequence: A committed sequence, or 0.
    /// - Returns: The record's chain hash (32 bytes, as ``RecordView/hash``); ``RecordFormat/genesisHash``
    ///   for 0; nil when `sequence` is beyond ``lastSequence``.
    /// - Throws: What ``readViews(from:through:_:)`` throws.
    nonisolated(nonsending) func chainHash(at sequence: UInt64) async throws -> [UInt8]?

    /// Returns once the log holds a record after `sequence` (at once if it already does).
    ///
    /// - Parameter sequence: The last sequence the caller has seen.
    /// - Throws: ``EventLogError/closed`` when the store is closed, ``EventLogError/writerStopped(reason:)``
    ///   when its writer stopped, `CancellationError` when the task is cancelled.
    func waitForAppend(after sequence: UInt64) async throws

    /// The last sequence a sync has carried to the disk: a power cut loses nothing up to it. It
    /// trails ``lastSequence`` only while observations wait for their sync (see
    /// `SegmentStoreOptions.observationCommitDelay`); for a store whose commits are durable when
    /// they return, it is ``lastSequence``.
    var durableSequence: UInt64 { get }

    /// Returns once ``durableSequence`` is past `sequence` (at once if it already is): for what
    /// follows the log onto the disk (the audit tree), so that it writes when the log does.
    ///
    /// - Throws: What ``waitForAppend(after:)`` throws.
    func waitForDurable(after sequence: UInt64) async throws

    /// Makes every record committed so far durable now (a write moment: what the store holds for
    /// its delay is written and synced) and returns once it is: for what must cover the whole log
    /// before the hub stops (the last signed tree head).
    ///
    /// - Throws: What ``waitForAppend(after:)`` throws.
    func makeDurable() async throws

    /// Checks the whole log without changing anything: gapless sequences, dense stream versions,
    /// and whatever integrity the backend can check (frames, checksums, the stored hash chain).
    ///
    /// - Parameter progress: Called now and then with (work done, total work), in the backend's own
    ///   units (bytes for segment files, records otherwise).
    /// - Returns: What was checked, and the head of the hash chain.
    /// - Throws: ``EventLogError/corrupt(segment:offset:sequence:reason:)`` naming the first fault;
    ///   what ``readViews(from:through:_:)`` throws when the log cannot be read.
    nonisolated(nonsending) func verify(progress: ((_ done: Int, _ total: Int) -> Void)?) async throws -> VerifyReport

    /// Whether the store can write now as far as its disk goes: ``StorageCondition/full(path:since:reason:)``
    /// while appends are refused for want of space, ``StorageCondition/ok`` otherwise. Cheap to ask
    /// (a readiness check polls it).
    var storageCondition: StorageCondition { get }

    /// What opening the store found and did, in words for the operator's log (for example a torn
    /// tail cut after a crash, with where and how many bytes). Empty when there is nothing to say.
    var openingNotes: [String] { get }

    /// Why the store can take no more appends although it is open (its writer stopped after a
    /// failed write or sync), in words for the operator; nil while it can. Readiness checks read it.
    var writerFault: String? { get }

    /// Stops accepting appends, lets committed and queued work finish, and releases the store's
    /// resources (files, locks, connections). Later appends throw ``EventLogError/closed``, and
    /// waiters in ``waitForAppend(after:)`` are woken with it. Calling it twice is harmless.
    func close() async
}

extension EventStore {
    /// See ``EventStore/durableSequence``: every commit is durable when it returns.
    public var durableSequence: UInt64 { lastSequence }

    /// See ``EventStore/waitForDurable(after:)``: every commit is durable when it returns.
    public func waitForDurable(after sequence: UInt64) async throws { try await waitForAppend(after: sequence) }

    /// See ``EventStore/makeDurable()``: every commit is durable when it returns, nothing to do.
    public func makeDurable() async throws {}

    /// Collects the records of ``read(from:through:_:)``.
    ///
    /// - Parameters:
    ///   - from: The first sequence.
    ///   - through: The last sequence.
    /// - Returns: The records, in order.
    /// - Throws: What ``read(from:through:_:)`` throws.
    public func records(from: UInt64, through: UInt64) async throws -> [EventRecord] {
        var found: [EventRecord] = []
        try await read(from: from, through: through) {
            found.append($0); return true
        }
        return found
    }

    /// Commits the requests one after another with ``append(_:)``.
    ///
    /// - Parameter requests: The requests, in order.
    /// - Returns: One result per request, in the same order.
    public func appendAll(_ requests: [AppendRequest]) async -> [Result<AppendResult, Error>] {
        var results: [Result<AppendResult, Error>] = []
        results.reserveCapacity(requests.count)
        for request in requests {
            do { results.append(.success(try await append(request))) } catch { results.append(.failure(error)) }
        }
        return results
    }

    /// Reads from sequence 1 with ``read(from:through:_:)``, encoding each record and computing the
    /// chain hash, and hands out the views from `from` on.
    ///
    /// - Parameters:
    ///   - from: The first sequence to hand out.
    ///   - through: The last sequence to read.
    ///   - body: Called with each view; return false to stop early.
    /// - Throws: What `body` or ``read(from:through:_:)`` throws.
    public nonisolated(nonsending) func readViews(
        from: UInt64, through: UInt64, _ body: (RecordView) throws -> Bool
    ) async throws {
        var previous = RecordFormat.genesisHash
        var frame: [UInt8] = []
        try await read(from: 1, through: through) { record in
            frame.removeAll(keepingCapacity: true)
            previous = try RecordFormat.appendFrame(to: &frame, record: record, previousHash: previous)
            guard record.sequence >= from else { return true }
            return try frame.withUnsafeBytes { raw in
                try body(RecordView(body: UnsafeRawBufferPointer(rebasing: raw[RecordFormat.frameHeaderSize...]))!)
            }
        }
    }

    /// Checks that ``readViews(from:through:_:)`` yields a gapless sequence from 1 to
    /// ``lastSequence`` with dense stream versions, and reports the head of the hash chain.
    ///
    /// - Parameter progress: Called with (records checked, records in the log).
    /// - Returns: The records checked and the head hash (`segments` and `bytes` are 0).
    /// - Throws: ``EventLogError/corrupt(segment:offset:sequence:reason:)`` at the first fault.
    public nonisolated(nonsending) func verify(progress: ((_ done: Int, _ total: Int) -> Void)?) async throws -> VerifyReport {
        let last = lastSequence
        let backend = "\(Self.self)"
        var checker = ChainChecker()
        try await readViews(from: 1, through: last) { view in
            if let fault = checker.check(view) {
                throw EventLogError.corrupt(segment: backend, offset: 0, sequence: checker.lastSequence + 1, reason: fault)
            }
            if let progress, view.sequence % 65_536 == 0 { progress(Int(view.sequence), Int(last)) }
            return true
        }
        guard checker.lastSequence == last else {
            throw EventLogError.corrupt(
                segment: backend, offset: 0, sequence: checker.lastSequence + 1,
                reason: "the log ends at \(checker.lastSequence) but claims \(last) records")
        }
        progress?(Int(last), Int(last))
        return VerifyReport(records: last, headHash: LogVerifier.hex(checker.previousHash))
    }

    /// No notes.
    public var openingNotes: [String] { [] }

    /// Always ``StorageCondition/ok``: a backend that cannot tell a full disk apart says nothing.
    public var storageCondition: StorageCondition { .ok }

    /// No fault: a store that cannot write says so by throwing from ``append(_:)``.
    public var writerFault: String? { nil }

    /// Reads the record at `sequence` with ``readViews(from:through:_:)`` and returns its hash.
    ///
    /// - Parameter sequence: A committed sequence, or 0.
    /// - Returns: The chain hash there; the genesis hash for 0; nil beyond ``lastSequence``.
    /// - Throws: What ``readViews(from:through:_:)`` throws.
    public nonisolated(nonsending) func chainHash(at sequence: UInt64) async throws -> [UInt8]? {
        if sequence == 0 { return RecordFormat.genesisHash }
        guard sequence <= lastSequence else { return nil }
        var hash: [UInt8]? = nil
        try await readViews(from: sequence, through: sequence) { view in
            if view.sequence == sequence { hash = view.hash }
            return false
        }
        return hash
    }

    /// Records from `from` on, then live appends as they commit (a catch-up subscription). A slow
    /// subscriber is never dropped: it reads on from the log at its own pace.
    ///
    /// - Parameter from: The first sequence to deliver (values below 1 start at 1).
    /// - Returns: An endless sequence of records; it ends when the task is cancelled and throws what
    ///   ``read(from:through:_:)`` or ``waitForAppend(after:)`` throw.
    public func subscribe(from: UInt64) -> EventSubscription {
        EventSubscription(store: self, from: max(from, 1))
    }
}

/// Follows the rules every record must keep in order: gapless sequence, dense stream versions, and
/// (when the views carry a stored hash) the hash chain. Shared by every `verify`.
struct ChainChecker {
    var lastSequence: UInt64 = 0
    var previousHash = RecordFormat.genesisHash
    var streams: [String: UInt64] = [:]

    /// Takes the next record; returns why it does not follow, or nil.
    mutating func check(_ view: RecordView) -> String? {
        let expected = lastSequence + 1
        if view.sequence != expected {
            return "sequence \(view.sequence) where \(expected) was expected (a record was removed, added or moved)"
        }
        let stream = view.stream
        let expectedVersion = streams[stream].map { $0 + 1 } ?? 0
        if view.streamVersion != expectedVersion {
            return "stream \(stream) version \(view.streamVersion) where \(expectedVersion) was expected"
        }
        let stored = view.hash
        if RecordFormat.chainHash(previous: previousHash, body: view.body) != stored {
            return "hash chain broken: the record's content or order was altered"
        }
        streams[stream] = view.streamVersion
        previousHash = stored
        lastSequence = view.sequence
        return nil
    }
}

/// What ``EventStore/verify(progress:)`` found in a sound log.
public struct VerifyReport: Sendable {
    /// Segment files checked (0 for backends without segment files).
    public var segments: Int
    /// The number of records checked: the whole log, from sequence 1.
    public var records: UInt64
    /// Bytes checked (0 for backends that do not count them).
    public var bytes: Int
    /// Hex SHA-256 chain hash of the last record: keep it to detect later truncation or rewriting.
    public var headHash: String
    /// Set when the newest segment ends inside a record (a crash mid-append): opening cuts it.
    public var incompleteTail: String?

    /// Makes a report.
    ///
    /// - Parameters:
    ///   - segments: Segment files checked, or 0.
    ///   - records: Records checked.
    ///   - bytes: Bytes checked, or 0.
    ///   - headHash: The last record's chain hash, in hex.
    ///   - incompleteTail: A torn tail found (and left alone), or nil.
    public init(segments: Int = 0, records: UInt64, bytes: Int = 0, headHash: String, incompleteTail: String? = nil) {
        self.segments = segments
        self.records = records
        self.bytes = bytes
        self.headHash = headHash
        self.incompleteTail = incompleteTail
    }
}

/// A catch-up subscription (see ``EventStore/subscribe(from:)``): reads committed events in chunks,
/// then waits for new appends.
public struct EventSubscription: AsyncSequence, Sendable {
    /// Each element is one committed record, in sequence order.
    public typealias Element = EventRecord
    let store: any EventStore
    let from: UInt64
    var chunk: UInt64 = 512

    /// Iterates a subscription; not shared between tasks.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: any EventStore
        var next: UInt64
        let chunk: UInt64
        var buffer: [EventRecord] = []
        var position = 0

        /// The next committed record, waiting for one to be appended when the subscriber is caught up.
        ///
        /// A backend that cannot be reached for a moment (``EventLogError/unreachable(_:)``) is
        /// asked again every 0.1 s: the subscriber waits, it is not failed.
        ///
        /// - Returns: The next record, or nil once the task is cancelled.
        /// - Throws: What the store's ``EventStore/read(from:through:_:)`` or
        ///   ``EventStore/waitForAppend(after:)`` throw (other than cancellation).
        public mutating func next() async throws -> EventRecord? {
            while position >= buffer.count {
                if Task.isCancelled { return nil }
                buffer.removeAll(keepingCapacity: true)
                position = 0
                var collected: [EventRecord] = []
                do {
                    try await store.read(from: next, through: next + chunk - 1) {
                        collected.append($0); return true
                    }
                } catch EventLogError.unreachable {
                    // The backend is connecting again (nothing was read): ask again shortly.
                    do { try await Task.sleep(for: .milliseconds(100)) } catch { return nil }
                    continue
                }
                buffer = collected
                if buffer.isEmpty {
                    do { try await store.waitForAppend(after: next - 1) } catch is CancellationError { return nil }
                }
            }
            let record = buffer[position]
            position += 1
            next = record.sequence + 1
            return record
        }
    }

    /// Starts reading at the subscription's first sequence.
    ///
    /// - Returns: A new iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(store: store, next: from, chunk: chunk)
    }
}
