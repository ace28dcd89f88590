/// How long a reading's value holds, the rule behind a bucket's time-weighted `mean`.
///
/// A reading holds from the time it was measured until the next reading of the same series, or
/// until its subject stops reporting (a device reported unavailable, `AvailabilityChanged` with
/// `available: false`; a device removed; an animal discharged), at that event's record time. There
/// is no staleness limit beside these: drivers record a reading at least every
/// `maxIntervalSeconds` while a device answers, so a value that holds long is one that did not change.
///
/// A reading measured before the series' newest (logged late) counts in its bucket's count, min,
/// max and last, but does not change the weighting: the span it falls in was already weighed by
/// the value then held, and is not split again.
///
/// Pure, and shared by the in-memory `HistoryModel` and the runtime's history files, so both weigh alike.
public struct HistoryHold: Sendable, Equatable, Codable {
    /// The value held since ``since``; nil when nothing is held (no reading yet, or the subject
    /// stopped reporting since the newest).
    public var value: Double?
    /// The measured time of the reading whose value is held, µs since the epoch.
    public var since: Int64 = 0
    /// The measured time of the series' newest reading (nil before any).
    public var newest: Int64?

    /// No value held yet.
    public init() {}

    /// A hold restored from its parts (the history files' form).
    public init(value: Double?, since: Int64, newest: Int64?) {
        self.value = value; self.since = since; self.newest = newest
    }

    /// One value held over `[from, to)` (µs).
    public struct Span: Sendable, Equatable {
        /// The value held.
        public var value: Double
        /// Where it starts holding, µs since the epoch (inclusive).
        public var from: Int64
        /// Where it stops holding, µs since the epoch (exclusive).
        public var to: Int64
    }

    /// Takes a reading of the series.
    ///
    /// - Returns: The span the value held before it closes (nil when nothing was held, or no time
    ///   passed), and whether the reading is the series' newest (measured at or after the newest;
    ///   on equal times the later reading's value holds). A reading measured before the newest
    ///   changes nothing here.
    public mutating func take(_ reading: Double, at: Int64) -> (closed: Span?, newest: Bool) {
        if let newest, at < newest { return (nil, false) }
        var closed: Span? = nil
        if let held = value, at > since { closed = Span(value: held, from: since, to: at) }
        value = reading
        since = at
        newest = at
        return (closed, true)
    }

    /// The subject stopped reporting at `at`: the value held ends there.
    /// - Returns: The span it held (nil when nothing was held, or no time passed).
    public mutating func end(at: Int64) -> Span? {
        guard let held = value else { return nil }
        value = nil
        return at > since ? Span(value: held, from: since, to: at) : nil
    }

    /// The open tail: the value held from its reading up to `now` (the model's clock), which
    /// queries count although no later reading closed it yet.
    public func tail(now: Int64) -> Span? {
        guard let held = value, now > since else { return nil }
        return Span(value: held, from: since, to: now)
    }
}

extension HistoryResolution {
    /// Calls `body` with each bucket `span` overlaps, from bucket `first` (older buckets are past
    /// retention) through bucket `through`, and the µs of the span inside it, oldest first.
    public func pieces(
        of span: HistoryHold.Span, from first: Int64 = .min, through: Int64 = .max,
        _ body: (_ bucket: Int64, _ micros: Int64) throws -> Void
    ) rethrows {
        guard span.to > span.from else { return }
        var b = Swift.max(bucket(of: span.from), first)
        let last = Swift.min(bucket(of: span.to - 1), through)
        while b <= last {
            let start = Swift.max(span.from, b * width), end = Swift.min(span.to, (b + 1) * width)
            try body(b, end - start)
            b += 1
        }
    }
}

extension HistoryBucket {
    /// A bucket holding no reading, covered `micros` by a value held from before it.
    static func carried(_ b: Int64, width: Int64, value: Double, micros: Int64) -> HistoryBucket {
        HistoryBucket(
            start: b * width, count: 0, min: value, max: value, sum: 0, last: value,
            weighted: value * Double(micros), covered: micros)
    }

    /// Adds `micros` of `value` to the weighting.
    mutating func weigh(_ value: Double, micros: Int64) {
        weighted += value * Double(micros)
        covered += micros
    }
}

/// Adds the open tail of `hold` (up to `now`) to `buckets` (of `resolution`, starting in `[from, to)`,
/// oldest first): what a query answers, from memory or from the files alike.
public func withOpenTail(
    _ buckets: [HistoryBucket], hold: HistoryHold, now: Int64, _ resolution: HistoryResolution,
    from: Int64, to: Int64
) -> [HistoryBucket] {
    guard let tail = hold.tail(now: now), to > from else { return buckets }
    let first = max(resolution.bucket(of: from), resolution.horizon(now: now)), last = resolution.bucket(of: to - 1)
    var out: [HistoryBucket] = []
    out.reserveCapacity(buckets.count + 1)
    var i = 0
    let width = resolution.width
    resolution.pieces(of: tail, from: first, through: last) { b, micros in
        while i < buckets.count, buckets[i].start < b * width { out.append(buckets[i]); i += 1 }
        if i < buckets.count, buckets[i].start == b * width {
            var bucket = buckets[i]
            bucket.weigh(tail.value, micros: micros)
            out.append(bucket)
            i += 1
        } else {
            out.append(.carried(b, width: width, value: tail.value, micros: micros))
        }
    }
    out.append(contentsOf: buckets[i...])
    return out
}
