import Foundation
import Kasa
import NIOCore
import NIOHTTP1
import Synchronization

/// The KLAP sessions a simulated plug has opened: handshake1 leaves a pending one under its cookie,
/// handshake2 with the client's proof establishes it, and requests must carry its cookie, the next
/// sequence numbers and their signature. Written from the protocol as python-kasa's
/// `kasa/transports/klaptransport.py` describes the device's side (KLAP v2).
final class KasaKLAPSessions: Sendable {
    private struct Session {
        var local: [UInt8]
        var remote: [UInt8]
        var keys: KasaKLAPSession?
        var lastSequence: Int32?
    }

    private let authHash: [UInt8]
    private let sessions = Mutex<[String: Session]>([:])
    private let counts = Mutex((handshakes: 0, refused: 0))

    init(credentials: KasaKLAPCredentials) { authHash = credentials.authHash }

    /// handshake1 and handshake2 begun so far, and requests refused with 403.
    var handshakes: Int { counts.withLock { $0.handshakes } }
    var refused: Int { counts.withLock { $0.refused } }

    /// Forgets every session, as a plug does on a restart or after its 24 h: the next request gets 403.
    func expireAll() { sessions.withLock { $0.removeAll() } }

    /// The answer to one request: status, cookie to set, body.
    func answer(path: String, cookie: String?, body: [UInt8], device: ([UInt8]) -> [UInt8]?) -> (HTTPResponseStatus, String?, [UInt8]) {
        let route = path.split(separator: "?", maxSplits: 1)
        switch route.first {
        case "/app/handshake1":
            guard body.count == 16 else { return (.badRequest, nil, []) }
            counts.withLock { $0.handshakes += 1 }
            var generator = SystemRandomNumberGenerator()
            let remote = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let id = (0..<16).map { _ in String(format: "%02X", UInt8.random(in: 0...255, using: &generator)) }.joined()
            sessions.withLock { $0[id] = Session(local: body, remote: remote) }
            return (.ok, id, remote + KasaKLAPSession.deviceProof(local: body, remote: remote, authHash: authHash))
        case "/app/handshake2":
            return sessions.withLock { all -> (HTTPResponseStatus, String?, [UInt8]) in
                guard let cookie, var session = all[cookie],
                    body == KasaKLAPSession.clientProof(local: session.local, remote: session.remote, authHash: authHash)
                else { return (.forbidden, nil, []) }
                session.keys = KasaKLAPSession(local: session.local, remote: session.remote, authHash: authHash)
                all[cookie] = session
                return (.ok, nil, [])
            }
        case "/app/request":
            let query = route.count > 1 ? route[1] : ""
            guard let text = query.split(separator: "&").first(where: { $0.hasPrefix("seq=") })?.dropFirst(4),
                let sequence = Int32(text)
            else { return (.badRequest, nil, []) }
            let opened = sessions.withLock { all -> KasaKLAPSession? in
                guard let cookie, var session = all[cookie], let keys = session.keys, keys.isSigned(body, sequence: sequence),
                    session.lastSequence.map({ sequence > $0 }) ?? true
                else { return nil }
                session.lastSequence = sequence
                all[cookie] = session
                return keys
            }
            guard let keys = opened, let plain = try? keys.open(body, sequence: sequence) else {
                counts.withLock { $0.refused += 1 }
                return (.forbidden, nil, [])
            }
            guard let reply = device(plain), let sealed = try? keys.sealReply(reply, sequence: sequence) else {
                return (.badRequest, nil, [])
            }
            return (.ok, nil, sealed)
        default:
            return (.notFound, nil, [])
        }
    }
}

/// One HTTP connection of a KLAP plug: each request collected whole and answered, then closed when
/// the client asked to.
final class KasaKLAPSimHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let simulator: KasaSimulator
    private let sessions: KasaKLAPSessions
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(simulator: KasaSimulator, sessions: KasaKLAPSessions) {
        self.simulator = simulator
        self.sessions = sessions
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
        case .body(let buffer):
            guard body.count + buffer.readableBytes <= 65_536 else {
                context.close(promise: nil)
                return
            }
            body += buffer.readableBytesView
        case .end:
            guard let head else { return }
            self.head = nil
            let cookie = head.headers["Cookie"].lazy.flatMap { $0.split(separator: ";") }
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .first { $0.hasPrefix("TP_SESSIONID=") }.map { String($0.dropFirst("TP_SESSIONID=".count)) }
            let (status, setCookie, reply) =
                head.method == .POST
                ? sessions.answer(path: head.uri, cookie: cookie, body: body, device: simulator.answer) : (.methodNotAllowed, nil, [])
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: String(reply.count))
            headers.add(name: "Content-Type", value: "application/octet-stream")
            if let setCookie { headers.add(name: "Set-Cookie", value: "TP_SESSIONID=\(setCookie);TIMEOUT=86400") }
            let keepAlive = head.isKeepAlive
            if !keepAlive { headers.add(name: "Connection", value: "close") }
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: reply)))), promise: nil)
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                if !keepAlive { bound.value.close(promise: nil) }
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
