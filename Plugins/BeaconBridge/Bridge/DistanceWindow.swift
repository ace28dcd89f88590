/// Smoothing of one (beacon, room) distance series: the samples of the last `window` µs (at most
/// `capacity`), estimated by the median after outlier rejection:
///
/// 1. m = median of the samples, MAD = median |x - m|;
/// 2. samples with |x - m| > 3 * max(1.4826 * MAD, 5 % of m, 1 cm) are outliers (a reflection, a
///    body in the way, a corrupt frame);
/// 3. the estimate is the median of the remaining samples.
///
/// A median needs no tuning, ignores single spikes completely and follows a real move within half
/// a window; with 2 messages/s and a 10 s window it sees about 20 samples.
public struct DistanceWindow: Sendable {
    /// Samples kept at most.
    public static let capacity = 64

    private var times: [Int64] = []
    private var values: [Double] = []
    /// The robust median of the samples held; infinity when none.
    public private(set) var estimate: Double = .infinity
    /// When the newest sample was taken, µs; `.min` before any.
    public private(set) var lastHeard: Int64 = .min

    /// An empty window.
    public init() {}

    /// Samples held.
    public var count: Int { values.count }

    /// Adds a sample taken at `time` (µs), drops samples older than `time - window`, re-estimates.
    public mutating func add(_ distance: Double, at time: Int64, window: Int64) {
        let oldest = time - window
        var drop = 0
        while drop < times.count && times[drop] < oldest { drop += 1 }
        if times.count - drop >= Self.capacity { drop = times.count - Self.capacity + 1 }
        if drop > 0 {
            times.removeFirst(drop)
            values.removeFirst(drop)
        }
        times.append(time)
        values.append(distance)
        lastHeard = max(lastHeard, time)
        estimate = Self.robustMedian(values)
    }

    /// Whether the window still holds a sample at `now`.
    public func isFresh(at now: Int64, window: Int64) -> Bool { lastHeard >= now - window }

    /// The median of `xs`; infinity for none.
    public static func median(_ xs: [Double]) -> Double {
        guard !xs.isEmpty else { return .infinity }
        let s = xs.sorted()
        let n = s.count
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2
    }

    /// The median after dropping outliers (see the type's comment); the plain median for two samples or fewer.
    public static func robustMedian(_ xs: [Double]) -> Double {
        guard xs.count > 2 else { return median(xs) }
        let m = median(xs)
        let mad = median(xs.map { abs($0 - m) })
        let limit = 3 * max(1.4826 * mad, 0.05 * m, 0.01)
        let inliers = xs.filter { abs($0 - m) <= limit }
        return inliers.isEmpty ? m : median(inliers)
    }
}
