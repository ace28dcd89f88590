import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// An HTTP answer as KLAP reads it: the status, the cookies it sets, the body.
struct KasaHTTPAnswer: Sendable {
    var status: Int
    var cookies: [String: String]
    var body: [UInt8]
}

/// One HTTP/1.1 POST on a connection of its own (a KLAP plug's server is small; every exchange is
/// short), the answer's body bounded by `maxBody` bytes.
enum KasaHTTP {
    static func post(
        _ path: String, body: [UInt8], cookie: String?, config: KasaClientConfig, group: any EventLoopGroup,
        maxBody: Int = KasaFrameDecoder.defaultMaxFrameSize
    ) async throws -> KasaHTTPAnswer {
        let wait = TimeAmount.nanoseconds(Int64(config.timeout * 1e9))
        let loop = group.next()
        let answer = loop.makePromise(of: KasaHTTPAnswer.self)
        let timer = loop.scheduleTask(in: wait) { answer.fail(KasaClientError.timeout(seconds: config.timeout)) }
        defer { timer.cancel() }
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .connectTimeout(wait)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(KasaHTTPAnswerHandler(answer: answer, maxBody: maxBody))
                    }
                }
                .connect(host: config.host, port: config.port).get()
        } catch {
            let failure = KasaClientError.classify(error, endpoint: config.endpoint, host: config.host)
            answer.fail(failure)
            throw failure
        }
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: path)
        head.headers.add(name: "Host", value: config.endpoint)
        head.headers.add(name: "Content-Type", value: "application/octet-stream")
        head.headers.add(name: "Content-Length", value: String(body.count))
        head.headers.add(name: "Connection", value: "close")
        if let cookie { head.headers.add(name: "Cookie", value: "TP_SESSIONID=\(cookie)") }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        defer { channel.close(promise: nil) }
        do {
            return try await withTaskCancellationHandler {
                try await answer.futureResult.get()
            } onCancel: {
                answer.fail(CancellationError())
            }
        } catch let error as KasaClientError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw KasaClientError.classify(error, endpoint: config.endpoint, host: config.host)
        }
    }
}

/// Collects one HTTP response (head, body up to `maxBody`, end) into the promise.
final class KasaHTTPAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let answer: EventLoopPromise<KasaHTTPAnswer>
    private let maxBody: Int
    private var collected = KasaHTTPAnswer(status: 0, cookies: [:], body: [])

    init(answer: EventLoopPromise<KasaHTTPAnswer>, maxBody: Int) {
        self.answer = answer
        self.maxBody = maxBody
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            collected.status = Int(head.status.code)
            for value in head.headers["Set-Cookie"] {
                // `TP_SESSIONID=...;TIMEOUT=86400`: a plug may put both in one header.
                for part in value.split(separator: ";") {
                    let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    if pair.count == 2 { collected.cookies[pair[0]] = pair[1] }
                }
            }
        case .body(let buffer):
            guard collected.body.count + buffer.readableBytes <= maxBody else {
                answer.fail(KasaClientError.protocolError(.klap("an answer longer than \(maxBody) bytes")))
                context.close(promise: nil)
                return
            }
            collected.body += buffer.readableBytesView
        case .end:
            answer.succeed(collected)
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        answer.fail(KasaClientError.closed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        answer.fail(KasaClientError.protocolError(.klap("a broken HTTP answer (\(error))")))
        context.close(promise: nil)
    }
}

/// KLAP (v2) over HTTP: handshake1 and handshake2 open a session (its cookie, its keys), then each
/// request is sealed with the session, posted to `/app/request?seq=N` and its answer opened. A 403
/// or 401 to a request (the plug forgot the session, or its 24 h ran out) opens a new session
/// once. Requests go one at a time: the plug expects each sequence number after the one before.
actor KasaKLAPTransport {
    private let config: KasaClientConfig
    private let credentials: KasaKLAPCredentials
    private let group: any EventLoopGroup
    private var session: (keys: KasaKLAPSession, cookie: String?, expires: Date)?
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Handshakes begun, for the tests.
    private(set) var handshakes = 0

    init(config: KasaClientConfig, credentials: KasaKLAPCredentials, group: any EventLoopGroup) {
        self.config = config
        self.credentials = credentials
        self.group = group
    }

    /// Sends one JSON payload and returns the plug's JSON answer.
    func request(_ plain: [UInt8]) async throws -> [UInt8] {
        while busy { await withCheckedContinuation { waiters.append($0) } }
        busy = true
        defer {
            busy = false
            if !waiters.isEmpty { waiters.removeFirst().resume() }
        }
        for attempt in 0..<2 {
            var current = try await established()
            let (sequence, body) = try current.keys.seal(plain)
            session = current
            let answer = try await KasaHTTP.post(
                "/app/request?seq=\(sequence)", body: body, cookie: current.cookie, config: config, group: group)
            switch answer.status {
            case 200:
                return try current.keys.open(answer.body, sequence: sequence)
            case 401, 403:
                session = nil
                if attempt > 0 { throw KasaClientError.klapLogin(endpoint: config.endpoint, step: "request") }
            default:
                session = nil
                throw KasaClientError.protocolError(.klap("HTTP status \(answer.status) to a request"))
            }
        }
        throw KasaClientError.klapLogin(endpoint: config.endpoint, step: "request")
    }

    /// Forgets the session (after an I/O error the next request opens a new one).
    func reset() { session = nil }

    private func established() async throws -> (keys: KasaKLAPSession, cookie: String?, expires: Date) {
        if let session, session.expires > Date() { return session }
        session = nil
        handshakes += 1
        let authHash = credentials.authHash
        var generator = SystemRandomNumberGenerator()
        let local = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let first = try await KasaHTTP.post("/app/handshake1", body: local, cookie: nil, config: config, group: group)
        guard first.status == 200 else {
            throw KasaClientError.protocolError(.klap("HTTP status \(first.status) to handshake1"))
        }
        guard first.body.count == 48 else {
            throw KasaClientError.protocolError(.klap("a handshake1 answer of \(first.body.count) bytes (48 expected)"))
        }
        let remote = Array(first.body.prefix(16))
        guard Array(first.body.suffix(32)) == KasaKLAPSession.deviceProof(local: local, remote: remote, authHash: authHash) else {
            throw KasaClientError.klapLogin(endpoint: config.endpoint, step: "handshake1")
        }
        let cookie = first.cookies["TP_SESSIONID"]
        let lifetime = first.cookies["TIMEOUT"].flatMap(Double.init) ?? 86_400
        let proof = KasaKLAPSession.clientProof(local: local, remote: remote, authHash: authHash)
        let second = try await KasaHTTP.post("/app/handshake2", body: proof, cookie: cookie, config: config, group: group)
        guard second.status == 200 else {
            throw KasaClientError.klapLogin(endpoint: config.endpoint, step: "handshake2")
        }
        // Renewed a minute before the plug would forget it.
        let opened = (KasaKLAPSession(local: local, remote: remote, authHash: authHash), cookie, Date() + max(1, lifetime - 60))
        session = opened
        return opened
    }
}
