import Foundation
import HubApp
import HubBench
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT

/// Home Assistant as the household bench's peer: `hass -c <dir>` with a configuration this writes —
/// the recorder with its default settings (SQLite in `<dir>/home-assistant_v2.db`), the MQTT
/// integration as a config entry on the bench's broker (discovery on, so it sees the hub's plugs,
/// sensors and animals as Home Assistant does in a household), the HTTP listener on a free
/// loopback port — and its counters read like the hub's.
final class HomeAssistantPeer: @unchecked Sendable {
    let process: Process
    let device: BlockDevice?

    private init(process: Process, device: BlockDevice?) {
        self.process = process
        self.device = device
    }

    /// Writes the configuration into `configDirectory` and starts `hass` on it.
    static func start(hass: String, configDirectory: String, brokerPort: Int, device: BlockDevice?) throws -> HomeAssistantPeer {
        guard FileManager.default.isExecutableFile(atPath: hass) else {
            throw HubError.failed("no Home Assistant at \(hass): install it with scripts/peer-home-assistant")
        }
        let httpPort = try freeLoopbackPort()
        try """
        homeassistant:
          name: Household peer
          latitude: 38.7
          longitude: -9.1
          elevation: 0
          unit_system: metric
          time_zone: UTC
          currency: EUR
          country: PT
        http:
          server_host: 127.0.0.1
          server_port: \(httpPort)
        recorder:

        """.write(toFile: configDirectory + "/configuration.yaml", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: configDirectory + "/.storage", withIntermediateDirectories: true)
        try #"""
        {"version":1,"minor_version":1,"key":"core.config_entries","data":{"entries":[
         {"entry_id":"0123456789abcdef0123456789abcdef","version":1,"minor_version":1,"domain":"mqtt","title":"127.0.0.1",
          "data":{"broker":"127.0.0.1","port":\#(brokerPort),"discovery":true},"options":{},
          "pref_disable_new_entities":false,"pref_disable_polling":false,"source":"user","unique_id":null,"disabled_by":null}]}}
        """#.write(toFile: configDirectory + "/.storage/core.config_entries", atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: hass)
        p.arguments = ["-c", configDirectory]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return HomeAssistantPeer(process: p, device: device)
    }

    /// Its counters (events: none counted here; Home Assistant's recorder keeps states, not events of the hub's kind).
    func counters() throws -> HouseholdCounters {
        let pid = process.processIdentifier
        return HouseholdCounters(writeBytes: try writeBytes(pid), deviceBytes: try? device?.bytesWritten(), cpuSeconds: try cpuSeconds(pid))
    }

    /// SIGTERM, and SIGKILL if it has not stopped within 30 s (Home Assistant's shutdown waits for its integrations).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline { usleep(100_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
