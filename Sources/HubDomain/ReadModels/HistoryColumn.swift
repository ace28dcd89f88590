/// A bucket width of the history read model, with how long its buckets are kept.
public enum HistoryResolution: String, Sendable, Equatable, CaseIterable, Codable {
    /// One-minute buckets (`1m`).
    case minute = "1m"
    /// One-hour buckets (`1h`).
    case hour = "1h"
    /// One-day buckets (`1d`, UTC days).
    case day = "1d"

    /// The bucket width in microseconds.
    public var width: Int64 {
        switch self {
        case .minute: return 60 * Civil.microsPerSecond
        case .hour: return 3600 * Civil.microsPerSecond
        case .day: return Civil.microsPerDay
        }
    }

    /// How many of the newest bucket slots are kept: 7 days of minutes, 365 days of hours, 100
    /// years of days (36,525), so every series has a fixed size, in memory and in its file.
    public var retainedBuckets: Int {
        switch self {
        case .minute: return 7 * 1440
        case .hour: return 365 * 24
        case .day: return 36_525
        }
    }

    /// What a person reads: `7 days`, `365 days`, `100 years`.
    public var retentionText: String {
        switch self {
        case .minute: return "7 days"
        case .hour: return "365 days"
        case .day: return "100 years"
        }
    }

    /// The number of the bucket holding time `micros` (UTC, floor).
    @inline(__always)
    public func bucket(of micros: Int64) -> Int64 { Civil.floorDiv(micros, width) }

    /// The oldest bucket number still kept when the model's clock reads `now`.
    public func horizon(now: Int64) -> Int64 {
        bucket(of: now) - Int64(retainedBuckets) + 1
    }
}

/// One bucket as a query answers it.
///
/// `count`, `min`, `max`, `sum` and `last` are of the readings measured in the bucket. A bucket
/// with no reading but covered by a value held from before it (see ``HistoryHold``) is answered
/// too: `count` 0, and `min`, `max`, `last` and `mean` that held value.
public struct HistoryBucket: Sendable, Equatable {
    /// The bucket's start, µs since the epoch, UTC.
    public var start: Int64
    /// Readings measured in the bucket.
    public var count: Int
    /// The smallest reading measured in the bucket (the held value when `count` is 0).
    public var min: Double
    /// The largest reading measured in the bucket (the held value when `count` is 0).
    public var max: Double
    /// The sum of the readings measured in the bucket.
    public var sum: Double
    /// The value measured latest in the bucket (on equal times, the later event's).
    public var last: Double
    /// The time integral of the values held in the bucket (value × µs), over ``covered``.
    public var weighted: Double
    /// The µs of the bucket a value held in (from a reading in it, or carried in from before it).
    public var covered: Int64

    /// The time-weighted mean: each value weighted by how long it held within the bucket, over
    /// the part of the bucket that had a value (``HistoryHold``). A bucket whose readings held
    /// no time yet (the newest reading, measured at the model's clock) answers the mean of its readings.
    public var mean: Double { covered > 0 ? weighted / Double(covered) : sum / Double(count) }

    /// Creates a bucket; `weighted` and `covered` default to 0 (no time held yet).
    public init(
        start: Int64, count: Int, min: Double, max: Double, sum: Double, last: Double,
        weighted: Double = 0, covered: Int64 = 0
    ) {
        self.start = start; self.count = count; self.min = min; self.max = max; self.sum = sum; self.last = last
        self.weighted = weighted; self.covered = covered
    }
}

/// One resolution of one series: its buckets in time order, kept in a ring of parallel arrays
/// (struct of arrays, 68 bytes a bucket). The ring starts with 2 slots, grows by doubling up to the
/// resolution's retained bucket count and then drops its oldest bucket for each new one.
struct HistoryColumn: Sendable {
    private(set) var starts: [Int64] = []
    private var counts: [UInt32] = []
    private var mins: [Double] = []
    private var maxs: [Double] = []
    private var sums: [Double] = []
    private var lasts: [Double] = []
    private var lastAts: [Int64] = []
    private var weighteds: [Double] = []
    private var covereds: [Int64] = []
    /// Physical slot of the oldest bucket, and how many buckets are held.
    private var head = 0
    private(set) var count = 0
    let limit: Int?

    /// Bytes per bucket slot: start, count, min, max, sum, last, last time, weighted, covered.
    static let bytesPerBucket = 8 + 4 + 8 * 4 + 8 + 8 + 8

    init(limit: Int?) { self.limit = limit }

    /// Slots allocated (held or free).
    var capacity: Int { starts.count }
    var storageBytes: Int { capacity * Self.bytesPerBucket }

    @inline(__always)
    private func slot(_ i: Int) -> Int {
        let p = head + i
        return p < capacity ? p : p - capacity
    }

    func bucket(at i: Int, width: Int64) -> HistoryBucket {
        let p = slot(i)
        return HistoryBucket(
            start: starts[p] * width, count: Int(counts[p]), min: mins[p], max: maxs[p], sum: sums[p], last: lasts[p],
            weighted: weighteds[p], covered: covereds[p])
    }

    func start(at i: Int) -> Int64 { starts[slot(i)] }

    /// The index of the first bucket numbered `b` or later (`count` when none).
    func lowerBound(_ b: Int64) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if starts[slot(mid)] < b { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// Folds `value`, measured at `at`, into bucket number `b`.
    mutating func add(bucket b: Int64, value: Double, at: Int64) {
        guard let p = place(b, value) else { return }
        update(p, value, at)
    }

    /// Adds `micros` of `value` held to bucket number `b` (made, with no reading, when absent).
    mutating func weigh(bucket b: Int64, value: Double, micros: Int64) {
        guard let p = place(b, value) else { return }
        weighteds[p] += value * Double(micros)
        covereds[p] += micros
    }

    /// The slot of bucket `b`, made (with no reading, `value` as its min, max and last) when
    /// absent; nil when it is older than everything a full ring keeps.
    private mutating func place(_ b: Int64, _ value: Double) -> Int? {
        if count > 0 {
            let newest = starts[slot(count - 1)]
            if b == newest { return slot(count - 1) }
            if b < newest { return insertOlder(b, value) }
        }
        makeRoom()
        let p = slot(count)
        count += 1
        fill(p, b, value)
        return p
    }

    /// Drops the buckets numbered below `horizon`.
    mutating func prune(before horizon: Int64) {
        while count > 0, starts[head] < horizon {
            head = head + 1 == capacity ? 0 : head + 1
            count -= 1
        }
    }

    private mutating func insertOlder(_ b: Int64, _ value: Double) -> Int? {
        var i = lowerBound(b)
        if i < count, starts[slot(i)] == b { return slot(i) }
        if i == 0, let limit, count == limit { return nil }  // older than all a full ring keeps
        let full = limit.map { count == $0 } ?? false
        makeRoom()
        if full { i -= 1 }  // makeRoom dropped the oldest
        // Shift buckets i..<count one slot towards the newest end.
        var j = count
        while j > i {
            copy(from: slot(j - 1), to: slot(j))
            j -= 1
        }
        count += 1
        fill(slot(i), b, value)
        return slot(i)
    }

    /// Ensures a free slot after the newest bucket: grows the ring, or drops the oldest bucket of a full one.
    private mutating func makeRoom() {
        guard count == capacity else { return }
        if let limit, capacity >= limit {
            head = head + 1 == capacity ? 0 : head + 1
            count -= 1
            return
        }
        var grown = Swift.max(2, capacity * 2)
        if let limit { grown = Swift.min(grown, limit) }
        // The held slots in order, computed before any array (and so `capacity`) changes.
        let order = (0..<count).map(slot)
        func regrow<T>(_ a: [T], _ zero: T) -> [T] {
            var out = [T]()
            out.reserveCapacity(grown)
            for p in order { out.append(a[p]) }
            out.append(contentsOf: repeatElement(zero, count: grown - count))
            return out
        }
        starts = regrow(starts, 0); counts = regrow(counts, 0); mins = regrow(mins, 0); maxs = regrow(maxs, 0)
        sums = regrow(sums, 0); lasts = regrow(lasts, 0); lastAts = regrow(lastAts, 0)
        weighteds = regrow(weighteds, 0); covereds = regrow(covereds, 0)
        head = 0
    }

    /// A bucket with no reading yet.
    @inline(__always)
    private mutating func fill(_ p: Int, _ b: Int64, _ value: Double) {
        starts[p] = b; counts[p] = 0; mins[p] = value; maxs[p] = value; sums[p] = 0; lasts[p] = value; lastAts[p] = 0
        weighteds[p] = 0; covereds[p] = 0
    }

    @inline(__always)
    private mutating func update(_ p: Int, _ value: Double, _ at: Int64) {
        if counts[p] == 0 {  // the first reading: min, max and last are of readings only
            counts[p] = 1; mins[p] = value; maxs[p] = value; sums[p] = value; lasts[p] = value; lastAts[p] = at
            return
        }
        counts[p] &+= 1
        if value < mins[p] { mins[p] = value }
        if value > maxs[p] { maxs[p] = value }
        sums[p] += value
        if at >= lastAts[p] { lasts[p] = value; lastAts[p] = at }
    }

    private mutating func copy(from a: Int, to b: Int) {
        starts[b] = starts[a]; counts[b] = counts[a]; mins[b] = mins[a]; maxs[b] = maxs[a]
        sums[b] = sums[a]; lasts[b] = lasts[a]; lastAts[b] = lastAts[a]; weighteds[b] = weighteds[a]; covereds[b] = covereds[a]
    }
}

extension HistoryColumn: Equatable {
    /// Equal when they hold the same buckets, however the rings are laid out.
    static func == (a: HistoryColumn, b: HistoryColumn) -> Bool {
        guard a.count == b.count, a.limit == b.limit else { return false }
        for i in 0..<a.count {
            let p = a.slot(i), q = b.slot(i)
            guard a.starts[p] == b.starts[q], a.counts[p] == b.counts[q], a.mins[p].bitPattern == b.mins[q].bitPattern,
                a.maxs[p].bitPattern == b.maxs[q].bitPattern, a.sums[p].bitPattern == b.sums[q].bitPattern,
                a.lasts[p].bitPattern == b.lasts[q].bitPattern, a.lastAts[p] == b.lastAts[q],
                a.weighteds[p].bitPattern == b.weighteds[q].bitPattern, a.covereds[p] == b.covereds[q]
            else { return false }
        }
        return true
    }
}

extension HistoryColumn {
    /// Writes the held buckets, oldest first.
    func encode(to w: inout ByteWriter) {
        w.u32(UInt32(count))
        for i in 0..<count {
            let p = slot(i)
            w.i64(starts[p]); w.u32(counts[p]); w.f64(mins[p]); w.f64(maxs[p]); w.f64(sums[p]); w.f64(lasts[p]); w.i64(lastAts[p])
            w.f64(weighteds[p]); w.i64(covereds[p])
        }
    }

    /// Reads what ``encode(to:)`` wrote; refuses buckets out of order or more than the limit.
    init(from r: inout ByteReader, limit: Int?) throws(DecodingFailure) {
        self.init(limit: limit)
        let n = Int(try r.u32("buckets"))
        if let limit, n > limit { throw r.failure("buckets", "\(n) buckets exceed the limit of \(limit)") }
        guard n * Self.bytesPerBucket <= r.buffer.count - r.offset else { throw r.failure("buckets", "truncated: \(n) buckets") }
        starts.reserveCapacity(n); counts.reserveCapacity(n); mins.reserveCapacity(n); maxs.reserveCapacity(n)
        sums.reserveCapacity(n); lasts.reserveCapacity(n); lastAts.reserveCapacity(n)
        weighteds.reserveCapacity(n); covereds.reserveCapacity(n)
        for _ in 0..<n {
            let start = try r.i64("start")
            if let previous = starts.last, start <= previous { throw r.failure("start", "buckets out of order") }
            starts.append(start); counts.append(try r.u32("count")); mins.append(try r.f64("min")); maxs.append(try r.f64("max"))
            sums.append(try r.f64("sum")); lasts.append(try r.f64("last")); lastAts.append(try r.i64("last_at"))
            weighteds.append(try r.f64("weighted")); covereds.append(try r.i64("covered"))
        }
        count = n
    }
}
