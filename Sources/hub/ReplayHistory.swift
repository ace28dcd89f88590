import CLISupport
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT

/// `hub replay --history SUBJECT:QUANTITY:BUCKET [--from T] [--to T]`: one history query answered
/// from the read models as replayed to the bound, with the same checks and codes as
/// `hub/request/history`.
struct ReplayHistory {
    var subject: String
    var quantity: String
    var bucket: String
    var from: String?
    var to: String?

    init(spec: String, from: String?, to: String?) throws {
        let parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else {
            throw HubError.usage("--history \"\(spec)\" must be SUBJECT:QUANTITY:BUCKET, e.g. device/kettle:power:1h")
        }
        subject = parts[0]; quantity = parts[1]; bucket = parts[2]
        self.from = from; self.to = to
    }

    /// The one series the query reads (nil when the spec does not name one: the query is refused).
    var seriesKey: HistorySeriesKey? {
        guard let subject = try? HistoryQuery.parseSubject(subject), let quantity = Quantity(rawValue: quantity) else { return nil }
        return HistorySeriesKey(subject: subject, quantity: quantity)
    }

    /// Buckets before the end when `--from` is not given.
    static func defaultSpan(_ bucket: String) -> Int64 {
        switch HistoryResolution(rawValue: bucket) {
        case .minute?: return 60
        case .hour?: return 24
        default: return 30
        }
    }

    func query(_ state: HubState) throws(Rejection) -> HistoryQuery {
        let resolution = HistoryResolution(rawValue: bucket) ?? .day  // a bad bucket is refused by parse below
        let width = resolution.width
        let end = to ?? ISO8601.format(micros: (resolution.bucket(of: state.history.now) + 1) * width)
        let start = from ?? ISO8601.parse(end).map { ISO8601.format(micros: $0 - Self.defaultSpan(bucket) * width) } ?? end
        return try HistoryQuery.parse(subject: subject, quantity: quantity, from: start, to: end, bucket: bucket)
    }

    func print(_ state: HubState, asOf: String, json: Bool) throws {
        let query = try query(state)
        let answer = try state.history(query)
        if json {
            Swift.print(
                JSONValue.object([
                    ("as_of", .string(asOf)), ("subject", .string(subject)), ("quantity", .string(quantity)), ("bucket", .string(bucket)),
                    ("from", .string(ISO8601.format(micros: query.from))), ("to", .string(ISO8601.format(micros: query.to))),
                    ("data", HistoryJSON.data(answer))
                ]).serialized())
        } else {
            Swift.print("as of \(asOf)")
            Swift.print(HistoryJSON.table(answer, query: query), terminator: "")
        }
    }
}
