import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// HTTP/1.1 over a plain loopback socket for the console benchmark: a GET read to its end, and a
/// server-sent event stream read as it comes (no client library between the hub and the clock).
enum BenchHTTP {
    struct Failure: Error, CustomStringConvertible { var description: String }
    struct Reply { var status: Int; var headers: [String: String]; var body: String }

    /// A GET on a new connection (`Connection: close`), read until the server closes it.
    static func get(port: Int, path: String) throws -> Reply {
        let fd = try connectAndSend(port: port, path: path, extraHeaders: "Connection: close\r\n")
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 { throw Failure(description: "GET \(path): recv: \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard let split = find([13, 10, 13, 10], in: bytes) else { throw Failure(description: "GET \(path): no end of headers") }
        let (status, headers) = try head(bytes[..<split], path)
        var body = Dechunker(chunked: headers["transfer-encoding"]?.lowercased() == "chunked")
        return Reply(status: status, headers: headers, body: String(decoding: body.feed(bytes[(split + 4)...]), as: UTF8.self))
    }

    /// Opens `path` as an event stream: the status must be 200 and the type `text/event-stream`.
    /// - Returns: the socket (reads time out after 200 ms, so a reader can look at a stop flag), the
    ///   body bytes already read, and whether the body is chunked.
    static func openStream(port: Int, path: String) throws -> (fd: Int32, rest: [UInt8], chunked: Bool) {
        let fd = try connectAndSend(port: port, path: path, extraHeaders: "Accept: text/event-stream\r\n")
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while find([13, 10, 13, 10], in: bytes) == nil {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { close(fd); throw Failure(description: "\(path): the stream closed before its headers") }
            bytes += chunk[0..<n]
        }
        let split = find([13, 10, 13, 10], in: bytes)!
        let (status, headers) = try head(bytes[..<split], path)
        guard status == 200, headers["content-type"]?.hasPrefix("text/event-stream") == true else {
            close(fd)
            throw Failure(description: "\(path) answered \(status) \(headers["content-type"] ?? "") instead of an event stream")
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return (fd, Array(bytes[(split + 4)...]), headers["transfer-encoding"]?.lowercased() == "chunked")
    }

    static func connectAndSend(port: Int, path: String, extraHeaders: String) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(extraHeaders)\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            close(fd)
            throw Failure(description: "send: \(String(cString: strerror(errno)))")
        }
        return fd
    }

    static func head(_ bytes: ArraySlice<UInt8>, _ path: String) throws -> (Int, [String: String]) {
        let lines = String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { throw Failure(description: "\(path): bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers)
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        return (0...(bytes.count - needle.count)).first { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

/// Takes a body as it arrives and gives back its content: as it is, or without the chunk framing
/// of `Transfer-Encoding: chunked` (size line, data, CRLF), however the pieces are cut.
struct Dechunker {
    let chunked: Bool
    private var remaining = 0  // data bytes left in the current chunk
    private var sizeLine: [UInt8] = []
    private var skipCRLF = 0  // bytes of the CRLF after a chunk's data still to skip

    init(chunked: Bool) { self.chunked = chunked }

    mutating func feed<C: Collection>(_ bytes: C) -> [UInt8] where C.Element == UInt8 {
        guard chunked else { return Array(bytes) }
        var out: [UInt8] = []
        for byte in bytes {
            if remaining > 0 {
                out.append(byte)
                remaining -= 1
                if remaining == 0 { skipCRLF = 2 }
            } else if skipCRLF > 0 {
                skipCRLF -= 1
            } else if byte == 10 {
                let text = String(decoding: sizeLine, as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
                remaining = Int(text.trimmingCharacters(in: .whitespaces), radix: 16) ?? 0
                sizeLine = []
            } else if byte != 13 {
                sizeLine.append(byte)
            }
        }
        return out
    }
}
