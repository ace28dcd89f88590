import DriverAPI
import Foundation
import NIOCore
import NIOPosix
import PowerPlug
import Synchronization

/// An in-process stand-in for the seed's TCP Wi-Fi power plug, byte for byte: one client at a time
/// (others wait, accepted, until it leaves), a status right after accept, every `statusInterval` and
/// after every command, the list on 'A', 'U'/'D'/'S' as the plug does them, and the plug's own
/// scheduler. Usable many times in one process (tests, `hub sim powerplug --count N`).
public final class PowerPlugSimulator: Sendable {
    /// How the simulated plug is set up.
    public struct Options: Sendable {
        /// The address to listen on.
        public var host: String
        /// 0 = an ephemeral port (see `start()`'s result).
        public var port: Int
        /// How many activation slots the plug has.
        public var slots: Int
        /// Where activations and mode are kept across restarts (written atomically); nil = memory only.
        public var stateFile: String?
        /// How often it sends its status to the connected client.
        public var statusInterval: Duration
        /// How often it checks its activations against the clock.
        public var checkInterval: Duration
        /// The real plug's checks pause while a client is connected; off by default so a hub that is
        /// always connected still sees the plug run its activations.
        public var pauseSchedulerWhileConnected: Bool

        /// A plug on 127.0.0.1 at the protocol's default port and slot count, status every 2 s, checks every minute.
        public init(
            host: String = "127.0.0.1", port: Int = PowerPlugProtocol.defaultPort,
            slots: Int = PowerPlugProtocol.defaultSlots, stateFile: String? = nil,
            statusInterval: Duration = .seconds(2), checkInterval: Duration = .seconds(60),
            pauseSchedulerWhileConnected: Bool = false
        ) {
            self.host = host
            self.port = port
            self.slots = slots
            self.stateFile = stateFile
            self.statusInterval = statusInterval
            self.checkInterval = checkInterval
            self.pauseSchedulerWhileConnected = pauseSchedulerWhileConnected
        }
    }

    private struct Shared {
        var device: PlugDeviceState
        var connectionCount = 0
        var listRequests = 0
        var active: (any Channel)?
        var waiting: [any Channel] = []
        var server: (any Channel)?
        var timers: [RepeatedTask] = []
        var started = false
        var stopped = false
    }

    /// How it is set up.
    public let options: Options
    private let loop: any EventLoop
    private let clock: @Sendable () -> Int64
    private let shared: Mutex<Shared>

    /// - Parameters:
    ///   - group: where the plug's sockets and timers run (one event loop of it).
    ///   - clock: Unix seconds for the scheduler; nil = the wall clock.
    public init(
        options: Options, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: (@Sendable () -> Int64)? = nil
    ) {
        precondition((1...255).contains(options.slots), "slots must be 1...255")
        self.options = options
        loop = group.next()
        self.clock = clock ?? { Int64(Date().timeIntervalSince1970) }
        shared = Mutex(Shared(device: PlugDeviceState(slotCount: options.slots)))
    }

    // MARK: Controls

    /// The plug's mode and load. Setting it (a press on the plug itself) pushes a status to the client.
    public var status: (manual: Bool, on: Bool) {
        get { shared.withLock { ($0.device.manual, $0.device.on) } }
        set {
            let (channel, message) = shared.withLock { s -> ((any Channel)?, PlugMessage) in
                s.device.manual = newValue.manual
                s.device.on = newValue.on
                save(s.device)
                return (s.active, s.device.status)
            }
            push(message, to: channel)
        }
    }

    /// The used slots, in slot order.
    public var activations: [DeviceActivation] { shared.withLock { $0.device.used } }

    /// Sessions accepted so far (including ones still waiting for their turn).
    public var connectionCount: Int { shared.withLock { $0.connectionCount } }

    /// Sessions open now (served or waiting for their turn): 0 once every client has closed its connection.
    public var openConnections: Int { shared.withLock { ($0.active == nil ? 0 : 1) + $0.waiting.count } }

    /// How many times the plug was asked for its activations ('A') so far.
    public var listRequests: Int { shared.withLock { $0.listRequests } }

    /// Replaces the stored list "from elsewhere" (the phone app, an SD card swap) and saves it.
    /// At most `slots` are kept.
    public func replaceActivations(_ list: [DeviceActivation]) {
        shared.withLock { s in
            s.device.replace(with: list)
            save(s.device)
        }
    }

    /// One check of the plug's own scheduler now (with the injected clock); pushes a status when the
    /// load changed.
    public func runSchedulerCheck() {
        let now = clock()
        let (channel, message) = shared.withLock { s -> ((any Channel)?, PlugMessage?) in
            let result = s.device.check(now: now)
            if result.loadChanged || result.startsMoved { save(s.device) }
            return (s.active, result.loadChanged ? s.device.status : nil)
        }
        if let message { push(message, to: channel) }
    }

    // MARK: Life cycle

    /// Loads the state file (if any), rolls passed activations forward, starts listening and the
    /// timers. Returns the bound port.
    public func start() async throws -> Int {
        let loaded = try options.stateFile.flatMap { try SimulatorStateFile.load(path: $0, slots: options.slots) }
        let now = clock()
        try shared.withLock { s in
            guard !s.started else { throw DriverError("the powerplug simulator was started already") }
            s.started = true
            if let loaded { s.device = loaded }
            s.device.rollForward(now: now)
        }
        let server = try await ServerBootstrap(group: loop)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 64)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SimulatorSessionHandler(simulator: self))
                }
            }
            .bind(host: options.host, port: options.port).get()
        let port = server.localAddress?.port ?? options.port
        let statusEvery = TimeAmount(options.statusInterval)
        let checkEvery = TimeAmount(options.checkInterval)
        let stopNow = shared.withLock { s -> Bool in
            guard !s.stopped else { return true }
            s.server = server
            s.timers.append(
                loop.scheduleRepeatedTask(initialDelay: statusEvery, delay: statusEvery) { [self] _ in
                    let (channel, message) = shared.withLock { ($0.active, $0.device.status) }
                    push(message, to: channel)
                })
            s.timers.append(
                loop.scheduleRepeatedTask(initialDelay: checkEvery, delay: checkEvery) { [self] _ in
                    let paused = options.pauseSchedulerWhileConnected && shared.withLock { $0.active != nil }
                    if !paused { runSchedulerCheck() }
                })
            return false
        }
        if stopNow { try? await server.close() }
        shared.withLock { save($0.device) }
        return port
    }

    /// Closes the listener and every connection and stops the timers.
    public func stop() async {
        let (server, channels, timers) = shared.withLock { s in
            s.stopped = true
            let channels = (s.active.map { [$0] } ?? []) + s.waiting
            defer { s.server = nil; s.active = nil; s.waiting = []; s.timers = [] }
            return (s.server, channels, s.timers)
        }
        for timer in timers { timer.cancel() }
        try? await server?.close()
        for channel in channels { try? await channel.close() }
    }

    /// Runs `count` simulated plugs (ports `port...port+count-1`; with `port` 0 each gets an ephemeral
    /// one; with a state file and several plugs, plug i uses `<stateFile>.<i>`), prints one line per plug
    /// ("powerplug simulator listening on 127.0.0.1:230") and serves until the calling task is cancelled.
    public static func runForever(
        options: Options, count: Int = 1,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        print output: @Sendable (String) -> Void = { Swift.print($0) }
    ) async throws {
        var simulators: [PowerPlugSimulator] = []
        do {
            for i in 0..<max(count, 1) {
                var o = options
                if o.port != 0 { o.port += i }
                if let file = o.stateFile, count > 1 { o.stateFile = "\(file).\(i)" }
                let simulator = PowerPlugSimulator(options: o, group: group)
                simulators.append(simulator)
                let port = try await simulator.start()
                output("powerplug simulator listening on \(o.host):\(port)")
            }
        } catch {
            for s in simulators { await s.stop() }
            throw error
        }
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
        for s in simulators { await s.stop() }
    }

    // MARK: Sessions (called by SimulatorSessionHandler on the event loop)

    func accepted(_ channel: any Channel) {
        enum Turn { case now, later, never }
        let turn = shared.withLock { s -> Turn in
            guard !s.stopped else { return .never }
            s.connectionCount += 1
            if s.active == nil {
                s.active = channel
                return .now
            }
            s.waiting.append(channel)
            return .later
        }
        switch turn {
        case .now: serve(channel)
        case .later: break
        case .never: channel.close(promise: nil)
        }
    }

    func closed(_ channel: any Channel) {
        let next = shared.withLock { s -> (any Channel)? in
            s.waiting.removeAll { $0 === channel }
            guard s.active === channel else { return nil }
            s.active = nil
            while !s.waiting.isEmpty {
                let candidate = s.waiting.removeFirst()
                if candidate.isActive { s.active = candidate; return candidate }
            }
            return nil
        }
        if let next { serve(next) }
    }

    func handle(_ command: PlugCommand) -> [PlugMessage] {
        let now = clock()
        return shared.withLock { s in
            if command == .list { s.listRequests += 1 }
            let outcome = s.device.apply(command, now: now)
            if outcome.changed { save(s.device) }
            return outcome.replies
        }
    }

    private func serve(_ channel: any Channel) {
        push(shared.withLock { $0.device.status }, to: channel)
        channel.setOption(.autoRead, value: true).whenSuccess { channel.read() }
    }

    private func push(_ message: PlugMessage, to channel: (any Channel)?) {
        guard let channel, let bytes = try? message.encoded() else { return }
        channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: nil)
    }

    private func save(_ device: PlugDeviceState) {
        guard let path = options.stateFile else { return }
        do {
            try SimulatorStateFile.save(device, path: path)
        } catch {
            FileHandle.standardError.write(Data("powerplug simulator: cannot save \(path): \(error)\n".utf8))
        }
    }
}

/// Reads one client's commands; garbage closes the connection (the real plug would misparse).
final class SimulatorSessionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let simulator: PowerPlugSimulator
    private var framer = PowerPlugFramer(format: PlugCommandFormat())

    init(simulator: PowerPlugSimulator) { self.simulator = simulator }

    func channelActive(context: ChannelHandlerContext) {
        simulator.accepted(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        simulator.closed(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        var replies: [PlugMessage] = []
        do {
            try buffer.withUnsafeReadableBytes { bytes in
                try framer.feed(bytes) { command in replies += simulator.handle(command) }
            }
        } catch {
            replies = []
            context.close(promise: nil)
        }
        for reply in replies {
            guard let bytes = try? reply.encoded() else { continue }
            context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(bytes: bytes)), promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
