import BeaconSimulator
import CLISupport
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import Kasa
import KasaSimulator
import PowerPlug
import PowerPlugSimulator
import ShellySimulator
import TasmotaSimulator

/// `hub run --demo` with no devices configured: two simulated TCP power plugs and one simulated
/// Kasa HS110 in this process, and — on the hub's broker — a simulated Tasmota plug, a Shelly Plus
/// (Gen2) and three animals' beacon collars walking between three rooms. The plugs are registered
/// as devices and two animals admitted; the pump gets an activation every other minute and the
/// kettle's load is switched on, so switching, activations, energy and animals moving between rooms
/// show on the MQTT surface within a minute.
struct Demo {
    static let pumpPort = 23001, heaterPort = 23002, kasaPort = 29999
    static let tasmotaTopic = "demo_tasmota"
    static let shellyId = "shellyplus1pm-d3m0d3m0d3m0"

    let plugs: [PowerPlugSimulator]
    let kasa: KasaSimulator
    let tasmota: TasmotaSimulator?
    let shelly: ShellySimulator?
    let beacons: BeaconSimulator?

    static func devices(withMQTT: Bool) -> [HubConfig.Device] {
        devices()
            + (withMQTT
                ? [
                    HubConfig.Device(
                        id: "demo-tasmota", driver: "tasmota", name: "Desk lamp (simulated Tasmota)",
                        config: #"{"topic":"\#(tasmotaTopic)"}"#),
                    HubConfig.Device(
                        id: "demo-shelly", driver: "shelly", name: "Boiler (simulated Shelly Plus 1PM)",
                        config: #"{"id":"\#(shellyId)","gen":2}"#)
                ] : [])
    }

    static func devices() -> [HubConfig.Device] {
        [
            HubConfig.Device(
                id: "demo-pump", driver: "powerplug", name: "Lawn pump (simulated TCP plug)",
                config: #"{"host":"127.0.0.1","port":\#(pumpPort)}"#),
            HubConfig.Device(
                id: "demo-heater", driver: "powerplug", name: "Patio heater (simulated TCP plug)",
                config: #"{"host":"127.0.0.1","port":\#(heaterPort)}"#),
            HubConfig.Device(
                id: "demo-kettle", driver: "kasa", name: "Kettle (simulated Kasa HS110)",
                config: #"{"host":"127.0.0.1","port":\#(kasaPort),"poll_interval":2}"#)
        ]
    }

    /// Starts the simulators; their state files live in `<data-dir>/demo`. The MQTT ones connect to
    /// the hub's broker (when the hub has MQTT).
    static func start(dataDirectory: String, mqtt: HubConfig.MQTT?) async throws -> Demo {
        let dir = dataDirectory + "/demo"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var plugs: [PowerPlugSimulator] = []
        for port in [pumpPort, heaterPort] {
            var options = PowerPlugSimulator.Options()
            options.port = port
            options.stateFile = "\(dir)/powerplug-\(port).state"
            options.checkInterval = .seconds(5)
            let plug = PowerPlugSimulator(options: options)
            do { _ = try await plug.start() } catch {
                throw HubError.usage(
                    "demo: cannot listen on 127.0.0.1:\(port) for a simulated power plug (\(error)); is another demo hub running?")
            }
            plugs.append(plug)
        }
        var kasaOptions = KasaSimulator.Options()
        kasaOptions.port = kasaPort
        kasaOptions.alias = "Kettle"
        kasaOptions.loadWatts = 1800
        let kasa = KasaSimulator(options: kasaOptions)
        do { _ = try await kasa.start() } catch {
            throw HubError.usage(
                "demo: cannot listen on 127.0.0.1:\(kasaPort) for a simulated Kasa plug (\(error)); is another demo hub running?")
        }
        guard let mqtt else { return Demo(plugs: plugs, kasa: kasa, tasmota: nil, shelly: nil, beacons: nil) }
        let tasmota = TasmotaSimulator(
            options: TasmotaSimulator.Options(
                host: mqtt.host, port: mqtt.port, topic: tasmotaTopic,
                telePeriod: 10, loadWatts: 40))
        let shelly = ShellySimulator(
            options: ShellySimulator.Options(
                host: mqtt.host, port: mqtt.port, gen: 2, id: shellyId,
                loadWatts: 2000, statusPeriod: 10))
        var beaconOptions = BeaconSimulator.Options()
        beaconOptions.host = mqtt.host
        beaconOptions.port = mqtt.port
        beaconOptions.moveEverySeconds = 20
        let beacons = BeaconSimulator(options: beaconOptions)
        // The broker may still be starting: the simulators' own clients retry, so failures here are not fatal.
        try? await tasmota.start()
        try? await shelly.start()
        try? await beacons.start()
        return Demo(plugs: plugs, kasa: kasa, tasmota: tasmota, shelly: shelly, beacons: beacons)
    }

    /// Gives the demo something to show: the pump gets a 1-minute activation every 2 minutes (run by
    /// the plug itself), the kettle is switched on (so its meter counts).
    func kick(_ service: HubService) async {
        let note = { (line: String) in Console.note("hub: " + line) }
        let now = currentMicros()
        if await service.hub.state.activations["demo-pump"].isEmpty {
            let nextMinute = (now / 60_000_000 + 1) * 60
            await service.commands.execute(
                .setActivation(
                    device: "demo-pump", op: .add, name: "demo", start: nextMinute,
                    lengthMinutes: 1, periodMinutes: 2),
                actor: "demo", now: now)
            note("demo: demo-pump runs 1 minute in every 2 from \(ISO8601.format(seconds: nextMinute)) (its own scheduler)")
        }
        if let beacons {
            for (i, name) in ["Rex", "Tom"].enumerated() where i < beacons.beaconIds.count {
                let id = "demo-" + name.lowercased()
                guard await service.hub.state.animals[id]?.isAdmitted != true else { continue }
                let admission = Admission(
                    animal: id, name: name, weightKg: i == 0 ? 23.5 : 4.2, species: i == 0 ? "dog" : "cat",
                    ownerName: "Demo Owner", motive: "demo", beacon: beacons.beaconIds[i])
                await service.commands.execute(.admitAnimal(admission), actor: "demo", now: now)
            }
            note(
                "demo: demo-rex and demo-tom wear beacons walking between \(beacons.roomNames.joined(separator: ", ")); "
                    + "a third beacon nobody wears shows in request/beacons/unknown")
        }
        // Give the kettle's driver its first poll before switching it.
        for _ in 0..<50 where await service.hub.device("demo-kettle")?.available != true {
            try? await Task.sleep(for: .milliseconds(200))
        }
        if await service.hub.device("demo-kettle")?.switchState != .on {
            await service.commands.execute(.switchDevice(id: "demo-kettle", target: .on), actor: "demo", now: now)
            note("demo: demo-kettle switched on; its energy meter counts 1800 W")
        }
    }

    func stop() async {
        for plug in plugs { await plug.stop() }
        await kasa.stop()
        await tasmota?.stop()
        await shelly?.stop()
        await beacons?.stop()
    }
}
