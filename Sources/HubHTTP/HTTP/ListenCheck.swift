#if canImport(Glibc)
import HubEngine
import Glibc
#endif

extension HTTPSettings {
    /// Binds the address and lets it go again, so that a port in use or an address this machine
    /// does not have is reported before the hub starts (as every mistake a person must fix is),
    /// rather than by the running hub stopping.
    ///
    /// - Throws: ``HubError/usage(_:)`` naming the address and the system's reason.
    package func checkCanListen() throws {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let address = found else {
            throw HubError.usage("HTTP address \(description): cannot resolve \(host): \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(found) }
        let fd = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
        guard fd >= 0 else { throw HubError.usage("HTTP address \(description): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))  // as the server does
        guard bind(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else {
            throw HubError.usage("HTTP address \(description): cannot listen there: \(String(cString: strerror(errno)))")
        }
    }
}
