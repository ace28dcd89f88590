/// A history request, checked: `{"subject":"device/kettle","quantity":"power","from":...,"to":...,"bucket":"1h"}`.
/// The same for every transport (`hub/request/history`, `hub exec`, `hub replay --history`).
public struct HistoryQuery: Sendable, Equatable {
    /// What the readings are of.
    public var subject: Subject
    /// The quantity asked for (energy answers from the ledger, per day).
    public var quantity: Quantity
    /// The range, µs since the epoch: buckets whose start lies in `[bucket of from, to)`.
    public var from: Int64
    /// The end of the range, µs since the epoch (exclusive).
    public var to: Int64
    /// The bucket width.
    public var resolution: HistoryResolution

    /// At most this many buckets in one range (`too_many_buckets` beyond).
    public static let maxBuckets = 10_000

    /// Creates a query without checking it (`parse` checks a request).
    public init(subject: Subject, quantity: Quantity, from: Int64, to: Int64, resolution: HistoryResolution) {
        self.subject = subject; self.quantity = quantity; self.from = from; self.to = to; self.resolution = resolution
    }

    /// Checks a request's fields, in this order: subject, quantity, bucket, range, bucket count.
    ///
    /// - Parameters:
    ///   - subject: `device/<id>` or `animal/<id>`.
    ///   - quantity: A quantity's name (`power`, `heart_rate`, ...).
    ///   - from: ISO-8601 time (`2026-11-22T00:00:00Z`, offsets allowed), or a date alone (its start, UTC).
    ///   - to: The same, after `from`.
    ///   - bucket: `1m`, `1h` or `1d` (energy: `1d` only).
    /// - Throws: A `Rejection` with code `unknown_subject`, `unknown_quantity`, `bad_bucket`,
    ///   `bad_range` or `too_many_buckets`.
    public static func parse(
        subject: String, quantity: String, from: String, to: String,
        bucket: String
    ) throws(Rejection) -> HistoryQuery {
        let parsedSubject = try parseSubject(subject)
        guard let q = Quantity(rawValue: quantity) else {
            throw Rejection(
                code: "unknown_quantity",
                message: "quantity \(quoted(quantity)) is not one of "
                    + Quantity.allCases.map(\.rawValue).joined(separator: ", "))
        }
        guard let resolution = HistoryResolution(rawValue: bucket) else {
            throw Rejection(code: "bad_bucket", message: "bucket \(quoted(bucket)) is not one of 1m, 1h, 1d")
        }
        if q == .energy, resolution != .day {
            throw Rejection(code: "bad_bucket", message: "energy is kept per day: use bucket 1d, not \(quoted(bucket))")
        }
        guard let start = time(from) else { throw badTime("from", from) }
        guard let end = time(to) else { throw badTime("to", to) }
        guard start < end else {
            throw Rejection(code: "bad_range", message: "\"from\" (\(from)) must be before \"to\" (\(to))")
        }
        let query = HistoryQuery(subject: parsedSubject, quantity: q, from: start, to: end, resolution: resolution)
        guard query.bucketCount <= maxBuckets else {
            throw Rejection(
                code: "too_many_buckets",
                message: "the range holds \(query.bucketCount) buckets of \(bucket); "
                    + "at most \(maxBuckets): shorten it or use a wider bucket")
        }
        return query
    }

    /// `device/<id>` or `animal/<id>`; anything else is `unknown_subject`.
    public static func parseSubject(_ text: String) throws(Rejection) -> Subject {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2, Identifier.isValid(String(parts[1])) {
            if parts[0] == "device" { return .device(String(parts[1])) }
            if parts[0] == "animal" { return .animal(String(parts[1])) }
        }
        throw Rejection(code: "unknown_subject", message: "subject \(quoted(text)) must be device/<id> or animal/<id>")
    }

    /// An ISO-8601 time, or a date alone (its start, UTC).
    static func time(_ text: String) -> Int64? {
        ISO8601.parse(text) ?? Civil.parseDate(text).map { $0 * Civil.microsPerDay }
    }

    static func badTime(_ field: String, _ text: String) -> Rejection {
        Rejection(
            code: "bad_range", message: "\"\(field)\": \(quoted(text)) is not an ISO-8601 time (2026-11-22T18:00:00Z) or date (2026-11-22)")
    }

    /// How many buckets the range spans (empty ones included).
    public var bucketCount: Int64 { resolution.bucket(of: to - 1) - resolution.bucket(of: from) + 1 }
}

/// Energy used on one UTC day, from the energy ledger.
public struct EnergyDay: Sendable, Equatable {
    /// The day's start, µs since the epoch, UTC.
    public var start: Int64
    /// The energy used that day, in Wh.
    public var wh: Double
    /// Creates a day.
    public init(start: Int64, wh: Double) { self.start = start; self.wh = wh }
}

/// What a history query answers: buckets of readings, or energy per day.
public enum HistoryAnswer: Sendable, Equatable {
    /// Buckets of readings, oldest first.
    case buckets([HistoryBucket])
    /// Energy per UTC day, oldest first.
    case energy([EnergyDay])
}

extension HubState {
    /// Answers a history query from the read models: the history model's buckets, or for energy
    /// the ledger's energy per day. Buckets and days with nothing in them are left out.
    ///
    /// - Throws: A `Rejection`: `unknown_subject` (no such device or animal, and no readings of
    ///   it), `not_retained` (the range starts before the oldest bucket kept at that resolution).
    public func history(_ query: HistoryQuery) throws(Rejection) -> HistoryAnswer {
        try history(query, in: history)
    }

    /// Answers `query` with the buckets of `source` (the hub's files, or this state's own model)
    /// and the energy ledger of this state.
    public func history(_ query: HistoryQuery, in source: some HistorySource) throws(Rejection) -> HistoryAnswer {
        let known: Bool
        switch query.subject {
        case .device(let id): known = devices[id] != nil || source.knows(query.subject)
        case .animal(let id): known = animals[id] != nil || source.knows(query.subject)
        }
        guard known else {
            throw Rejection(code: "unknown_subject", message: "no \(query.subject.kind) \(quoted(query.subject.id)) is known")
        }
        if query.quantity == .energy { return .energy(energyDays(query)) }
        let resolution = query.resolution
        let horizon = resolution.horizon(now: source.now)
        if resolution.bucket(of: query.from) < horizon {
            throw Rejection(
                code: "not_retained",
                message: "\(resolution.rawValue) buckets are kept \(resolution.retentionText): "
                    + "the oldest kept starts at \(ISO8601.format(micros: horizon * resolution.width)); "
                    + "start the range there or use a wider bucket")
        }
        let key = HistorySeriesKey(subject: query.subject, quantity: query.quantity)
        return .buckets(try source.buckets(key, resolution, from: query.from, to: query.to))
    }

    func energyDays(_ query: HistoryQuery) -> [EnergyDay] {
        guard case .device(let id) = query.subject, let account = energy[id] else { return [] }
        let first = Civil.dayNumber(micros: query.from), last = Civil.dayNumber(micros: query.to - 1)
        return account.dailyWh.compactMap { key, wh -> EnergyDay? in
            guard let day = Civil.parseDate(key), day >= first, day <= last, wh > 0 else { return nil }
            return EnergyDay(start: day * Civil.microsPerDay, wh: wh)
        }.sorted { $0.start < $1.start }
    }
}
