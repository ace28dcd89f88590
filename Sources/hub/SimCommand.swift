import ArgumentParser
import BeaconSimulator
import CLISupport
import Foundation
import Kasa
import KasaSimulator
import PowerPlug
import PowerPlugSimulator
import ShellySimulator
import TasmotaSimulator
import Zigbee2MQTTSimulator

/// `hub sim ...`: device simulators, real TCP servers that speak each device's protocol byte for byte.
struct SimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "Run device simulators (real TCP servers speaking each device's protocol) until interrupted.",
        subcommands: [PowerPlugSim.self, KasaSim.self, TasmotaSim.self, ShellySim.self, Zigbee2MQTTSim.self, BeaconSim.self])
}

struct PowerPlugSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "powerplug",
        abstract: "Simulate the seed's TCP Wi-Fi power plug: status pushes, activations on 'SD card', its own scheduler.")

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "TCP port (the plug's is 230, which needs root); with --count, the first of consecutive ports.") var port = 230
    @Option(help: "Activation slots.") var slots = 10
    @Option(help: "File keeping the activations and mode across restarts (with --count N > 1, one file per plug: F.0 ... F.<N-1>).")
    var stateFile: String?
    @Option(help: "How many plugs to simulate.") var count = 1
    @Option(help: "Seconds between the plug's scheduler checks.") var checkInterval = 60
    @Flag(
        help:
            "Pause the plug's own scheduler while a client is connected, as the seed's sketch does (the hub stays connected, so activations would not run)."
    )
    var pauseWhileConnected = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        guard (1...255).contains(slots) else { throw ValidationError("--slots must be 1 to 255") }
        guard (1...5000).contains(count), port == 0 || port + count - 1 <= 65535 else {
            throw ValidationError("--count must be 1 to 5000 and fit the port range")
        }
        guard (1...3600).contains(checkInterval) else { throw ValidationError("--check-interval must be 1 to 3600 seconds") }
    }

    func run() async throws {
        var options = PowerPlugSimulator.Options()
        options.host = host
        options.port = port
        options.slots = slots
        options.stateFile = stateFile
        options.checkInterval = .seconds(checkInterval)
        options.pauseSchedulerWhileConnected = pauseWhileConnected
        let settings = options, count = self.count
        try await serveUntilTerminated { try await PowerPlugSimulator.runForever(options: settings, count: count, print: printLine) }
    }
}

struct KasaSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kasa",
        abstract:
            "Simulate TP-Link Kasa HS110 plugs or HS300/KP303 power strips on port 9999 (XOR framing; system, time, emeter, schedule, ... modules)."
    )

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "TCP port; with --count, the first of consecutive ports.") var port = 9999
    @Option(help: "Emeter field style: old (A, V, W, kWh) or new (mA, mV, mW, Wh).") var firmware = "new"
    @Option(help: "How many plugs to simulate.") var count = 1
    @Option(help: "Watts drawn by the simulated load while the relay is on.") var load = 60.0
    @Option(help: "The device: HS110 (a plug with a meter), HS300 (a strip of six metered outlets) or KP303 (three outlets).")
    var model = "HS110"
    @Option(
        name: .customLong("klap-credentials"),
        help:
            #"Speak KLAP over HTTP on --port instead of port 9999's protocol, accepting the login in this JSON file ({"username": ..., "password": ...})."#
    )
    var klapCredentials: String?

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        if let klapCredentials {
            do { _ = try KasaKLAPCredentials.read(path: klapCredentials, for: "hub sim kasa") } catch {
                throw ValidationError("--klap-credentials: \(error)")
            }
        }
        guard KasaSimulator.Firmware(rawValue: firmware) != nil else { throw ValidationError("--firmware must be old or new") }
        guard (1...5000).contains(count), port == 0 || port + count - 1 <= 65535 else {
            throw ValidationError("--count must be 1 to 5000 and fit the port range")
        }
        guard load >= 0, load <= 4000 else { throw ValidationError("--load must be 0 to 4000 W") }
        guard KasaSimulator.Model(rawValue: model.uppercased()) != nil else {
            throw ValidationError("--model must be HS110, HS300 or KP303")
        }
    }

    func run() async throws {
        var options = KasaSimulator.Options()
        options.host = host
        options.port = port
        options.firmware = KasaSimulator.Firmware(rawValue: firmware)!
        options.loadWatts = load
        options.model = KasaSimulator.Model(rawValue: model.uppercased())!
        if options.model != .hs110 { options.alias = "Kasa Strip" }
        options.klap = try klapCredentials.map { try KasaKLAPCredentials.read(path: $0, for: "hub sim kasa") }
        let settings = options, count = self.count
        try await serveUntilTerminated { try await KasaSimulator.runForever(options: settings, count: count, print: printLine) }
    }
}

/// One line on standard output, written at once (a pipe would otherwise hold `print`'s lines back).
@Sendable func printLine(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// Runs simulators until SIGINT/SIGTERM, then stops them cleanly.
func serveUntilTerminated(_ serve: @escaping @Sendable () async throws -> Void) async throws {
    try await Console.guarded {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await serve() }
            group.addTask { await waitForTermination() }
            try await group.next()
            group.cancelAll()
        }
    }
}

struct ShellySim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "shelly",
        abstract: "Simulate Shelly plugs on an MQTT broker: Gen1 (shellies/<id>/relay/0...) or Gen2 (RPC, NotifyStatus).")

    @Option(help: "Broker host.") var host = "127.0.0.1"
    @Option(help: "Broker port.") var port = 1883
    @Option(help: "Generation: 1, or 2 (Gen2/Gen3 RPC).") var gen = 2
    @Option(help: "Device id (default: shellyplug-s-7AB1C2 for Gen1, shellyplus1pm-441793ab3fb4 for Gen2).") var id: String?
    @Option(help: "How many plugs (ids count up).") var count = 1
    @Option(help: "Seconds between status publishes.") var statusPeriod = 10.0
    @Option(help: "Watts drawn while on.") var load = 60.0
    @Option(
        help:
            "Gen2 model: plus1pm (switch:0 with a meter), plus1 (no meter), pmmini (pm1:0, a meter without a relay), pro4pm (switch:0 to switch:3)."
    )
    var model = "plus1pm"
    @Flag(
        inversion: .prefixedNo,
        help:
            "Gen2: the status_ntf option, full statuses on <id>/status/<component> beside the NotifyStatus deltas (devices ship with it off)."
    )
    var statusNtf = true

    func validate() throws {
        guard gen == 1 || gen == 2 || gen == 3 else { throw ValidationError("--gen must be 1 or 2 (3 speaks Gen2)") }
        guard ShellySimulator.Options.Model(rawValue: model) != nil else {
            let models = ShellySimulator.Options.Model.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--model must be one of \(models)")
        }
        guard (1...65535).contains(port) else { throw ValidationError("--port must be 1 to 65535") }
        guard (1...5000).contains(count) else { throw ValidationError("--count must be 1 to 5000") }
        guard statusPeriod >= 0.1 else { throw ValidationError("--status-period must be at least 0.1 s") }
    }

    func run() async throws {
        let options = ShellySimulator.Options(
            host: host, port: port, gen: gen == 1 ? 1 : 2, id: id, loadWatts: load,
            statusPeriod: statusPeriod, model: ShellySimulator.Options.Model(rawValue: model) ?? .plus1pm,
            statusNotifications: statusNtf)
        let count = self.count
        try await serveUntilTerminated { try await ShellySimulator.runForever(options: options, count: count, print: printLine) }
    }
}

struct Zigbee2MQTTSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "zigbee2mqtt",
        abstract: "Simulate a Zigbee2MQTT bridge on an MQTT broker: a metered plug, a plain plug and a two-gang switch.")

    @Option(help: "Broker host.") var host = "127.0.0.1"
    @Option(help: "Broker port.") var port = 1883
    @Option(help: "Zigbee2MQTT's base topic.") var baseTopic = "zigbee2mqtt"
    @Option(help: "Seconds between the metered plug's state publishes.") var statusPeriod = 10.0
    @Option(help: "Watts the metered plug's load draws while on.") var load = 60.0
    @Flag(help: "Availability as the bare words online/offline (Zigbee2MQTT's legacy_availability_payload).")
    var legacyAvailability = false

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--port must be 1 to 65535") }
        guard statusPeriod >= 0.1 else { throw ValidationError("--status-period must be at least 0.1 s") }
        guard (0...4000).contains(load) else { throw ValidationError("--load must be 0 to 4000 W") }
        let levels = baseTopic.split(separator: "/", omittingEmptySubsequences: false)
        guard !levels.contains(where: \.isEmpty), !baseTopic.contains("+"), !baseTopic.contains("#") else {
            throw ValidationError("--base-topic must have no empty levels, + or #")
        }
    }

    func run() async throws {
        let options = Zigbee2MQTTSimulator.Options(
            host: host, port: port, baseTopic: baseTopic, statusPeriod: statusPeriod, loadWatts: load,
            legacyAvailability: legacyAvailability)
        try await serveUntilTerminated { try await Zigbee2MQTTSimulator.runForever(options: options, print: printLine) }
    }
}

struct BeaconSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacons",
        abstract:
            "Simulate animals wearing BLE beacons walking between rooms, as ESPresense / OpenMQTTGateway / Theengs bridges report them.")

    @Option(help: "Broker host.") var host = "127.0.0.1"
    @Option(help: "Broker port.") var port = 1883
    @Option(help: "Animals (beacons).") var animals = 3
    @Option(help: "Rooms (one bridge node each).") var rooms = 3
    @Option(help: "Messages per second per beacon per room.") var rate = 2.0
    @Option(help: "Seconds between an animal's moves (0: never).") var moveEvery = 30.0

    func validate() throws {
        guard (1...10_000).contains(animals), (1...100).contains(rooms) else {
            throw ValidationError("--animals 1 to 10000, --rooms 1 to 100")
        }
        guard rate > 0, rate <= 50 else { throw ValidationError("--rate must be above 0 and at most 50") }
    }

    func run() async throws {
        var options = BeaconSimulator.Options()
        options.host = host
        options.port = port
        options.animals = animals
        options.rooms = rooms
        options.rate = rate
        options.moveEverySeconds = moveEvery
        let settings = options
        try await serveUntilTerminated { try await BeaconSimulator.runForever(options: settings, print: printLine) }
    }
}

struct TasmotaSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tasmota",
        abstract: "Simulate Tasmota plugs on an MQTT broker (cmnd/stat/tele topics, LWT, ENERGY telemetry).")

    @Option(help: "Broker host.") var host = "127.0.0.1"
    @Option(help: "Broker port.") var port = 1883
    @Option(help: "The device's %topic% (with --count N: <topic>_1 ... <topic>_N).") var topic = "tasmota_A1B2C3"
    @Option(help: "How many plugs.") var count = 1
    @Option(help: "Relays per plug.") var relays = 1
    @Option(help: "Seconds between STATE/SENSOR telemetry (a real Tasmota: 300).") var telePeriod = 10.0
    @Option(help: "Watts drawn per relay while on.") var load = 60.0
    @Option(help: "The FullTopic (%prefix%, %topic%, %hostname%, %id%), e.g. %topic%/%prefix%/.") var fullTopic = "%prefix%/%topic%/"
    @Option(help: "StateText1..4, comma-separated: the words for off, on, toggle, hold.") var stateText = "OFF,ON,TOGGLE,HOLD"
    @Flag(name: .customLong("set-option-129"), help: "SetOption129 1: Total, Yesterday and Today per relay's meter channel, not summed.")
    var setOption129 = false
    @Flag(help: "Publish no tasmota/discovery/<MAC>/config (firmware before 9).") var noDiscovery = false

    func validate() throws {
        guard (1...65535).contains(port) else { throw ValidationError("--port must be 1 to 65535") }
        guard (1...5000).contains(count), (1...8).contains(relays) else { throw ValidationError("--count 1 to 5000, --relays 1 to 8") }
        guard telePeriod >= 0.1 else { throw ValidationError("--tele-period must be at least 0.1 s") }
        guard fullTopic.contains("%prefix%") || fullTopic.contains("%topic%"), !fullTopic.contains("+") else {
            throw ValidationError("--full-topic must contain %prefix% or %topic% and no '+'")
        }
        let words = stateText.split(separator: ",", omittingEmptySubsequences: false)
        guard words.count == 4, words.allSatisfy({ !$0.isEmpty && $0.count <= 10 }), words[0] != words[1] else {
            throw ValidationError("--state-text takes 4 comma-separated words of 1 to 10 characters, off and on different")
        }
    }

    func run() async throws {
        var options = TasmotaSimulator.Options()
        options.host = host
        options.port = port
        options.topic = topic
        options.relays = relays
        options.telePeriod = telePeriod
        options.loadWatts = load
        options.fullTopic = fullTopic
        options.stateText = stateText.split(separator: ",").map(String.init)
        options.setOption129 = setOption129
        options.publishDiscovery = !noDiscovery
        let settings = options, count = self.count
        try await serveUntilTerminated { try await TasmotaSimulator.runForever(options: settings, count: count, print: printLine) }
    }
}

/// Suspends until SIGINT or SIGTERM.
func waitForTermination() async {
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let (signals, continuation) = AsyncStream<Int32>.makeStream()
    let sources = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler { continuation.yield(sig) }
        source.resume()
        return source
    }
    for await _ in signals { break }
    sources.forEach { $0.cancel() }
}
