import HTTPTypes
import HubEngine
import Hummingbird

/// How large a request body each path takes, in one table, and the refusals when one is larger
/// or of a kind the route does not read:
///
/// - a declared `Content-Length` over the limit is refused at once with 413 (a middleware, before
///   any route reads), and the connection is closed after the answer (``ConnectionDeadlines``),
///   so a body announced but never sent is not waited for;
/// - a body that turns out larger while read (chunked) gets the same 413 from ``collect(_:limit:)``;
/// - a `Content-Type` the route does not read gets 415 (``unsupportedType(_:accepted:)``).
struct BodyLimits: RouterMiddleware {
    typealias Context = HubRequestContext

    /// The largest body of a path: a photo 2 MiB, a console command 256 KiB, the sign-in form
    /// 8 KiB, the API what MQTT takes (64 KiB), anything else 64 KiB.
    static func limit(for path: String) -> Int {
        switch path {
        case "/console/photo": return PhotoStore.maxBytes
        case "/console/command": return 256 * 1024
        case "/login": return LoginResponders.maxFormBytes
        default: return RequestParser.maxPayloadBytes
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let limit = Self.limit(for: request.uri.path)
        // A photo's upload says it in its own words (``PhotoStore/tooLarge(_:)``).
        if let declared = request.headers[.contentLength], let length = Int(declared), length > limit, request.uri.path != "/console/photo"
        {
            return Self.tooLarge(request.uri.path, limit: limit, length: length)
        }
        return try await next(request, context)
    }

    /// The body of `request`, at most `limit` bytes; or the 413 to answer instead.
    static func collect(_ request: Request, limit: Int) async -> Result<ByteBuffer, Refusal> {
        do {
            return .success(try await request.body.collect(upTo: limit))
        } catch {
            return .failure(Refusal(response: tooLarge(request.uri.path, limit: limit, length: nil)))
        }
    }

    /// A response to send instead of reading on.
    struct Refusal: Error {
        var response: Response
    }

    /// 413 with a sentence, in the API's JSON shape; the connection closes after it.
    static func tooLarge(_ path: String, limit: Int, length: Int?) -> Response {
        let size = length.map { "this one is \($0) bytes" } ?? "this one is larger"
        var response = HTTPAccess.refusal(
            .contentTooLarge, "\(path) takes a body of at most \(shown(limit)); \(size), and was not read",
            code: "too_large")
        response.headers[.connection] = "close"
        return response
    }

    /// 415 naming the types the route reads, or nil when `request`'s type is one of them. No
    /// `Content-Type` is taken as the route's own kind (`curl -X POST` with no body sends none).
    static func unsupportedType(_ request: Request, accepted: [String]) -> Response? {
        guard let given = request.headers[.contentType] else { return nil }
        let type = given.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        guard !accepted.contains(type) else { return nil }
        return HTTPAccess.refusal(
            .unsupportedMediaType,
            "\(request.uri.path) reads \(accepted.joined(separator: " or ")), "
                + "not \(type.isEmpty ? "an empty Content-Type" : type)", code: "unsupported_media_type")
    }

    static func shown(_ bytes: Int) -> String {
        bytes % 1_048_576 == 0 ? "\(bytes / 1_048_576) MiB" : bytes % 1024 == 0 ? "\(bytes / 1024) KiB" : "\(bytes) bytes"
    }
}
