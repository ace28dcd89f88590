import HTTPTypes
import HubEngine
import Hummingbird

/// The headers every response carries, the outermost middleware (refusals, 404s and errors
/// included): a browser runs only the hub's own script file, loads nothing from elsewhere, never
/// frames a page of the hub, never guesses a content type and never sends the hub's URLs on.
/// A response that sets its own `Content-Security-Policy` (a photo's, ``PhotoStore``) keeps it.
package struct SecurityHeaders: RouterMiddleware {
    package typealias Context = HubRequestContext

    /// The pages' policy: scripts, styles, images and connections (`fetch`, the live updates) from
    /// the hub only, no inline script or style, no plugins, no framing, forms posting to the hub.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    static let headers: HTTPFields = [
        .contentSecurityPolicy: contentSecurityPolicy,
        .xContentTypeOptions: "nosniff",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        HTTPField.Name("Referrer-Policy")!: "no-referrer",
        HTTPField.Name("Cross-Origin-Opener-Policy")!: "same-origin",
        .crossOriginResourcePolicy: "same-origin"
    ]

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        for field in Self.headers where response.headers[field.name] == nil {
            response.headers[field.name] = field.value
        }
        return response
    }

    package init() {

    }
}
