import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import Logging
import VirtualDriver

/// `hub-bench console`: the console of a hub with 1,000 virtual devices and a year of one-minute
/// power readings for one of them, written straight into the log (the log's own speed is
/// `hub-bench log`'s), served by a hub in this process over real loopback HTTP:
/// - the Devices page (`/`) and the device page with its charts (`/devices/dev-0`), p50/p99 of
///   sequential requests, each on a new connection, the whole body read;
/// - 50 open pages (`/console/events`, server-sent events, each on its own connection and thread)
///   while commands flow at 100 a second through the command path: for each command and each page,
///   the time from the command's start to the page's frame showing the device confirmed in its new state.
struct ConsoleBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract:
            "Console: Devices and device page latency with 1,000 devices and a year of readings; live updates to 50 open pages under 100 commands/s."
    )

    @Option(help: "Virtual devices.") var devices = 1000
    @Option(help: "Days of one-minute power readings for dev-0, ending now.") var days = 365
    @Option(help: "Requests of each page.") var requests = 200
    @Option(help: "Open pages (server-sent event streams).") var pages = 50
    @Option(help: "Commands a second while the pages are open.") var rate = 100
    @Option(help: "Seconds of commands.") var seconds = 10
    @Option(help: "Working directory (emptied first).") var dir = "/tmp/hub-bench-console"

    func run() async throws {
        try await Console.guarded {
            let root = try Bench.freshDirectory(dir)
            let paths = HubPaths(dataDirectory: root + "/hub")
            let written = try await ConsoleBenchLog.write(paths: paths, devices: devices, days: days)
            Console.note("bench: wrote \(written.events) events in \(String(format: "%.1f", written.seconds)) s; starting the hub")
            let started = ContinuousClock.now
            let service = try await startHub(paths)
            let startSeconds = (ContinuousClock.now - started).inSeconds
            guard let port = await service.httpPort() else { throw HubError.failed("the HTTP listener did not start") }
            Console.note("bench: hub up on 127.0.0.1:\(port) in \(String(format: "%.1f", startSeconds)) s")
            try await settled(service.hub)
            do {
                let devicesPage = try await timePage(port, "/", mustContain: "data-device=\"dev-\(devices - 1)\"")
                let devicePage = try await timePage(port, "/devices/dev-0", mustContain: "<svg")
                let live = try await LiveUpdateBench(port: port, pages: pages, rate: rate, seconds: seconds, devices: devices)
                    .run(service.commands)
                try await service.stop()
                print(report(written: written, startSeconds: startSeconds, devicesPage: devicesPage, devicePage: devicePage, live: live))
            } catch {
                try? await service.stop()
                throw error
            }
        }
    }

    func startHub(_ paths: HubPaths) async throws -> HubService {
        var config = HubConfig()
        config.mqtt.enabled = false
        config.beacons = nil
        config.devices = (0..<devices).map { HubConfig.Device(id: "dev-\($0)", driver: "virtual", name: "Device \($0)", config: "{}") }
        var options = HubServiceOptions(paths: paths, config: config, factories: [VirtualDriverFactory()])
        options.http = HTTPSettings(host: "127.0.0.1", port: 0)
        let service = try await HubService.start(options, logger: Logger(label: "bench") { _ in SwiftLogNoOpLogHandler() })
        await service.waitUntilRunning()
        return service
    }

    /// Waits until the log took no event for a second: the drivers' start-up reports (each
    /// virtual device says it is available) are in, so they are not measured as page updates.
    func settled(_ hub: Hub) async throws {
        var last = await hub.state.lastSequence
        while true {
            try await Task.sleep(for: .seconds(1))
            let now = await hub.state.lastSequence
            if now == last { return }
            last = now
        }
    }

    struct PageTiming { var p50: Double; var p99: Double; var bytes: Int }

    /// `requests` GETs of `path` after 5 unmeasured ones; each must answer 200 with `mustContain` in its body.
    func timePage(_ port: Int, _ path: String, mustContain: String) async throws -> PageTiming {
        try await Task.detached { [requests] in
            var samples: [Double] = []
            var bytes = 0
            for i in 0..<(requests + 5) {
                let t = ContinuousClock.now
                let reply = try BenchHTTP.get(port: port, path: path)
                let elapsed = (ContinuousClock.now - t).inSeconds
                guard reply.status == 200, reply.body.contains(mustContain) else {
                    throw HubError.failed("GET \(path) answered \(reply.status) without \(mustContain): \(reply.body.prefix(300))")
                }
                bytes = reply.body.utf8.count
                if i >= 5 { samples.append(elapsed) }
            }
            samples.sort()
            return PageTiming(p50: samples[samples.count / 2], p99: samples[min(samples.count - 1, samples.count * 99 / 100)], bytes: bytes)
        }.value
    }

    func report(
        written: (events: Int, seconds: Double), startSeconds: Double, devicesPage: PageTiming, devicePage: PageTiming,
        live: LiveUpdateBench.Result
    ) -> String {
        func ms(_ s: Double) -> String { String(format: "%.1f", s * 1000) }
        let verdict = { (ok: Bool) in ok ? "met" : "MISSED" }
        return """
            | measure | value | target |
            |---|---|---|
            | log written (\(devices) devices registered, \(days) days of one-minute readings for dev-0) | \(written.events) events in \(String(format: "%.1f", written.seconds)) s | |
            | hub start (replay of that log, then serving) | \(String(format: "%.1f", startSeconds)) s | |
            | Devices page `/` (\(devicesPage.bytes / 1024) KiB; \(requests) requests) | p50 \(ms(devicesPage.p50)) ms, p99 \(ms(devicesPage.p99)) ms | < 50 ms: \(verdict(devicesPage.p99 < 0.050)) |
            | device page `/devices/dev-0` with charts (\(devicePage.bytes / 1024) KiB; \(requests) requests) | p50 \(ms(devicePage.p50)) ms, p99 \(ms(devicePage.p99)) ms | < 100 ms: \(verdict(devicePage.p99 < 0.100)) |
            | live updates: \(pages) open pages, \(live.commands) commands at \(rate)/s (\(live.failedCommands) refused or failed) | \(live.received) of \(live.expected) updates arrived; p50 \(ms(live.p50)) ms, p99 \(ms(live.p99)) ms, latest \(ms(live.max)) ms | none later than 1 s: \(verdict(live.max < 1 && live.received == live.expected)) |
            | the same commands answered by the command path (decide, append and fsync, fold) | p50 \(ms(live.answerP50)) ms, p99 \(ms(live.answerP99)) ms | |
            | pages told to reload (fell 1,024 events behind) | \(live.reloads) | 0 |
            """
    }
}
