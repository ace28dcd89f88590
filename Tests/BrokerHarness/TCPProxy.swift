import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A loopback TCP forwarder between one client and the broker, whose link a test can cut and
/// restore: "the hub's own connection drops while other clients keep publishing".
public final class TCPProxy: @unchecked Sendable {
    public let port: Int
    let upstreamPort: Int
    let listener: Int32
    let lock = NSLock()
    var open: [Int32] = []
    var blocked = false
    var closed = false
    /// How long what a client sends after its first chunk (its CONNECT) is held before the broker
    /// sees it: "the broker has answered CONNECT but not yet received the SUBSCRIBE that followed".
    let holdAfterFirstChunk: Duration

    public init(upstreamPort: Int, holdAfterFirstChunk: Duration = .zero) throws {
        self.upstreamPort = upstreamPort
        self.holdAfterFirstChunk = holdAfterFirstChunk
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw BrokerHarnessError("proxy: socket() failed") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw BrokerHarnessError("proxy: bind/listen failed") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: actual.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if lock.withLock({ closed }) { return }
                continue
            }
            if lock.withLock({ blocked || closed }) { Glibc.close(client); continue }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if connected != 0 { Glibc.close(client); Glibc.close(upstream); continue }
            lock.withLock { open += [client, upstream] }
            Thread { [self] in pump(from: client, to: upstream, holdAfterFirstChunk: holdAfterFirstChunk) }.start()
            Thread { [self] in pump(from: upstream, to: client) }.start()
        }
    }

    func pump(from source: Int32, to target: Int32, holdAfterFirstChunk hold: Duration = .zero) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        var chunks = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            chunks += 1
            if chunks == 2 && hold > .zero {
                Thread.sleep(forTimeInterval: Double(hold.components.seconds) + Double(hold.components.attoseconds) / 1e18)
            }
            var sent = 0
            while sent < n {
                let m = buffer.withUnsafeBytes { send(target, $0.baseAddress! + sent, n - sent, Int32(MSG_NOSIGNAL)) }
                if m <= 0 { break }
                sent += m
            }
            if sent < n { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(target, Int32(SHUT_RDWR))
    }

    /// Drops every forwarded connection and refuses new ones until `restore()`.
    public func cut() {
        let fds: [Int32] = lock.withLock {
            blocked = true
            let all = open
            open.removeAll()
            return all
        }
        for fd in fds { shutdown(fd, Int32(SHUT_RDWR)); Glibc.close(fd) }
    }

    public func restore() {
        lock.withLock { blocked = false }
    }

    public func close() {
        cut()
        lock.withLock { closed = true }
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
    }

    deinit { close() }
}
