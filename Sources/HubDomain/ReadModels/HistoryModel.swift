/// What one history series is about: a device's or an animal's readings of one quantity.
public struct HistorySeriesKey: Sendable, Hashable {
    /// The device or animal.
    public var subject: Subject
    /// The quantity measured (never energy: that is the ledger's).
    public var quantity: Quantity
    /// Creates a key.
    public init(subject: Subject, quantity: Quantity) { self.subject = subject; self.quantity = quantity }
}

/// The readings of one series in buckets of a minute, an hour and a day.
struct HistorySeries: Sendable, Equatable {
    var minute = HistoryColumn(limit: HistoryResolution.minute.retainedBuckets)
    var hour = HistoryColumn(limit: HistoryResolution.hour.retainedBuckets)
    var day = HistoryColumn(limit: HistoryResolution.day.retainedBuckets)
    /// The value held, for the time weighting.
    var hold = HistoryHold()

    subscript(resolution: HistoryResolution) -> HistoryColumn {
        switch resolution {
        case .minute: return minute
        case .hour: return hour
        case .day: return day
        }
    }

    /// Takes a reading: weighs the span the value held before it closes, then folds the reading
    /// into its buckets.
    mutating func add(_ value: Double, at: Int64, now: Int64) {
        if let closed = hold.take(value, at: at).closed { weigh(closed, now: now) }
        add(value, at: at, now: now, .minute, &minute)
        add(value, at: at, now: now, .hour, &hour)
        add(value, at: at, now: now, .day, &day)
    }

    /// The subject stopped reporting at `at`: the value held ends there.
    mutating func end(at: Int64, now: Int64) {
        if let closed = hold.end(at: at) { weigh(closed, now: now) }
    }

    private mutating func weigh(_ span: HistoryHold.Span, now: Int64) {
        weigh(span, now: now, .minute, &minute)
        weigh(span, now: now, .hour, &hour)
        weigh(span, now: now, .day, &day)
    }

    private func weigh(_ span: HistoryHold.Span, now: Int64, _ resolution: HistoryResolution, _ column: inout HistoryColumn) {
        let horizon = resolution.horizon(now: now)
        column.prune(before: horizon)
        resolution.pieces(of: span, from: horizon) { b, micros in column.weigh(bucket: b, value: span.value, micros: micros) }
    }

    private func add(_ value: Double, at: Int64, now: Int64, _ resolution: HistoryResolution, _ column: inout HistoryColumn) {
        let b = resolution.bucket(of: at)
        let horizon = resolution.horizon(now: now)
        column.prune(before: horizon)
        if b < horizon { return }  // already past what this resolution keeps
        column.add(bucket: b, value: value, at: at)
    }

    var storageBytes: Int { minute.storageBytes + hour.storageBytes + day.storageBytes }
}

/// What a history query reads: the model's clock, which subjects have readings, and the buckets of
/// one series. ``HistoryModel`` answers from memory; the running hub's files answer the same
/// questions from disk (`HistoryFiles` in the runtime), both with the same buckets.
public protocol HistorySource {
    /// The newest event timestamp folded, µs since the epoch: the clock retention is measured by.
    var now: Int64 { get }
    /// Whether any reading of `subject` was kept.
    func knows(_ subject: Subject) -> Bool
    /// The buckets of `key` at `resolution` starting in `[from, to)` (µs), oldest first; empty
    /// buckets are absent.
    /// - Throws: A `Rejection` when the buckets cannot be read (a source on disk).
    func buckets(_ key: HistorySeriesKey, _ resolution: HistoryResolution, from: Int64, to: Int64) throws(Rejection) -> [HistoryBucket]
}

/// The history read model: for every device and animal, every quantity it reported (energy
/// excepted: the energy ledger answers energy per day), buckets of 1 minute, 1 hour and 1 day with
/// count, min, max, sum and last of the readings in them, and their time-weighted mean (the
/// rule: ``HistoryHold``; buckets covered only by a value carried in are answered with count 0).
///
/// Retention is driven by the model's clock, the newest log timestamp folded (never a wall clock,
/// so a replay prunes exactly as the live hub did): minute buckets are kept 7 days, hour buckets
/// 365 days, day buckets 100 years. A series is pruned when it takes a reading; a query never shows
/// buckets past the horizon (it is refused, ``HubState/history(_:)``).
public struct HistoryModel: Sendable, Equatable, HistorySource {
    private var slots: [HistorySeriesKey: Int] = [:]
    private(set) var series: [HistorySeries] = []
    private var keys: [HistorySeriesKey] = []
    /// The newest event timestamp folded, µs since the epoch (0 before any).
    public private(set) var now: Int64 = 0
    /// The one series folded, when set (`hub replay --history` needs no other); the clock still
    /// moves with every event.
    private var only: HistorySeriesKey?

    /// A model folding every series, or only `only`.
    public init(only: HistorySeriesKey? = nil) { self.only = only }

    /// The quantities the model keeps (energy is the ledger's).
    public static func keeps(_ quantity: Quantity) -> Bool { quantity != .energy }

    /// Folds one event: moves the clock, takes history-kept readings, and ends the series of a subject that stops reporting.
    public mutating func apply(_ event: HubEvent, context: EventContext) {
        if context.timestamp > now { now = context.timestamp }
        if let subject = Self.stopsReporting(event) { end(subject, at: context.timestamp); return }
        guard case .readingRecorded(let e) = event, Self.keeps(e.quantity), e.value.isFinite else { return }
        let key = HistorySeriesKey(subject: e.subject, quantity: e.quantity)
        if let only, key != only { return }
        record(key, value: e.value, measuredAt: e.measuredAt)
    }

    /// The subject whose held values `event` ends (``HistoryHold``): a device reported
    /// unavailable or removed, an animal discharged.
    public static func stopsReporting(_ event: HubEvent) -> Subject? {
        switch event {
        case .availabilityChanged(let e) where !e.available: return .device(e.device)
        case .deviceRemoved(let e): return .device(e.device)
        case .animalDischarged(let e): return .animal(e.animal)
        default: return nil
        }
    }

    /// Ends the values held by every series of `subject` at `at`.
    mutating func end(_ subject: Subject, at: Int64) {
        for quantity in Quantity.allCases {
            let key = HistorySeriesKey(subject: subject, quantity: quantity)
            if let only, key != only { continue }
            if let slot = slots[key] { series[slot].end(at: at, now: now) }
        }
    }

    /// Folds one reading directly (what `apply` does for a `ReadingRecorded`; the benchmark uses it
    /// to fold a year of readings without a log). `now` only moves forward.
    public mutating func record(_ key: HistorySeriesKey, value: Double, measuredAt: Int64, now clock: Int64? = nil) {
        if let clock, clock > now { now = clock }
        let slot: Int
        if let found = slots[key] {
            slot = found
        } else {
            slot = series.count
            slots[key] = slot
            series.append(HistorySeries())
            keys.append(key)
        }
        series[slot].add(value, at: measuredAt, now: now)
    }

    /// Whether any reading of `subject` was kept.
    public func knows(_ subject: Subject) -> Bool {
        Quantity.allCases.contains { slots[HistorySeriesKey(subject: subject, quantity: $0)] != nil }
    }

    /// The buckets of `key` at `resolution` starting in `[from, to)` (µs), oldest first, with the
    /// open tail (the value held up to the model's clock) counted; buckets no value held in are absent.
    public func buckets(_ key: HistorySeriesKey, _ resolution: HistoryResolution, from: Int64, to: Int64) -> [HistoryBucket] {
        guard let slot = slots[key], to > from else { return [] }
        let column = series[slot][resolution]
        let last = resolution.bucket(of: to - 1)
        var out: [HistoryBucket] = []
        var i = column.lowerBound(resolution.bucket(of: from))
        while i < column.count, column.start(at: i) <= last {
            out.append(column.bucket(at: i, width: resolution.width))
            i += 1
        }
        return withOpenTail(out, hold: series[slot].hold, now: now, resolution, from: from, to: to)
    }

    /// What the series of `key` holds for the time weighting (nil: no such series).
    public func hold(_ key: HistorySeriesKey) -> HistoryHold? { slots[key].map { series[$0].hold } }

    /// How many series the model holds.
    public var seriesCount: Int { series.count }

    /// Bytes of bucket storage (allocated ring slots, held or free), over all series.
    public var storageBytes: Int { series.reduce(0) { $0 + $1.storageBytes } }

    /// Bytes one bucket slot takes.
    public static var bytesPerBucket: Int { HistoryColumn.bytesPerBucket }

    /// Equal when the clocks and every series match (slot order aside).
    public static func == (a: HistoryModel, b: HistoryModel) -> Bool {
        guard a.now == b.now, a.series.count == b.series.count else { return false }
        for (key, slot) in a.slots {
            guard let other = b.slots[key], a.series[slot] == b.series[other] else { return false }
        }
        return true
    }
}

// MARK: Snapshot form

extension HistoryModel: Codable {
    /// 2: buckets carry the time weighting (weighted, covered) and each series its held value.
    static let codecVersion: UInt8 = 2

    /// The binary form: version, clock, then each series (subject kind and id, quantity, the three
    /// columns, the held value).
    public func encodedBytes() -> [UInt8] {
        var w = ByteWriter(capacity: 16 + storageBytes)
        w.u8(Self.codecVersion)
        w.i64(now)
        w.u32(UInt32(series.count))
        for (slot, key) in keys.enumerated() {
            w.u8(key.subject.kind == "device" ? 0 : 1)
            w.string(key.subject.id)
            w.string(key.quantity.rawValue)
            series[slot].minute.encode(to: &w); series[slot].hour.encode(to: &w); series[slot].day.encode(to: &w)
            let hold = series[slot].hold
            w.u8((hold.value != nil ? 1 : 0) | (hold.newest != nil ? 2 : 0))
            w.f64(hold.value ?? 0); w.i64(hold.since); w.i64(hold.newest ?? 0)
        }
        return w.bytes
    }

    /// Reads ``encodedBytes()``; a failure names the field and offset.
    public init(encodedBytes bytes: [UInt8]) throws(DecodingFailure) {
        let result = bytes.withUnsafeBytes { raw -> Result<HistoryModel, DecodingFailure> in
            do throws(DecodingFailure) { return .success(try Self.decode(raw)) } catch { return .failure(error) }
        }
        self = try result.get()
    }

    static func decode(_ raw: UnsafeRawBufferPointer) throws(DecodingFailure) -> HistoryModel {
        var model = HistoryModel()
        var r = ByteReader(raw, type: "HistoryModel", schemaVersion: UInt16(Self.codecVersion))
        let version = try r.u8("version")
        guard version == Self.codecVersion else { throw r.failure("version", "unknown history codec version \(version)") }
        model.now = try r.i64("now")
        let n = Int(try r.u32("series"))
        for _ in 0..<n {
            let kind = try r.u8("subject")
            let id = try r.string("subject")
            guard kind <= 1 else { throw r.failure("subject", "invalid subject kind \(kind)") }
            let name = try r.string("quantity")
            guard let quantity = Quantity(rawValue: name) else { throw r.failure("quantity", "unknown quantity \"\(name)\"") }
            let key = HistorySeriesKey(subject: kind == 0 ? .device(id) : .animal(id), quantity: quantity)
            guard model.slots[key] == nil else { throw r.failure("subject", "series \(key.subject.stream) \(name) twice") }
            var s = HistorySeries()
            s.minute = try HistoryColumn(from: &r, limit: HistoryResolution.minute.retainedBuckets)
            s.hour = try HistoryColumn(from: &r, limit: HistoryResolution.hour.retainedBuckets)
            s.day = try HistoryColumn(from: &r, limit: HistoryResolution.day.retainedBuckets)
            let flags = try r.u8("hold")
            guard flags <= 3 else { throw r.failure("hold", "invalid hold flags \(flags)") }
            let value = try r.f64("hold_value"), since = try r.i64("hold_since"), newest = try r.i64("hold_newest")
            s.hold = HistoryHold(value: flags & 1 != 0 ? value : nil, since: since, newest: flags & 2 != 0 ? newest : nil)
            model.slots[key] = model.series.count
            model.series.append(s)
            model.keys.append(key)
        }
        try r.finish()
        return model
    }

    /// In a snapshot the model is one base64 string of its binary form (compact, and fast to write).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(Base64.encode(encodedBytes()))
    }

    /// Decodes the snapshot form: the binary encoding as a base64 string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let bytes = Base64.decode(try container.decode(String.self)) else {
            throw DecodingFailure(type: "HistoryModel", schemaVersion: UInt16(Self.codecVersion), field: "", reason: "not base64")
        }
        try self.init(encodedBytes: bytes)
    }
}
