import HubDomain
import HubLog

/// A point in the log given on the command line: a sequence number or a time.
public enum LogBound: Sendable, Equatable, CustomStringConvertible {
    /// The log's sequence number.
    case sequence(UInt64)
    /// A time, µs since the Unix epoch, UTC.
    case time(Int64)

    /// A plain integer is a sequence number; anything else must be an ISO-8601 time
    /// (`2026-11-22T18:00:00Z`, or a date alone, meaning its start in UTC).
    public init(parsing text: String) throws {
        if let n = UInt64(text) { self = .sequence(n); return }
        if let t = ISO8601.parse(text) { self = .time(t); return }
        if let t = ISO8601.parse(text + "T00:00:00Z") { self = .time(t); return }
        throw HubError.usage("\"\(text)\" is neither a sequence number nor an ISO-8601 time (e.g. 2026-11-22T18:00:00Z)")
    }

    /// Whether a record lies at or before this bound.
    public func admits(sequence: UInt64, timestamp: Int64) -> Bool {
        switch self {
        case .sequence(let n): return sequence <= n
        case .time(let t): return timestamp <= t
        }
    }

    /// Whether a record lies at or after this bound.
    public func isReachedBy(sequence: UInt64, timestamp: Int64) -> Bool {
        switch self {
        case .sequence(let n): return sequence >= n
        case .time(let t): return timestamp >= t
        }
    }

    /// "sequence <n>" or the time in ISO 8601.
    public var description: String {
        switch self {
        case .sequence(let n): return "sequence \(n)"
        case .time(let t): return ISO8601.format(micros: t)
        }
    }
}
