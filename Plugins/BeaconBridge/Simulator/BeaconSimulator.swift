import Foundation
import MQTT
import Synchronization

/// Simulates animals wearing iBeacon collars walking between rooms, and one BLE bridge node per room
/// (ESPresense, OpenMQTTGateway or Theengs Gateway) publishing what it hears to a real MQTT broker.
///
/// - Beacon uuids come from `seed` (SplitMix64), so a run is reproducible; major = minor = 0, so the
///   identity the bridge reports is the plain uuid (`beaconIds`).
/// - Room j's node is named `room-<j+1>` (the ESPresense room / the gateway name); with format `.all`
///   room j uses ESPresense, OpenMQTTGateway, Theengs for j % 3 = 0, 1, 2.
/// - Every node hears every beacon, `rate` messages/s each. The animal is 1.5 m from its room's node
///   and 3 + 4·|j - room| m from the others; rssi = P - 10 n log10(d) + N(0, noiseDb) with occasional
///   ±12 dB spikes (2 %); the payload distance is derived from the noisy rssi, as the bridges do.
public final class BeaconSimulator: Sendable {
    /// Which bridge's payloads the room nodes publish; `all` rotates them by room.
    public enum Format: String, Sendable, CaseIterable {
        /// ESPresense, OpenMQTTGateway, Theengs Gateway, or one of each by room.
        case espresense, openmqttgateway, theengs, all
    }

    /// The broker, the herd, the rooms and the radio model.
    public struct Options: Sendable {
        /// The broker's host.
        public var host = "127.0.0.1"
        /// The broker's port.
        public var port = 1883
        /// How many collared animals (at least 1).
        public var animals = 3
        /// How many rooms, each with one node (at least 1).
        public var rooms = 3
        /// Messages per second per beacon per room.
        public var rate = 2.0
        /// Which bridge's payloads the nodes publish.
        public var format = Format.all
        /// The seed of the beacon ids and of the noise: the same seed, the same run.
        public var seed: UInt64 = 1
        /// Each animal changes room every this many seconds (0 = only when `place` says so).
        public var moveEverySeconds = 30.0
        /// Standard deviation of the rssi noise (dB).
        public var noiseDb = 2.0
        /// The rssi at 1 m, dBm (the iBeacon's calibrated power).
        public var measuredPower = -59.0
        /// The path-loss exponent of the log-distance model.
        public var pathLoss = 2.7
        /// The ESPresense topic prefix (`<prefix>/devices/<id>/<room>`).
        public var espresensePrefix = "espresense"
        /// The OpenMQTTGateway / Theengs topic prefix (`<prefix>/<room>/BTtoMQTT/<mac>`).
        public var gatewayPrefix = "home"
        /// The QoS of the node messages.
        public var qos = 1

        /// Three animals in three rooms, two messages per second each, all three formats.
        public init() {}
    }

    /// The options, clamped (at least one animal and room, a rate from 0.01 to 1000).
    public let options: Options
    /// The identities the bridge reports (= `uuids`, since major = minor = 0): the uuids to admit.
    public let beaconIds: [String]
    /// The raw iBeacon uuids (32 lowercase hex digits).
    public let uuids: [String]
    /// The collar MACs (`AA:BB:CC:DD:EE:FF`).
    public let macs: [String]
    /// The room names, `room-1` ... `room-<rooms>`.
    public let roomNames: [String]

    private struct State {
        var rng: SplitMix64
        var placement: [Int?]
        var nextMove: [ContinuousClock.Instant]
        var sent = 0
        var failed = 0
    }
    private let state: Mutex<State>
    private let running = Mutex<(client: MQTTClient?, task: Task<Void, Never>?)>((nil, nil))

    /// A simulator with beacon ids derived from `options.seed`; publishes nothing until `start()`.
    public init(options: Options) {
        var o = options
        o.animals = max(1, o.animals)
        o.rooms = max(1, o.rooms)
        o.rate = min(max(o.rate, 0.01), 1000)
        self.options = o
        var rng = SplitMix64(seed: o.seed)
        var uuids: [String] = [], macs: [String] = []
        for _ in 0..<o.animals {
            let a = rng.next(), b = rng.next()
            uuids.append(String(format: "%016llx%016llx", a, b))
            let m = (rng.next() & 0xFFFF_FFFF_FFFF) | 0xC000_0000_0000  // a static random address
            macs.append((0..<6).reversed().map { String(format: "%02X", (m >> (8 * UInt64($0))) & 0xFF) }.joined(separator: ":"))
        }
        self.uuids = uuids
        self.beaconIds = uuids
        self.macs = macs
        roomNames = (0..<o.rooms).map { "room-\($0 + 1)" }
        let placement: [Int?] = (0..<o.animals).map { $0 % o.rooms }
        let now = ContinuousClock.now
        let moves = (0..<o.animals).map { i in
            now + .milliseconds(Int64(max(o.moveEverySeconds, 0) * 1000 * (1 + Double(i) / Double(o.animals))))
        }
        state = Mutex(State(rng: rng, placement: placement, nextMove: moves))
    }

    /// The node format of room `index`.
    public func format(ofRoom index: Int) -> Format {
        switch options.format {
        case .all: return [Format.espresense, .openmqttgateway, .theengs][index % 3]
        default: return options.format
        }
    }

    /// Puts an animal in a room (0-based), or out of every node's range with nil.
    public func place(animal index: Int, room: Int?) {
        state.withLock { s in
            guard s.placement.indices.contains(index) else { return }
            s.placement[index] = room.map { min(max($0, 0), options.rooms - 1) }
        }
    }

    /// The room animal `index` is in now; nil when out of every room or no such animal.
    public func room(ofAnimal index: Int) -> Int? { state.withLock { $0.placement.indices.contains(index) ? $0.placement[index] : nil } }

    /// Messages published since start.
    public var messagesSent: Int { state.withLock { $0.sent } }

    /// Connects to the broker and starts publishing.
    /// - Throws: `MQTTError` when the client cannot be made.
    public func start() async throws {
        let client = try MQTTClient(
            options: MQTTOptions(
                host: options.host, port: options.port,
                clientId: "beacon-sim-\(options.seed)-\(UUID().uuidString.prefix(6))",
                cleanSession: true))
        try client.start()
        do {
            try await client.waitUntilConnected(timeout: .seconds(10))
        } catch {
            await client.stop()
            throw error
        }
        let task = Task { [weak self] in
            guard let self else { return }
            await self.run(client)
        }
        running.withLock { $0 = (client, task) }
    }

    /// Stops publishing and disconnects; waits for the publishing task to end.
    public func stop() async {
        let (client, task) = running.withLock { r in
            defer { r = (nil, nil) }; return r
        }
        task?.cancel()
        await task?.value
        // A last message, acknowledged before the client disconnects: everything published before it
        // has reached the broker by then (a client sends in order), so nothing queued is lost.
        await client?.stop(finalMessage: (topic: "beacon-simulator/status", payload: Array("stopped".utf8), retain: false))
    }

    private func run(_ client: MQTTClient) async {
        let o = options
        let period = Duration.seconds(1 / o.rate)
        var rng = state.withLock { s in
            defer { s.rng = SplitMix64(seed: s.rng.next()) }; return s.rng
        }
        let start = ContinuousClock.now
        // Staggered first sends so that the messages are spread over the period.
        var next: [[ContinuousClock.Instant]] = (0..<o.animals).map { _ in
            (0..<o.rooms).map { _ in start + period * rng.unit() }
        }
        while !Task.isCancelled {
            let now = ContinuousClock.now
            let placement = state.withLock { s -> [Int?] in
                if o.moveEverySeconds > 0 && o.rooms > 1 {
                    for i in s.nextMove.indices where s.nextMove[i] <= now {
                        if let r = s.placement[i] { s.placement[i] = (r + 1 + Int(s.rng.next() % UInt64(o.rooms - 1))) % o.rooms }
                        s.nextMove[i] = now + .milliseconds(Int64(o.moveEverySeconds * 1000))
                    }
                }
                return s.placement
            }
            var sent = 0, failed = 0
            for a in 0..<o.animals {
                for r in 0..<o.rooms where next[a][r] <= now {
                    // Far behind (a busy machine): skip rather than burst.
                    next[a][r] = now - next[a][r] > .seconds(1) ? now + period : next[a][r] + period
                    guard let room = placement[a] else { continue }
                    let (topic, payload) = message(animal: a, room: r, animalRoom: room, rng: &rng)
                    do {
                        try client.publish(topic, Array(payload.utf8), qos: o.qos)
                        sent += 1
                    } catch {
                        failed += 1
                    }
                }
            }
            if sent + failed > 0 {
                state.withLock {
                    $0.sent += sent; $0.failed += failed
                }
            }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private func message(animal a: Int, room r: Int, animalRoom: Int, rng: inout SplitMix64) -> (String, String) {
        let o = options
        let trueDistance = r == animalRoom ? 1.5 : 3 + 4 * Double(abs(r - animalRoom))
        var rssi = o.measuredPower - 10 * o.pathLoss * log10(trueDistance) + o.noiseDb * rng.gaussian()
        if rng.unit() < 0.02 { rssi += rng.unit() < 0.5 ? 12 : -12 }
        rssi = min(max(rssi, -120), -20)
        let distance = pow(10, (o.measuredPower - rssi) / (10 * o.pathLoss))
        let uuid = uuids[a], mac = macs[a], room = roomNames[r]
        let rssiText = String(format: "%.2f", rssi), dText = String(format: "%.3f", distance)
        switch format(ofRoom: r) {
        case .espresense, .all:
            let id = "iBeacon:\(Self.dashed(uuid))-0-0"
            let payload =
                #"{"mac":"\#(mac.lowercased().replacingOccurrences(of: ":", with: ""))","id":"\#(id)","idType":1,"rssi@1m":\#(Int(o.measuredPower)),"rssi":\#(rssiText),"rxAdj":0,"rssiVar":2.1,"distance":\#(dText),"var":0.1,"int":500}"#
            return ("\(o.espresensePrefix)/devices/\(id)/\(room)", payload)
        case .openmqttgateway:
            let payload =
                #"{"id":"\#(mac)","mac_type":1,"rssi":\#(Int(rssi.rounded())),"distance":\#(dText),"brand":"GENERIC","model":"iBeacon","model_id":"IBEACON","mfid":"4c00","uuid":"\#(uuid)","major":0,"minor":0,"txpower":\#(Int(o.measuredPower))}"#
            return ("\(o.gatewayPrefix)/\(room)/BTtoMQTT/\(mac.replacingOccurrences(of: ":", with: ""))", payload)
        case .theengs:
            let payload =
                #"{"id":"\#(mac)","rssi":\#(Int(rssi.rounded())),"brand":"GENERIC","model":"iBeacon","model_id":"IBEACON","mfid":"4c00","uuid":"\#(uuid)","major":0,"minor":0,"txpower":\#(Int(o.measuredPower)),"distance":\#(dText)}"#
            return ("\(o.gatewayPrefix)/\(room)/BTtoMQTT/\(mac.replacingOccurrences(of: ":", with: ""))", payload)
        }
    }

    /// 8-4-4-4-12.
    static func dashed(_ uuid: String) -> String {
        let c = Array(uuid)
        guard c.count == 32 else { return uuid }
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(c[$0]) }.joined(separator: "-")
    }

    /// Runs until the task is cancelled (`hub sim beacons --animals N --rooms M [--port] [--rate]`),
    /// printing the beacon uuids to admit.
    public static func runForever(options: Options, print output: @Sendable (String) -> Void = { Swift.print($0) }) async throws {
        let simulator = BeaconSimulator(options: options)
        try await simulator.start()
        let o = simulator.options
        output(
            "beacon simulator: \(o.animals) animal(s), \(o.rooms) room(s) (\(simulator.roomNames.enumerated().map { "\($1)=\(simulator.format(ofRoom: $0).rawValue)" }.joined(separator: ", "))), \(o.rate) msg/s per beacon per room, publishing to \(o.host):\(o.port)"
        )
        output("beacon uuids to admit:")
        for (i, uuid) in simulator.uuids.enumerated() {
            output("  animal \(i + 1): \(uuid)  (mac \(simulator.macs[i]), starts in \(simulator.roomNames[i % o.rooms]))")
        }
        do {
            while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
        } catch {}
        await simulator.stop()
    }
}

/// Deterministic pseudo-random numbers (SplitMix64).
struct SplitMix64: Sendable {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
    /// Standard normal (Box-Muller).
    mutating func gaussian() -> Double {
        let u = max(unit(), 1e-12), v = unit()
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
}
