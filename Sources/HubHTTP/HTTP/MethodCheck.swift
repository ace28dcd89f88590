import HTTPTypes
import HubEngine
import Hummingbird
import Synchronization

/// A path the router serves asked for with a method it does not take: `405 Method Not Allowed`
/// with `Allow` listing the ones it does (HEAD wherever GET is), instead of the router's 404.
/// A middleware on the whole router; the table is filled once every route is added
/// (``RouteTable/fill(from:)``).
struct MethodCheck: RouterMiddleware {
    typealias Context = HubRequestContext

    let table: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            let allowed = table.methods(for: request.uri.path)
            guard !allowed.isEmpty, !allowed.contains(request.method.rawValue) else { throw error }
            var response = HTTPAccess.refusal(
                .methodNotAllowed, "\(request.uri.path) takes \(allowed.joined(separator: ", ")), not \(request.method.rawValue)",
                code: "method_not_allowed")
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        }
    }
}

/// Every route's path pattern and methods, for ``MethodCheck``.
final class RouteTable: Sendable {
    private let routes = Mutex<[(segments: [Substring], methods: Set<String>)]>([])

    /// Takes every route of `router` (call after the last one is added).
    func fill(from router: Router<HubRequestContext>) {
        var byPath: [String: Set<String>] = [:]
        for route in router.routes {
            byPath[route.path.description, default: []].insert(route.method.rawValue)
            if route.method == .get { byPath[route.path.description, default: []].insert("HEAD") }
        }
        routes.withLock { $0 = byPath.map { (Self.segments($0.key), $0.value) } }
    }

    /// The methods the route matching `path` takes, sorted; empty when no route matches.
    func methods(for path: String) -> [String] {
        let wanted = Self.segments(path)
        return routes.withLock { routes in
            var found: Set<String> = []
            for route in routes
            where route.segments.count == wanted.count
                && zip(route.segments, wanted).allSatisfy({ $0.hasPrefix("{") || $0.hasPrefix(":") || $0 == $1 })
            {
                found.formUnion(route.methods)
            }
            return found.sorted()
        }
    }

    static func segments(_ path: String) -> [Substring] { path.split(separator: "/") }
}
