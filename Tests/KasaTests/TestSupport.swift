import DriverAPI
import Foundation
import Kasa
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Records what a driver reports, with an async wait-until helper.
actor CollectingContext: DriverContext {
    nonisolated let deviceId: String
    private(set) var observations: [Observation] = []

    init(deviceId: String = "plug1") { self.deviceId = deviceId }

    func report(_ observation: Observation) { observations.append(observation) }

    /// Polls until `predicate` holds over everything reported so far (or `timeout` seconds pass).
    @discardableResult
    func wait(
        timeout: Double = 15, sourceLocation: SourceLocation = #_sourceLocation,
        _ predicate: @Sendable ([Observation]) -> Bool
    ) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if predicate(observations) { return true }
            try? await Task.sleep(nanoseconds: 20_000_000)
        }
        let ok = predicate(observations)
        if !ok { Issue.record("condition not reached within \(timeout) s; got \(observations)", sourceLocation: sourceLocation) }
        return ok
    }

    var count: Int { observations.count }
}

/// Polls `condition` every 5 ms until it holds (true) or `timeout` seconds pass (false).
func eventually(timeout: Double = 2, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(nanoseconds: 5_000_000)
    }
    return condition()
}

extension [Observation] {
    var availabilities: [(Bool, String)] {
        compactMap { if case .availability(let a, let r) = $0 { (a, r) } else { nil } }
    }
    var switchStates: [Bool] {
        compactMap { if case .switchState(let on, _) = $0 { on } else { nil } }
    }
    /// Switch states with consecutive repeats folded (a read-back may repeat what a poll just said).
    var stateChanges: [Bool] {
        switchStates.reduce(into: []) { out, on in if out.last != on { out.append(on) } }
    }
    func readings(_ quantity: Quantity) -> [Double] {
        compactMap { if case .reading(let q, let v, _) = $0, q == quantity { v } else { nil } }
    }
    var lastAvailability: (Bool, String)? { availabilities.last }
}

/// A settable clock for the simulator (Unix seconds).
final class TestClock: Sendable {
    private let now: Mutex<Double>
    init(_ start: Double = 1_700_000_000) { now = Mutex(start) }
    func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
    var read: @Sendable () -> Double { { [self] in now.withLock { $0 } } }
}

/// Makes a Kasa driver through the factory, with test timings.
/// `extra` (`,"timeout":10`) adds settings or replaces the test timings (a key is given once: the
/// settings reader refuses a key given twice).
func makeDriver(port: Int, host: String = "127.0.0.1", extra: String = "") throws -> any Driver {
    let timings = [("poll_interval", "0.2"), ("timeout", "2"), ("retries", "1"), ("retry_backoff", "0.05"), ("max_backoff", "0.4")]
        .filter { !extra.contains("\"\($0.0)\":") }.map { ",\"\($0.0)\":\($0.1)" }.joined()
    let settings = #"{"host":"\#(host)","port":\#(port)\#(timings)\#(extra)}"#
    return try KasaDriverFactory().make(configuration: DriverConfiguration(deviceId: "plug1", driver: "kasa", settingsJSON: settings))
}

// MARK: - Plain POSIX sockets (an independent peer, no NIO)

enum SocketError: Error { case failed(String) }

private func loopbackAddress(port: UInt16) -> sockaddr_in {
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = port.bigEndian
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    return addr
}

private func boundPort(_ fd: Int32) -> Int {
    var addr = sockaddr_in()
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return Int(UInt16(bigEndian: addr.sin_port))
}

func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if n <= 0 { return false }
        offset += n
    }
    return true
}

func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
    var out = [UInt8](repeating: 0, count: count)
    var offset = 0
    while offset < count {
        let n = out[offset...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return nil }
        offset += n
    }
    return out
}

/// Reads one Kasa frame and returns its decrypted payload.
func readFrame(_ fd: Int32) -> [UInt8]? {
    guard let header = readExactly(fd, 4) else { return nil }
    let size = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
    guard size <= 1 << 20, let payload = readExactly(fd, size) else { return nil }
    return KasaCipher.decrypt(payload)
}

/// A port nobody listens on (bound, then closed).
func closedPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = loopbackAddress(port: 0)
    _ = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    let port = boundPort(fd)
    close(fd)
    return port
}

/// A blocking test client (receive timeout 10 s) speaking framed Kasa JSON.
final class BlockingClient {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var addr = loopbackAddress(port: UInt16(port))
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw SocketError.failed("connect errno \(errno)") }
    }

    deinit { close(fd) }

    func sendRaw(_ bytes: [UInt8]) throws {
        guard writeAll(fd, bytes) else { throw SocketError.failed("send") }
    }

    /// Sends a JSON text and returns the reply's JSON object.
    func request(_ json: String) throws -> JSONValue {
        try sendRaw(KasaCipher.frame(json))
        guard let payload = readFrame(fd) else { throw SocketError.failed("no reply") }
        let object = try JSONValue.parse(payload)
        guard case .object = object else { throw SocketError.failed("reply not an object") }
        return object
    }

    /// Sends a JSON text and returns the reply's text.
    func rawRequest(_ json: String) throws -> String {
        try sendRaw(KasaCipher.frame(json))
        guard let payload = readFrame(fd) else { throw SocketError.failed("no reply") }
        return String(decoding: payload, as: UTF8.self)
    }

    /// True when the peer closed the connection (read returns 0 or an error).
    func peerClosed() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) <= 0
    }
}

/// A hostile or scripted peer: a plain TCP server on a thread, running `behavior` on every accepted
/// connection (in its own thread) with the connected socket.
final class ScriptedPeer: Sendable {
    let port: Int
    private let listener: Int32

    init(_ behavior: @escaping @Sendable (Int32) -> Void) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = loopbackAddress(port: 0)
        _ = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        listen(fd, 16)
        listener = fd
        port = boundPort(fd)
        let thread = Thread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { break }
                let worker = Thread {
                    behavior(client)
                    close(client)
                }
                worker.start()
            }
            close(fd)
        }
        thread.start()
    }

    func stop() { shutdown(listener, Int32(SHUT_RDWR)) }

    /// Reads frames and answers each with `reply(request JSON text)` (nil = no answer), until closed.
    static func answering(_ reply: @escaping @Sendable (String) -> [UInt8]?) -> ScriptedPeer {
        ScriptedPeer { fd in
            while let request = readFrame(fd) {
                if let answer = reply(String(decoding: request, as: UTF8.self)), !writeAll(fd, answer) { return }
            }
        }
    }
}
