import Foundation
import Kasa
import NIOCore
import NIOPosix
import Synchronization

/// A simulated TP-Link HS110 smart plug with energy meter, or an HS300 or KP303 power strip: a real
/// TCP server speaking the Kasa protocol (port 9999 by default). A strip answers requests with
/// `context.child_ids` for its outlets, as the real ones do. It answers the modules real clients query (`system`, `time`,
/// `emeter`, `schedule`, `count_down`, `anti_theft`, `cnCloud`, `netif`) with the device's
/// `err_code`s, and simulates a load whose energy accrues while the relay is on.
public final class KasaSimulator: Sendable {
    /// Which firmware's emeter field names and units to speak.
    public enum Firmware: String, Sendable, CaseIterable {
        /// `current`/`voltage`/`power`/`total` in A/V/W/kWh; statistics in `energy` (kWh).
        case old
        /// `current_ma`/`voltage_mv`/`power_mw`/`total_wh`; statistics in `energy_wh`.
        case new
    }

    /// Which device to be: a single plug or a power strip whose outlets are children of its sysinfo.
    public enum Model: String, Sendable, CaseIterable {
        /// An HS110(EU) plug with an energy meter (one relay, `relay_state`).
        case hs110 = "HS110"
        /// An HS300(US) strip: six outlets, each with its own meter (`emeter.get_realtime` with `child_ids`).
        case hs300 = "HS300"
        /// A KP303(UK) strip: three outlets, no meter.
        case kp303 = "KP303"

        /// The outlets (0 for the single plug).
        public var outlets: Int {
            switch self {
            case .hs110: 0
            case .hs300: 6
            case .kp303: 3
            }
        }
        /// Whether it answers `emeter`.
        var metered: Bool { self != .kp303 }
        /// The `model` of its sysinfo.
        var modelName: String {
            switch self {
            case .hs110: "HS110(EU)"
            case .hs300: "HS300(US)"
            case .kp303: "KP303(UK)"
            }
        }
        /// `hw_ver` and `sw_ver` of the strips, from the python-kasa fixtures their sysinfo follows.
        var hardware: String { self == .hs300 ? "2.0" : "1.0" }
        var softwareVersion: String { self == .hs300 ? "1.0.12 Build 220121 Rel.175814" : "1.0.3 Build 191105 Rel.113122" }
        var nominalVoltage: Double { self == .hs300 ? 120 : 230 }
    }

    /// How the simulated plug looks and where it listens.
    public struct Options: Sendable {
        /// The address to listen on.
        public var host: String
        /// 0 = an ephemeral port (see `start()`'s result).
        public var port: Int
        /// Which firmware's emeter fields to speak.
        public var firmware: Firmware
        /// The plug's name (`alias` in `system.get_sysinfo`).
        public var alias: String
        /// The MAC it reports.
        public var mac: String
        /// The load plugged in, drawn while the relay is on (a strip: in each outlet).
        public var loadWatts: Double
        /// The device: an HS110 plug, or an HS300 or KP303 strip.
        public var model: Model
        /// The TP-Link login of firmware that speaks KLAP over HTTP (on `port`) and no longer the
        /// local protocol; nil = the local protocol.
        package var klap: KasaKLAPCredentials?

        /// A plug on 127.0.0.1:9999 with new firmware, a 60 W load.
        public init(
            host: String = "127.0.0.1", port: Int = 9999, firmware: Firmware = .new,
            alias: String = "Kasa Plug", mac: String = "50:C7:BF:00:00:01", loadWatts: Double = 60.0, model: Model = .hs110
        ) {
            self.model = model
            self.host = host
            self.port = port
            self.firmware = firmware
            self.alias = alias
            self.mac = mac
            self.loadWatts = loadWatts
        }
    }

    /// How it looks and where it listens.
    public let options: Options
    private let group: any EventLoopGroup
    private let clock: @Sendable () -> Double
    let device: Mutex<KasaSimState>
    private let server = Mutex<(any Channel)?>(nil)
    private let connections = Mutex<[ObjectIdentifier: any Channel]>([:])
    private let accepted = Mutex(0)
    private let klapSessions: KasaKLAPSessions?

    /// - Parameters:
    ///   - group: the event loops to serve on (shared, no thread per plug).
    ///   - clock: Unix seconds, for the energy simulation and `time`; nil = the wall clock.
    public init(
        options: Options = Options(), group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        clock: (@Sendable () -> Double)? = nil
    ) {
        let clock = clock ?? { Date().timeIntervalSince1970 }
        self.options = options
        self.group = group
        self.clock = clock
        klapSessions = options.klap.map(KasaKLAPSessions.init)
        let hex = options.mac.filter(\.isHexDigit).uppercased()
        var state = KasaSimState(
            firmware: options.model == .hs110 ? options.firmware : .new, model: options.model, loadWatts: options.loadWatts,
            mac: options.mac, deviceId: String((hex + String(repeating: "8006", count: 10)).prefix(40)),
            hwId: String(("A0" + hex + String(repeating: "5E", count: 16)).prefix(32)),
            oemId: String(("C0" + String(repeating: "FFEE", count: 8)).prefix(32)),
            alias: options.alias, lastUpdate: clock())
        // Child ids are the device id and two digits from 00, as real strips report them (python-kasa
        // pull request 203's HS300 dump: 8006AF35...031904 and ...031905 for plugs 5 and 6).
        state.children = (0..<options.model.outlets).map { i in
            KasaSimChild(id: state.deviceId + String(format: "%02d", i), alias: "Plug \(i + 1)")
        }
        device = Mutex(state)
    }

    /// Starts listening; returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                track(channel)
                return channel.eventLoop.makeCompletedFuture {
                    if let klapSessions {
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(KasaKLAPSimHandler(simulator: self, sessions: klapSessions))
                    } else {
                        try channel.pipeline.syncOperations.addHandler(KasaSimHandler(simulator: self))
                    }
                }
            }
            .bind(host: options.host, port: options.port).get()
        server.withLock { $0 = channel }
        return channel.localAddress?.port ?? options.port
    }

    private func track(_ channel: any Channel) {
        accepted.withLock { $0 += 1 }
        let id = ObjectIdentifier(channel)
        connections.withLock { $0[id] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            _ = connections.withLock { $0.removeValue(forKey: id) }
        }
    }

    /// Stops listening and closes every client connection.
    public func stop() async {
        let channel = server.withLock { s -> (any Channel)? in
            defer { s = nil }; return s
        }
        try? await channel?.close()
        let open = connections.withLock { Array($0.values) }
        for connection in open { try? await connection.close() }
    }

    /// The relay; setting it acts as if the button on the plug were pressed.
    public var relayOn: Bool {
        get { withDevice { $0.relayOn } }
        set { let now = clock(); withDevice { $0.setRelay(newValue, at: now) } }
    }

    /// The plug's cumulative energy counter, Wh.
    public var energyTotalWh: Double { withDevice { $0.energyWh } }

    /// Sets the energy counter (and statistics) back to 0, as after a power loss or an erase.
    public func resetEnergyCounter() { withDevice { $0.eraseEnergy() } }

    /// KLAP handshakes (handshake1) answered so far; 0 for the local protocol.
    public var klapHandshakes: Int { klapSessions?.handshakes ?? 0 }

    /// KLAP requests refused with 403 (an unknown session, a stale sequence number, a bad signature).
    public var klapRefusals: Int { klapSessions?.refused ?? 0 }

    /// Forgets every KLAP session, as the plug does on a restart: the next request gets 403.
    public func expireKLAPSessions() { klapSessions?.expireAll() }

    /// Connections accepted so far.
    public var acceptedConnections: Int { accepted.withLock { $0 } }

    /// The child ids of a strip's outlets, in the device's order (empty for a single plug).
    public var childIds: [String] { device.withLock { $0.children.map(\.id) } }

    /// Outlet `n` (from 1) of a strip; setting it acts as if its button were pressed.
    public func outletOn(_ n: Int) -> Bool { withDevice { $0.children.indices.contains(n - 1) ? $0.children[n - 1].on : false } }

    /// Switches outlet `n` (from 1) of a strip, as its button does.
    public func setOutlet(_ n: Int, on: Bool) {
        let now = clock()
        withDevice { $0.setChild(n - 1, on, at: now) }
    }

    /// How many times `method` (`"system.get_sysinfo"`) was asked, on every connection.
    public func count(of method: String) -> Int { device.withLock { $0.methodCounts[method] ?? 0 } }

    /// The `context.child_ids` of the latest requests (empty for none), oldest first: the last 64.
    public var recentChildIds: [[String]] { device.withLock { $0.recentChildIds } }

    /// Requests answered so far (all connections).
    public var requestCount: Int { device.withLock { $0.requestCount } }

    /// The methods of the latest requests (`"system.get_sysinfo"`), oldest first: the last 64.
    public var recentMethods: [String] { device.withLock { $0.recentMethods } }

    /// When set, the plug answers `set_relay_state` with `err_code` 0 but its relay does not move:
    /// a faulty plug, for testing that the driver's read-back corrects what the answer claimed.
    public var ignoresSwitching: Bool {
        get { device.withLock { $0.ignoresSwitching } }
        set { device.withLock { $0.ignoresSwitching = newValue } }
    }

    /// Runs `body` on the state brought forward to the clock's now.
    private func withDevice<T: Sendable>(_ body: (inout KasaSimState) -> T) -> T {
        let now = clock()
        return device.withLock { state in
            state.advance(to: now)
            return body(&state)
        }
    }

    /// Answers one decrypted request payload; nil when it is not a JSON object (the plug hangs up).
    func answer(_ payload: [UInt8]) -> [UInt8]? {
        guard let request = try? KasaJSON.parseObject(payload) else { return nil }
        let now = clock()
        return device.withLock { state -> [UInt8] in
            KasaJSON.encode(state.handle(request, now: now))
        }
    }

    /// Serves `count` plugs on ports `options.port ..< options.port + count` (aliases numbered, MACs
    /// consecutive), printing one line per plug, until the task is cancelled. For `hub sim kasa`.
    public static func runForever(
        options: Options, count: Int = 1,
        print output: @Sendable (String) -> Void = { Swift.print($0) }
    ) async throws {
        var simulators: [KasaSimulator] = []
        do {
            for i in 0..<max(1, count) {
                var o = options
                if options.port != 0 { o.port = options.port + i }
                if count > 1 {
                    o.alias = "\(options.alias) \(i + 1)"
                    o.mac = macAdding(i, to: options.mac)
                }
                let simulator = KasaSimulator(options: o)
                let port = try await simulator.start()
                simulators.append(simulator)
                let kind =
                    (o.model == .hs110
                        ? "HS110, \(o.firmware.rawValue) firmware" : "\(o.model.modelName), \(o.model.outlets) outlets")
                    + (o.klap == nil ? "" : ", KLAP over HTTP")
                output("kasa simulator (\(kind)) listening on \(o.host):\(port)")
            }
            while !Task.isCancelled { try await Task.sleep(nanoseconds: 3_600_000_000_000) }
        } catch {
            for simulator in simulators { await simulator.stop() }
            if error is CancellationError { return }
            throw error
        }
        for simulator in simulators { await simulator.stop() }
    }

    static func macAdding(_ n: Int, to mac: String) -> String {
        let bytes = mac.split(whereSeparator: { $0 == ":" || $0 == "-" }).compactMap { UInt8($0, radix: 16) }
        guard bytes.count == 6 else { return mac }
        var value = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } &+ UInt64(n)
        var out: [String] = []
        for _ in 0..<6 { out.insert(String(format: "%02X", UInt8(value & 0xFF)), at: 0); value >>= 8 }
        return out.joined(separator: ":")
    }
}

/// One client connection: frames in, answers out, in order. Hangs up on a protocol error.
final class KasaSimHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let simulator: KasaSimulator
    private var decoder = KasaFrameDecoder()

    init(simulator: KasaSimulator) { self.simulator = simulator }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        decoder.append(unwrapInboundIn(data).readableBytesView)
        do {
            while let payload = try decoder.next() {
                guard let reply = simulator.answer(payload) else {
                    context.close(promise: nil)
                    return
                }
                let frame = KasaCipher.frame(reply)
                var buffer = context.channel.allocator.buffer(capacity: frame.count)
                buffer.writeBytes(frame)
                context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            }
        } catch {
            context.close(promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
