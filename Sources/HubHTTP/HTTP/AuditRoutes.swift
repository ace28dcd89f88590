import HubAudit
import HubDomain
import HubEngine
import Hummingbird

/// The audit over HTTP (docs/audit.md): `GET /api/audit/head` (the newest signed tree head),
/// `GET /api/audit/proof?seq=N&size=S` (an inclusion proof) and
/// `GET /api/audit/consistency?from=A&to=B` (a consistency proof), read from `<data-dir>/audit/`
/// as `hub audit head|prove|consistency` read it. Each answers `{"status":"ok","data":...}` with
/// the same JSON those commands print.
struct AuditRoutes: Sendable {
    let dataDirectory: String

    func add(to router: Router<HubRequestContext>) {
        router.get("api/audit/head") { _, _ in head() }
        router.get("api/audit/proof") { request, _ in proof(request) }
        router.get("api/audit/consistency") { request, _ in consistency(request) }
    }

    var directory: String { AuditTrail.directory(dataDirectory: dataDirectory) }

    func head() -> Response {
        do {
            guard let head = try AuditTrail.newestHead(directory: directory) else {
                return APIResponders.response(.refused("no signed tree head yet", code: "no_tree_head", kind: .notFound))
            }
            return APIResponders.response(.ok(try JSONValue.parse(head.line)))
        } catch {
            return APIResponders.response(.refused("\(error)", code: "internal", kind: .internal))
        }
    }

    func proof(_ request: Request) -> Response {
        answer(request, known: ["seq", "size"]) { values, tree, newest in
            guard let seq = values["seq"] else { throw Refusal("seq: required (a record's sequence number)") }
            let size = values["size"] ?? newest
            guard size <= tree.size else { throw Refusal("size: the tree holds \(tree.size) records, not \(size)", notFound: true) }
            guard seq >= 1, seq <= size else { throw Refusal("seq: record \(seq) is not in the tree of \(size) records", notFound: true) }
            let path = try Merkle.inclusionProof(index: seq - 1, size: size, tree)
            return [("seq", .number(Double(seq))), ("size", .number(Double(size))), ("path", .array(path.map { .string(Hex.string($0)) }))]
        }
    }

    func consistency(_ request: Request) -> Response {
        answer(request, known: ["from", "to"]) { values, tree, newest in
            guard let from = values["from"] else { throw Refusal("from: required (the older head's size)") }
            let to = values["to"] ?? newest
            guard to <= tree.size else { throw Refusal("to: the tree holds \(tree.size) records, not \(to)", notFound: true) }
            guard from >= 1, from <= to else { throw Refusal("from: must be from 1 to \(to), not \(from)") }
            let path = try Merkle.consistencyProof(old: from, new: to, tree)
            return [("from", .number(Double(from))), ("to", .number(Double(to))), ("path", .array(path.map { .string(Hex.string($0)) }))]
        }
    }

    struct Refusal: Error {
        var message: String
        var notFound = false
        init(_ message: String, notFound: Bool = false) { (self.message, self.notFound) = (message, notFound) }
    }

    /// Reads the whole-number parameters `known` (any other is refused), opens the tree read-only
    /// and answers what `body` makes of them (`newest`: the newest head's size, else the tree's).
    private func answer(
        _ request: Request, known: [String],
        _ body: ([String: UInt64], TreeFile, UInt64) throws -> [(String, JSONValue)]
    ) -> Response {
        var values: [String: UInt64] = [:]
        for (key, value) in request.uri.queryParameters {
            guard known.contains(String(key)) else {
                return APIResponders.response(
                    .refused(
                        "unknown parameter \"\(Shown.text(String(key)))\"; known: \(known.joined(separator: ", "))", code: nil,
                        kind: .invalid))
            }
            guard let n = UInt64(value) else {
                return APIResponders.response(
                    .refused("\(key): expected a whole number, not \"\(Shown.text(String(value)))\"", code: nil, kind: .invalid))
            }
            values[String(key)] = n
        }
        do {
            let trail = try AuditTrail(dataDirectory: dataDirectory, readOnly: true)
            let newest = try AuditTrail.newestHead(directory: directory)?.size ?? trail.tree.size
            return APIResponders.response(.ok(.object(try body(values, trail.tree, newest))))
        } catch let refusal as Refusal {
            return APIResponders.response(
                .refused(
                    refusal.message, code: refusal.notFound ? "out_of_range" : nil,
                    kind: refusal.notFound ? .notFound : .invalid))
        } catch let error as AuditError {
            return APIResponders.response(.refused("\(error)", code: "no_tree_head", kind: .notFound))
        } catch {
            return APIResponders.response(.refused("\(error)", code: "internal", kind: .internal))
        }
    }
}
