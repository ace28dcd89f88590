import HubDomain

/// History queries as JSON, shared by `hub/request/history`, `hub exec` and `hub replay --history`:
/// `{"subject":"device/kettle","quantity":"power","from":"<ISO-8601>","to":"<ISO-8601>","bucket":"1h"}`.
/// The checks are the domain's (`HistoryQuery.parse`, `HubState.history`); this only reads fields and
/// renders answers.
public enum HistoryJSON {
    /// The fields of a history query; all are required.
    public static let keys = ["subject", "quantity", "from", "to", "bucket"]

    /// Why a history request was not answered: a field missing or of the wrong type (`code` nil),
    /// or a refusal with a stable code (`bad_range`, `unknown_subject`, ...).
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The refusal's stable code; nil when a field is missing or of the wrong type.
        public var code: String?
        /// What was wrong, naming the field.
        public var message: String
        /// "<code>: <message>", or the message alone.
        public var description: String { code.map { "\($0): \(message)" } ?? message }
    }

    /// Reads and checks a query object.
    ///
    /// - Parameters:
    ///   - object: The request's JSON object.
    ///   - alsoAllowed: Keys the transport reads itself (`transaction`, `id`, exec's `query`).
    /// - Throws: `Failure`: an unknown key, a missing or non-string field, or the domain's refusal.
    public static func query(_ object: JSONValue, alsoAllowed: [String] = []) throws(Failure) -> HistoryQuery {
        let fields: [String]
        do {
            let f = CommandJSON.Fields(object)
            try f.allow(keys, alsoAllowed)
            fields = try keys.map { try f.string($0) }
        } catch let failure as CommandJSON.Failure {
            throw Failure(code: nil, message: failure.description)
        } catch {
            throw Failure(code: nil, message: "\(error)")
        }
        do {
            return try HistoryQuery.parse(subject: fields[0], quantity: fields[1], from: fields[2], to: fields[3], bucket: fields[4])
        } catch {
            throw Failure(code: error.code, message: error.message)
        }
    }

    /// The answer's `data`: `[{"start","count","min","max","mean","last"}]` oldest first, or for
    /// energy `[{"start","kwh"}]` (the energy used on that UTC day).
    public static func data(_ answer: HistoryAnswer) -> JSONValue {
        switch answer {
        case .buckets(let buckets):
            return .array(
                buckets.map { b in
                    .object([
                        ("start", .string(ISO8601.format(micros: b.start))), ("count", .number(Double(b.count))),
                        ("min", .number(b.min)), ("max", .number(b.max)), ("mean", .number(b.mean)), ("last", .number(b.last))
                    ])
                })
        case .energy(let days):
            return .array(days.map { d in .object([("start", .string(ISO8601.format(micros: d.start))), ("kwh", .number(d.wh / 1000))]) })
        }
    }

    /// Aligned text, one bucket a line, for `hub replay --history`.
    public static func table(_ answer: HistoryAnswer, query: HistoryQuery) -> String {
        let unit = query.quantity == .energy ? "kWh" : query.quantity.unit
        var lines: [[String]]
        switch answer {
        case .buckets(let buckets):
            lines = [["start", "count", "min", "max", "mean", "last"]]
            lines += buckets.map { b in
                [ISO8601.format(micros: b.start), "\(b.count)", number(b.min), number(b.max), number(b.mean), number(b.last)]
            }
        case .energy(let days):
            lines = [["start", "kwh"]]
            lines += days.map { [ISO8601.format(micros: $0.start), number($0.wh / 1000)] }
        }
        let widths = (0..<lines[0].count).map { c in lines.map { $0[c].count }.max() ?? 0 }
        var out =
            "\(query.subject.stream) \(query.quantity.rawValue) (\(unit)) per \(query.resolution.rawValue), "
            + "\(ISO8601.format(micros: query.from)) to \(ISO8601.format(micros: query.to)): \(lines.count - 1) bucket(s)\n"
        for line in lines {
            let padded = zip(line, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }.joined(separator: "  ")
            out += String(padded.reversed().drop(while: { $0 == " " }).reversed()) + "\n"
        }
        return out
    }

    static func number(_ v: Double) -> String {
        let rounded = (v * 1000).rounded() / 1000
        return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int64(rounded)) : String(rounded)
    }
}
