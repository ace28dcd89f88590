import Crypto
import Foundation
import HTTPTypes
import HubDomain
import HubEngine
import HubLog
import Hummingbird

/// Animals' photos: uploaded by the console (`POST /console/photo`, the image as the raw body),
/// kept as files under `<data dir>/photos/`, named by their content's SHA-256 so the admission's
/// `photo` field (the file's name) also vouches for the image. Only a well-formed image of the kind
/// its `Content-Type` says is taken (``PhotoFormat``). Served at `/console/photos/<name>` with
/// `nosniff` and a sandboxing policy.
struct PhotoStore: Sendable {
    let directory: String
    /// The largest photo taken.
    static let maxBytes = 2 * 1024 * 1024

    init(dataDirectory: String) { directory = dataDirectory + "/photos" }

    /// The image kinds taken, by content type: file extension and the bytes such a file starts with.
    static let kinds: [(type: String, ext: String, magic: [UInt8])] = [
        ("image/jpeg", "jpg", [0xFF, 0xD8, 0xFF]),
        ("image/png", "png", [0x89, 0x50, 0x4E, 0x47]),
        ("image/webp", "webp", Array("RIFF".utf8)),
        ("image/gif", "gif", Array("GIF8".utf8))
    ]

    /// Stores the request's body; answers `{"status":"ok","photo":"<name>"}`, or an error naming
    /// what is wrong (too large, not an image) and storing nothing.
    func upload(_ request: Request) async -> Response {
        let type =
            request.headers[.contentType]?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        guard let kind = Self.kinds.first(where: { $0.type == type }) else {
            return ConsoleResponse.error(
                .unsupportedMediaType, code: "bad_photo",
                "a photo must be sent as \(Self.kinds.map(\.type).joined(separator: ", ")), not \"\(type)\"")
        }
        if let length = request.headers[.contentLength].flatMap(Int.init), length > Self.maxBytes {
            return tooLarge(length)
        }
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: Self.maxBytes)
        } catch {
            return tooLarge(nil)
        }
        let bytes = Array(body.readableBytesView)
        guard bytes.starts(with: kind.magic) else {
            return ConsoleResponse.error(.badRequest, code: "bad_photo", "the body is not a \(kind.type) image (it does not start as one)")
        }
        if let problem = PhotoFormat.problem(bytes, type: kind.type) {
            return ConsoleResponse.error(
                .badRequest, code: "bad_photo", "the body is not a \(kind.type) image: \(problem); nothing was stored")
        }
        let name = SHA256.hash(data: bytes).prefix(16).map { String($0, radix: 16).leftPadded(to: 2) }.joined() + "." + kind.ext
        do {
            try DurableFile.write(bytes, to: directory + "/" + name, directory: directory, mode: 0o600)
        } catch {
            return ConsoleResponse.error(.serviceUnavailable, code: "photo_not_stored", "the photo could not be stored: \(error)")
        }
        return ConsoleResponse.json(.ok, .object([("status", "ok"), ("photo", .string(name)), ("bytes", .number(Double(bytes.count)))]))
    }

    /// 413; the connection closes after it, so the rest of a large body is not waited for.
    func tooLarge(_ length: Int?) -> Response {
        let size = length.map { " is \(ConsoleFormat.number(Double($0) / 1_048_576, decimals: 1)) MiB:" } ?? " is larger than that:"
        var response = ConsoleResponse.error(
            .contentTooLarge, code: "photo_too_large",
            "a photo may be at most \(Self.maxBytes / 1_048_576) MiB; this one\(size) nothing was stored (make it smaller and try again)")
        response.headers[.connection] = "close"
        return response
    }

    /// A photo is shown as an image and nothing else: never sniffed as another type, and opened on
    /// its own it runs nothing (a sandbox with no script, no plugin, no origin).
    static let servedHeaders: HTTPFields = [
        .contentSecurityPolicy: "default-src 'none'; img-src 'self'; sandbox",
        .xContentTypeOptions: "nosniff"
    ]

    /// Whether `name` is one this store makes (no path can be smuggled in).
    static func isValidName(_ name: String) -> Bool {
        let parts = name.split(separator: ".")
        guard parts.count == 2, parts[0].count == 32, kinds.contains(where: { $0.ext == parts[1] }) else { return false }
        return parts[0].allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    func serve(_ name: String) -> Response {
        guard Self.isValidName(name), let data = FileManager.default.contents(atPath: directory + "/" + name),
            let kind = Self.kinds.first(where: { name.hasSuffix("." + $0.ext) })
        else {
            return ConsoleResponse.text(.notFound, "no photo \(name)\n")
        }
        var headers: HTTPFields = [.contentType: kind.type, .cacheControl: "private, max-age=86400"]
        headers.append(contentsOf: Self.servedHeaders)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
