import Foundation
import HubDomain
import HubEngine
import HubLog
import Hummingbird

extension ConsoleRoutes {
    /// Events per timeline page.
    static let auditPageSize = 50

    func auditPage(_ request: Request) async -> Response {
        let q = request.uri.queryParameters
        func param(_ name: String) -> String { q.get(name)?.trimmingCharacters(in: .whitespaces) ?? "" }
        let filter = AuditPage.Filter(
            stream: param("stream"), type: param("type"), actor: param("actor"), from: param("from"),
            to: param("to"), before: param("before"), asOf: param("asof"), verify: param("verify") == "1")
        var problem = filter.problem()
        let store = hub.store
        let last = store.lastSequence
        let (actors, streams) = await hub.read { state in
            (state.audit.countsByActor.keys.sorted(), state.audit.lastByStreamKey.keys.map(\.stream).sorted())
        }
        var timeline: LogScan.Page? = nil
        if problem == nil {
            let before = UInt64(filter.before) ?? last
            let matcher = filter.matcher()
            do {
                timeline = try await Self.offloaded {
                    try await LogScan(store: store).newest(before: before, limit: Self.auditPageSize, matches: matcher)
                }
            } catch {
                problem = Self.unreadable(error)
            }
        }
        var headBytes: [UInt8]? = nil
        do {
            headBytes = try await store.chainHash(at: last)
        } catch {
            // No head hash shown as if the log had none: the page says the log could not be read.
            if problem == nil { problem = Self.unreadable(error) }
        }
        let head = headBytes.map { bytes in bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined() }
        var verdict: AuditPage.Verdict? = nil
        if filter.verify {
            do {
                let report = try await Self.offloaded { try await store.verify(progress: nil) }
                verdict = .sound(records: report.records, headHash: report.headHash, note: report.incompleteTail)
            } catch {
                verdict = .broken("\(error)")
            }
        }
        var asOf: String? = nil
        if problem == nil, !filter.asOf.isEmpty, let bound = filter.asOfBound {
            do {
                asOf = try await Self.offloaded {
                    var state = HubState()
                    try await Hub.fold(store: store, into: &state, through: store.lastSequence, until: bound)
                    return ReadModelReport.table(state, asOf: bound.description)
                }
            } catch {
                problem = Self.unreadable(error)
            }
        }
        return AuditPage(
            filter: filter, problem: problem, timeline: timeline, lastSequence: last, headHash: head, verdict: verdict,
            actors: actors, streams: streams, asOf: asOf
        ).page.response
    }

    /// What the page says when the log cannot be read (an audit never shows a gap as if it were empty).
    static func unreadable(_ error: any Error) -> String {
        "the log could not be read: \(error). Run hub verify for the whole chain."
    }

    /// Runs long log reads in a task of their own, apart from the request's (a long verify or
    /// replay must not hold up other requests' tasks).
    static func offloaded<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await Task.detached { try await body() }.value
    }
}

/// A page's list of events that could not be read, with the sentence the page shows instead.
struct LogUnreadable: Error {
    let message: String
}
