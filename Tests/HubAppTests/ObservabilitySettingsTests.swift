import Foundation
import HubDomain
import HubMetrics
import Logging
import Prometheus
import Synchronization
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// `--http` / `http.listen`, `--log-level` / `log_level`, and what the log level lets through.
struct ObservabilitySettingsTests {
    @Test(arguments: [
        ("127.0.0.1:9480", "127.0.0.1", 9480),
        ("0.0.0.0:80", "0.0.0.0", 80),
        ("[::1]:9480", "::1", 9480),
        ("localhost:0", "localhost", 0)
    ])
    func httpAddressesRead(_ text: String, _ host: String, _ port: Int) throws {
        let settings = try HTTPSettings(parsing: text)
        #expect(settings.host == host && settings.port == port)
        #expect(settings.description == text)
    }

    @Test(arguments: [
        ("9480", "expected ADDRESS:PORT"),
        (":9480", "the address before the port is empty"),
        ("127.0.0.1:http", "the port must be a number from 0 to 65535, not \"http\""),
        ("127.0.0.1:65536", "not \"65536\""),
        ("::1:9480", "write an IPv6 address in brackets")
    ])
    func badHTTPAddressesAreRefusedSayingWhy(_ text: String, _ message: String) {
        #expect {
            try HTTPSettings(parsing: text)
        } throws: { error in
            "\(error)".contains(message) && "\(error)".contains("\"\(text)\"")
        }
    }

    @Test func configFileReadsLogLevelAndHTTP() throws {
        let config = try HubConfig.parse(try JSONValue.parse(Array(#"{"log_level":"debug","http":{"listen":"127.0.0.1:9480"}}"#.utf8)))
        #expect(config.logLevel == .debug)
        #expect(config.http == HTTPSettings(host: "127.0.0.1", port: 9480))
        #expect(HubConfig().logLevel == .info && HubConfig().http == HTTPSettings(host: "127.0.0.1", port: 8080))
        #expect(try HubConfig.parse(try JSONValue.parse(Array(#"{"http":false}"#.utf8))).http == nil)
    }

    @Test(arguments: [
        ("127.0.0.1", true), ("127.8.9.10", true), ("::1", true), ("localhost", true),
        ("0.0.0.0", false), ("::", false), ("192.168.1.20", false), ("127.0.0.1.example", false)
    ])
    func loopbackBindsAreTheOnesWithoutACredential(_ host: String, _ loopback: Bool) {
        #expect(HTTPSettings(host: host, port: 8080).isLoopback == loopback)
    }

    @Test(arguments: [
        (#"{"log_level":"loud"}"#, #"log_level"#, #"not "loud""#),
        (#"{"http":{"listen":"9480"}}"#, "http.listen", "expected ADDRESS:PORT"),
        (#"{"http":{"port":9480}}"#, "port", "listen"),
        (#"{"http":true}"#, "http", "false (no HTTP listener)")
    ])
    func badObservabilityConfigIsRefusedNamingTheKey(_ json: String, _ key: String, _ detail: String) {
        #expect {
            try HubConfig.parse(try JSONValue.parse(Array(json.utf8)))
        } throws: { error in
            "\(error)".contains(key) && "\(error)".contains(detail)
        }
    }

    @Test func debugLevelShowsEachCommandAndInfoDoesNot() async throws {
        for (level, expected) in [(Logger.Level.debug, true), (.info, false)] {
            let lines = Mutex<[String]>([])
            var logger = Logger(label: "test") { _ in LineLogHandler(level: level) { line in lines.withLock { $0.append(line) } } }
            logger.logLevel = level
            let hub = try await Hub(paths: HubPaths(dataDirectory: temporaryDirectory()))
            let commands = CommandService(hub: hub, catalog: DriverCatalog([]), confirmTimeout: .zero, logger: logger)
            await commands.execute(.switchDevice(id: "ghost", target: .on), actor: "test")
            let logged = lines.withLock { $0 }
            #expect(
                logged.contains { $0.hasPrefix("command ") && $0.contains("code=unknown_device") && $0.contains("outcome=refused") }
                    == expected,
                "\(level): \(logged)")
            try await hub.close()
        }
    }

    @Test func helpLinesAreAddedOnlyForTheHubsMetrics() {
        let text = "# TYPE hub_events_appended_total counter\nhub_events_appended_total 3\n# TYPE other counter\nother 1\n"
        let out = MetricCatalog.withHelp(text)
        #expect(out == "# HELP hub_events_appended_total Events appended to the log by this process.\n" + text)
        #expect(Set(MetricCatalog.entries.map(\.name)).count == MetricCatalog.entries.count)
    }

    @Test func metricsRecordedThroughAFactoryReachItsRegistryOnly() async throws {
        let registry = PrometheusCollectorRegistry()
        let metrics = HubMetrics.prometheus(registry: registry)
        metrics.answered(.refused(Rejection(code: "unknown_device", message: "x"), seq: 1, duplicate: false))
        metrics.answered(.ok(.null))
        metrics.answered(.ok(.null))
        let text = registry.emitToString()
        #expect(text.contains(#"hub_commands_total{outcome="ok"} 2"#))
        #expect(text.contains(#"hub_command_rejections_total{outcome="refused",code="unknown_device"} 1"#))
        #expect(!PrometheusCollectorRegistry().emitToString().contains("hub_commands_total"))
    }
}
