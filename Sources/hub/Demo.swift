import Foundation
import HubDomain
import HubRuntime
import Kasa
import PowerPlug

/// `hub run --demo` with no devices configured: two simulated TCP power plugs and one simulated
/// Kasa HS110 in this process, registered as devices, with an activation that switches the pump
/// every other minute and the kettle's load on, so switching, activations and energy show on the
/// MQTT surface within a minute.
struct Demo {
    static let pumpPort = 23001, heaterPort = 23002, kasaPort = 29999

    let plugs: [PowerPlugSimulator]
    let kasa: KasaSimulator

    static func devices() -> [HubConfig.Device] {
        [HubConfig.Device(id: "demo-pump", driver: "powerplug", name: "Lawn pump (simulated TCP plug)",
                          config: #"{"host":"127.0.0.1","port":\#(pumpPort)}"#),
         HubConfig.Device(id: "demo-heater", driver: "powerplug", name: "Patio heater (simulated TCP plug)",
                          config: #"{"host":"127.0.0.1","port":\#(heaterPort)}"#),
         HubConfig.Device(id: "demo-kettle", driver: "kasa", name: "Kettle (simulated Kasa HS110)",
                          config: #"{"host":"127.0.0.1","port":\#(kasaPort),"poll_interval":2}"#)]
    }

    /// Starts the simulators; their state files live in `<data-dir>/demo`.
    static func start(dataDirectory: String) async throws -> Demo {
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
                throw HubError.usage("demo: cannot listen on 127.0.0.1:\(port) for a simulated power plug (\(error)); is another demo hub running?")
            }
            plugs.append(plug)
        }
        var kasaOptions = KasaSimulator.Options()
        kasaOptions.port = kasaPort
        kasaOptions.alias = "Kettle"
        kasaOptions.loadWatts = 1800
        let kasa = KasaSimulator(options: kasaOptions)
        do { _ = try await kasa.start() } catch {
            throw HubError.usage("demo: cannot listen on 127.0.0.1:\(kasaPort) for a simulated Kasa plug (\(error)); is another demo hub running?")
        }
        return Demo(plugs: plugs, kasa: kasa)
    }

    /// Gives the demo something to show: the pump gets a 1-minute activation every 2 minutes (run by
    /// the plug itself), the kettle is switched on (so its meter counts).
    func kick(_ service: HubService, note: (String) -> Void) async {
        let now = currentMicros()
        if await service.hub.state.activations["demo-pump"].isEmpty {
            let nextMinute = (now / 60_000_000 + 1) * 60
            _ = try? await service.hub.execute(.setActivation(device: "demo-pump", op: .add, name: "demo", start: nextMinute,
                                                              lengthMinutes: 1, periodMinutes: 2),
                                               actor: "demo", now: now)
            note("demo: demo-pump runs 1 minute in every 2 from \(ISO8601.format(seconds: nextMinute)) (its own scheduler)")
        }
        // Give the kettle's driver its first poll before switching it.
        for _ in 0..<50 where await service.hub.device("demo-kettle")?.available != true {
            try? await Task.sleep(for: .milliseconds(200))
        }
        if await service.hub.device("demo-kettle")?.switchState != .on {
            _ = try? await service.hub.execute(.switchDevice(id: "demo-kettle", target: .on), actor: "demo", now: now)
            note("demo: demo-kettle switched on; its energy meter counts 1800 W")
        }
    }

    func stop() async {
        for plug in plugs { await plug.stop() }
        await kasa.stop()
    }
}
