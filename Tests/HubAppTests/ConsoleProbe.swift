import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What a browser does to the console, over a real TCP connection: a POST with a body, and a
/// server-sent event stream read as it arrives.
extension HTTPProbe {
    static func post(port: Int, path: String, contentType: String = "application/json", body: [UInt8]) async throws -> Reply {
        try await onOwnThread {
            let fd = try connected(port: port)
            defer { close(fd) }
            let head =
                "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: \(contentType)\r\n"
                + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
            try sendAll(fd, Array(head.utf8) + body)
            return try parse(try readToEnd(fd))
        }
    }

    static func post(port: Int, path: String, json: String) async throws -> Reply {
        try await post(port: port, path: path, body: Array(json.utf8))
    }

    static func connected(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(errno)")
        }
        return fd
    }

    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                // The server may answer (413) and close before it read the whole body.
                if errno == EPIPE || errno == ECONNRESET { return }
                throw Failure(description: "send: errno \(errno)")
            }
            sent += n
        }
    }

    static func readToEnd(_ fd: Int32) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 {
                if errno == ECONNRESET, !bytes.isEmpty { break }
                throw Failure(description: "recv: errno \(errno)")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }
}

/// An open `GET /console/events`, read as the server sends it.
final class EventStreamProbe: @unchecked Sendable {
    let fd: Int32
    private(set) var received = ""

    init(port: Int, path: String = "/console/events") throws {
        fd = try HTTPProbe.connected(port: port)
        try HTTPProbe.sendAll(fd, Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n\r\n".utf8))
    }

    /// Reads until `needle` has arrived (since the start of the stream), or throws after `timeout`.
    func waitFor(_ needle: String, timeout: Duration = .seconds(5)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while !received.contains(needle) {
            guard ContinuousClock.now < deadline else {
                throw HTTPProbe.Failure(description: "\"\(needle)\" did not arrive within \(timeout); received:\n\(received)")
            }
            let chunk = try await onOwnThread { [fd] in try Self.readSome(fd) }
            received += chunk
        }
        return received
    }

    /// Up to one read, waiting at most 200 ms.
    static func readSome(_ fd: Int32) throws -> String {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 200) > 0 else { return "" }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { throw HTTPProbe.Failure(description: "recv: errno \(errno)") }
        if n == 0 { throw HTTPProbe.Failure(description: "the server closed the event stream") }
        return String(decoding: chunk[0..<n], as: UTF8.self)
    }

    func close() { _ = Glibc.close(fd) }
}
