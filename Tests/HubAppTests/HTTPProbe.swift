import Foundation

#if canImport(Glibc)
import Glibc
import BrokerHarness
#endif

/// A plain HTTP/1.1 GET over a real TCP connection to 127.0.0.1 (no client library): what a
/// scraper or a health probe does.
struct HTTPProbe {
    struct Reply {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func get(port: Int, path: String) async throws -> Reply {
        try await onOwnThread { try blockingGet(port: port, path: path) }
    }

    /// Any method, with extra header lines (`Authorization: Bearer ...`) and a body.
    static func request(port: Int, method: String, path: String, headers: [String] = [], body: String = "") async throws -> Reply {
        try await onOwnThread { try blockingGet(port: port, path: path, method: method, headers: headers, body: body) }
    }

    static func blockingGet(port: Int, path: String, method: String = "GET", headers: [String] = [], body: String = "") throws -> Reply {
        let fd = try connected(port: port)
        defer { close(fd) }
        let extra = headers.map { $0 + "\r\n" }.joined() + (body.isEmpty ? "" : "Content-Length: \(body.utf8.count)\r\n")
        // A `Host:` line among `headers` replaces the default one.
        let host = headers.contains { $0.lowercased().hasPrefix("host:") } ? "" : "Host: 127.0.0.1:\(port)\r\n"
        try sendAll(fd, Array("\(method) \(path) HTTP/1.1\r\n\(host)Connection: close\r\n\(extra)\r\n\(body)".utf8))
        return try parse(try readToEnd(fd))
    }

    /// Status line, headers (names lowercased) and body (a `chunked` body is joined).
    static func parse(_ bytes: [UInt8]) throws -> Reply {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw Failure(description: "no end of headers in \(text.prefix(200))") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = String(text[split.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = try dechunk(body) }
        return Reply(status: status, headers: headers, body: body)
    }

    static func dechunk(_ text: String) throws -> String {
        var rest = Substring(text), out = ""
        while let lineEnd = rest.range(of: "\r\n") {
            guard let size = Int(rest[..<lineEnd.lowerBound].split(separator: ";")[0], radix: 16) else {
                throw Failure(description: "bad chunk size")
            }
            if size == 0 { break }
            let start = lineEnd.upperBound
            let utf8 = rest.utf8
            let end = utf8.index(start, offsetBy: size)
            out += String(rest[start..<end])
            rest = rest[end...].dropFirst(2)
        }
        return out
    }
}

/// Prometheus's own `promtool check metrics` (Debian's `prometheus` package; scripts/setup-system
/// installs it for the tests): a real parser and linter of the text format.
enum PromTool {
    static func check(_ exposition: String) throws -> (status: Int32, output: String) {
        guard let path = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first(where: FileManager.default.isExecutableFile) else {
            throw HTTPProbe.Failure(
                description: "promtool is not installed (apt-get install prometheus; scripts/setup-system does it for tests)")
        }
        let configured = Process()
        configured.executableURL = URL(fileURLWithPath: path)
        configured.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        configured.standardInput = input
        configured.standardOutput = output
        configured.standardError = output
        let process = try spawn(configured: configured)
        input.fileHandleForWriting.write(Data(exposition.utf8))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }
}

/// Runs blocking socket I/O on a thread of its own, never on the cooperative pool: on a 2-core
/// machine two tests blocked in `recv` there would starve the in-process server they wait for.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
