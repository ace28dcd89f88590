import Foundation
import HubDomain
import HubLog
import Hummingbird

extension ConsoleRoutes {
    /// Events per timeline page.
    static let auditPageSize = 50

    func auditPage(_ request: Request) async -> Response {
        let q = request.uri.queryParameters
        func param(_ name: String) -> String { q.get(name)?.trimmingCharacters(in: .whitespaces) ?? "" }
        let filter = AuditPage.Filter(stream: param("stream"), type: param("type"), actor: param("actor"), from: param("from"),
                                      to: param("to"), before: param("before"), asOf: param("asof"), verify: param("verify") == "1")
        let problem = filter.problem()
        let store = hub.store
        let last = store.lastSequence
        let (actors, streams) = await hub.read { state in
            (state.audit.countsByActor.keys.sorted(), state.audit.lastByStream.keys.sorted())
        }
        let timeline: LogScan.Page?
        if problem == nil {
            let before = UInt64(filter.before) ?? last
            let matcher = filter.matcher()
            timeline = try? await Self.offloaded {
                try LogScan(store: store).newest(before: before, limit: Self.auditPageSize, matches: matcher)
            }
        } else {
            timeline = nil
        }
        let headBytes: [UInt8]? = (try? store.chainHash(at: last)) ?? nil
        let head = headBytes.map { bytes in bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined() }
        var verdict: AuditPage.Verdict? = nil
        if filter.verify {
            do {
                let report = try await Self.offloaded { try store.verify(progress: nil) }
                verdict = .sound(records: report.records, headHash: report.headHash, note: report.incompleteTail)
            } catch {
                verdict = .broken("\(error)")
            }
        }
        var asOf: String? = nil
        if problem == nil, !filter.asOf.isEmpty, let bound = try? LogBound(parsing: filter.asOf) {
            asOf = try? await Self.offloaded {
                var state = HubState()
                try Hub.fold(store: store, into: &state, through: store.lastSequence, until: bound)
                return ReadModelReport.table(state, asOf: bound.description)
            }
        }
        return AuditPage(filter: filter, problem: problem, timeline: timeline, lastSequence: last, headHash: head, verdict: verdict,
                         actors: actors, streams: streams, asOf: asOf).page.response
    }

    /// Runs blocking log reads off the cooperative pool's current task (a long verify or replay
    /// must not hold up other requests' tasks).
    static func offloaded<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Task.detached { try body() }.value
    }
}
