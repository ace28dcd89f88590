import DriverAPI
import Foundation
import NIOCore
import NIOPosix
import PowerPlug
import Synchronization
import Testing

struct TimedOut: Error, CustomStringConvertible {
    var description: String
}

/// Polls `condition` every 20 ms until it holds; throws after `timeout`.
func eventually(_ what: String, timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return }
        if ContinuousClock.now >= deadline { throw TimedOut(description: "timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// A DriverContext that records every observation.
actor CollectingContext: DriverContext {
    nonisolated let deviceId = "plug-1"
    private(set) var observations: [Observation] = []

    func report(_ observation: Observation) {
        observations.append(observation)
    }

    var availabilities: [(Bool, String)] {
        observations.compactMap { if case .availability(let a, let r) = $0 { (a, r) } else { nil } }
    }
    var switchStates: [(on: Bool, manual: Bool?)] {
        observations.compactMap { if case .switchState(let on, let m) = $0 { (on, m) } else { nil } }
    }
    var activationReports: [[DeviceActivation]] {
        observations.compactMap { if case .activations(let l) = $0 { l } else { nil } }
    }

    /// Waits until some observation (any, from index `from`) satisfies `match`; returns its index.
    @discardableResult
    func waitFor(
        _ what: String, from: Int = 0, timeout: Duration = .seconds(10),
        _ match: @Sendable (Observation) -> Bool
    ) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        while true {
            if from < observations.count, let i = observations[from...].firstIndex(where: match) { return i }
            if ContinuousClock.now >= deadline {
                throw TimedOut(description: "timed out waiting for \(what); saw \(observations)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func waitAvailability(_ available: Bool, from: Int = 0, timeout: Duration = .seconds(10)) async throws -> String {
        let i = try await waitFor("availability \(available)", from: from, timeout: timeout) {
            if case .availability(available, _) = $0 { true } else { false }
        }
        guard case .availability(_, let reason) = observations[i] else { return "" }
        return reason
    }
}

func makeDriver(port: Int, extra: String = "") throws -> any Driver {
    let json = "{\"host\":\"127.0.0.1\",\"port\":\(port)\(extra.isEmpty ? "" : "," + extra)}"
    return try PowerPlugDriverFactory().make(
        configuration: DriverConfiguration(deviceId: "plug-1", driver: "powerplug", settingsJSON: json))
}

/// Collects the bytes a socket receives, in the background; tests poll it.
final class ByteSink: Sendable {
    private let state = Mutex<(bytes: [UInt8], closed: Bool)>(([], false))

    var bytes: [UInt8] { state.withLock { $0.bytes } }
    var closed: Bool { state.withLock { $0.closed } }

    func append(_ buffer: ByteBuffer) { state.withLock { $0.bytes += Array(buffer.readableBytesView) } }
    func close() { state.withLock { $0.closed = true } }

    /// Waits for at least `count` bytes and removes the first `count`.
    func take(_ count: Int, timeout: Duration = .seconds(10)) async throws -> [UInt8] {
        try await eventually("\(count) bytes (have \(bytes.count))", timeout: timeout) { bytes.count >= count }
        return state.withLock { s in
            let head = Array(s.bytes.prefix(count))
            s.bytes.removeFirst(count)
            return head
        }
    }

    /// Waits for the next whole client command (as the plug would read it).
    func takeCommand(timeout: Duration = .seconds(10)) async throws -> PlugCommand {
        let type = try await eventuallyFirstByte(timeout: timeout)
        let length = PlugCommandFormat().length(ofType: type) ?? 1
        var framer = PowerPlugFramer(format: PlugCommandFormat())
        try framer.append(try await take(length, timeout: timeout))
        guard let command = try framer.next() else { throw TimedOut(description: "no command") }
        return command
    }

    private func eventuallyFirstByte(timeout: Duration) async throws -> UInt8 {
        try await eventually("a command", timeout: timeout) { !bytes.isEmpty }
        return bytes[0]
    }
}

/// A TCP client for talking to the simulator byte by byte.
final class RawClient: Sendable {
    let channel: any Channel
    let received: ByteSink

    static func connect(port: Int) async throws -> RawClient {
        let sink = ByteSink()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SinkHandler(sink: sink))
                }
            }
            .connect(host: "127.0.0.1", port: port).get()
        return RawClient(channel: channel, sink: sink)
    }

    private init(channel: any Channel, sink: ByteSink) {
        self.channel = channel
        self.received = sink
    }

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }

    func close() async { try? await channel.close() }
}

/// Feeds a channel's reads into a ByteSink.
final class SinkHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let sink: ByteSink
    init(sink: ByteSink) { self.sink = sink }
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { sink.append(unwrapInboundIn(data)) }
    func channelInactive(context: ChannelHandlerContext) { sink.close(); context.fireChannelInactive() }
    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
}

/// One accepted connection of a scripted peer.
struct PeerConnection: Sendable {
    let channel: any Channel
    let received: ByteSink

    func send(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
    }
}

/// A hostile or scripted plug written for one test: runs `script` for every accepted connection
/// (on its own task, cancelled at stop), then closes the connection.
final class TestPeer: Sendable {
    let port: Int
    private let server: any Channel
    private let tasks = Mutex<[Task<Void, Never>]>([])
    private let accepted = Mutex(0)

    var connectionCount: Int { accepted.withLock { $0 } }

    private init(server: any Channel) {
        self.server = server
        port = server.localAddress?.port ?? 0
    }

    static func start(_ script: @escaping @Sendable (PeerConnection) async throws -> Void) async throws -> TestPeer {
        let starter = PeerStarter()
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let sink = ByteSink()
                let result = channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SinkHandler(sink: sink))
                }
                starter.launch(PeerConnection(channel: channel, received: sink), script)
                return result
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let peer = TestPeer(server: server)
        starter.attach(peer)
        return peer
    }

    fileprivate func run(_ connection: PeerConnection, _ script: @escaping @Sendable (PeerConnection) async throws -> Void) {
        accepted.withLock { $0 += 1 }
        let task = Task {
            try? await script(connection)
            try? await connection.channel.close()
        }
        tasks.withLock { $0.append(task) }
    }

    func stop() async {
        try? await server.close()
        let tasks = self.tasks.withLock { $0 }
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
    }
}

/// Hands connections accepted before `TestPeer.start` returned to the peer once it exists.
private final class PeerStarter: Sendable {
    private let state = Mutex<(peer: TestPeer?, queued: [(PeerConnection, @Sendable (PeerConnection) async throws -> Void)])>((nil, []))

    func launch(_ c: PeerConnection, _ script: @escaping @Sendable (PeerConnection) async throws -> Void) {
        let peer = state.withLock { s -> TestPeer? in
            if s.peer == nil { s.queued.append((c, script)) }
            return s.peer
        }
        peer?.run(c, script)
    }

    func attach(_ peer: TestPeer) {
        let queued = state.withLock { s in
            s.peer = peer
            defer { s.queued = [] }
            return s.queued
        }
        for (c, script) in queued { peer.run(c, script) }
    }
}

/// Sleeps until cancelled (a peer that stays silent).
func sleepForever() async {
    while !Task.isCancelled { try? await Task.sleep(for: .seconds(1)) }
}

/// A port nobody listens on.
func closedPort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress?.port ?? 1
    try await channel.close()
    return port
}

func temporaryPath(_ name: String) -> String {
    NSTemporaryDirectory() + "powerplug-\(name)-\(UUID().uuidString).json"
}
