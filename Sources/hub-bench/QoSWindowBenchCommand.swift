import ArgumentParser
import BrokerHarness
import CLISupport
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import Logging
import MQTT
import VirtualDriver

/// `hub-bench qos-window`: how long a command received at QoS 1 (and so already acknowledged to the
/// broker by libmosquitto) waits before its append is durable, and before it is answered: the window
/// in which a crash of the hub loses an acknowledged command. Three loads on a hub of its own, on a
/// mosquitto it starts itself.
struct QoSWindowBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "qos-window",
        abstract:
            "Receipt (libmosquitto callback, PUBACK already sent) -> durable append -> answer, per command, under light and busy load.")

    @Option(help: "Commands for the light load (one at a time, each waits for its answer).")
    var light = 1_000
    @Option(help: "Commands per second for the steady load.")
    var rate = 150
    @Option(help: "Seconds of the steady load.")
    var steadySeconds = 10
    @Option(help: "Commands for the flood (as fast as the publishers can send).")
    var flood = 20_000
    @Option(help: "Concurrent publishers for the flood.")
    var publishers = 16
    @Option(help: "Where to put the hub's data (removed afterwards).")
    var dir = "./hub-bench-qos-window"

    func run() async throws {
        try await Console.guarded {
            let broker = try TestBroker.start()
            defer { broker.stop() }
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let service = try await Bench.startHub(port: broker.port, root: root)
            guard let surface = service.surface else { throw HubError.failed("the hub has no MQTT surface") }
            var rows: [String] = []

            // Light: one command at a time, the next sent when the previous is answered.
            let sender = try await Bench.client(broker.port, "bench-qos-light", subscribe: ["hub/response/command"])
            var answers = sender.messages.makeAsyncIterator()
            surface.commandWindow.resetPeak()
            surface.commandWindow.record()
            for i in 0..<light {
                try sender.publish("hub/request/command", command(i, device: i % 100, id: "light-\(i)"), qos: 1)
                while let answer = await answers.next(), !String(decoding: answer.payload, as: UTF8.self).contains("\"light-\(i)\"") {}
            }
            rows.append(
                row("light: one at a time (\(light) commands)", surface.commandWindow.stopRecording(), peak: surface.commandWindow.maximum))
            Console.note("bench: \(rows.last!)")
            await sender.stop(finalMessage: nil)

            // Steady: `rate` commands a second from one publisher, not waiting for answers.
            let steady = try await Bench.client(broker.port, "bench-qos-steady")
            let count = rate * steadySeconds
            var before = surface.answered
            surface.commandWindow.resetPeak()
            surface.commandWindow.record()
            let start = ContinuousClock.now
            for i in 0..<count {
                try await Task.sleep(until: start + .seconds(Double(i) / Double(rate)), clock: .continuous)
                try steady.publish("hub/request/command", command(i, device: i % 100, id: "steady-\(i)"), qos: 1)
            }
            try await waitAnswered(surface, before + count)
            rows.append(
                row(
                    "steady: \(rate) commands/s for \(steadySeconds) s (\(count) commands)", surface.commandWindow.stopRecording(),
                    peak: surface.commandWindow.maximum))
            Console.note("bench: \(rows.last!)")
            await steady.stop(finalMessage: nil)

            // Flood: `publishers` publishers as fast as they can; the backlog waits in the hub.
            var clients: [MQTTClient] = []
            for p in 0..<publishers { clients.append(try await Bench.client(broker.port, "bench-qos-flood-\(p)")) }
            let perPublisher = flood / publishers
            before = surface.answered
            surface.commandWindow.resetPeak()
            surface.commandWindow.record()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (p, c) in clients.enumerated() {
                    group.addTask {
                        for i in 0..<perPublisher {
                            try c.publish(
                                "hub/request/command", command(i, device: (p * perPublisher + i) % 100, id: "flood-\(p)-\(i)"), qos: 1)
                        }
                    }
                }
                try await group.waitForAll()
            }
            try await waitAnswered(surface, before + perPublisher * publishers)
            rows.append(
                row(
                    "flood: \(publishers) publishers, no pause (\(perPublisher * publishers) commands)",
                    surface.commandWindow.stopRecording(),
                    peak: surface.commandWindow.maximum))
            Console.note("bench: \(rows.last!)")
            for c in clients { await c.stop(finalMessage: nil) }
            try await service.stop()

            print(
                """
                | load | receipt -> lane takes it p50 / p99 / max | receipt -> durable p50 / p99 / max | receipt -> answered p50 / p99 / max | most commands received, not yet durable |
                |---|---:|---:|---:|---:|
                \(rows.joined(separator: "\n"))
                """)
        }
    }

    func command(_ i: Int, device: Int, id: String) -> [UInt8] {
        Array(
            #"{"command":"record_reading","device":"meter-\#(device)","quantity":"power","value":\#(100 + i % 50),"command_id":"\#(id)","transaction":"\#(id)"}"#
                .utf8)
    }

    func waitAnswered(_ surface: MQTTSurface, _ target: Int) async throws {
        let start = ContinuousClock.now
        while surface.answered < target {
            if ContinuousClock.now - start > .seconds(300) {
                throw HubError.failed("qos-window: \(target - surface.answered) commands unanswered after 300 s")
            }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    func row(_ load: String, _ samples: [CommandWindow.Sample], peak: Int) -> String {
        func cell(_ values: [Double]) -> String {
            let sorted = values.sorted()
            guard !sorted.isEmpty else { return "-" }
            func at(_ p: Double) -> String { String(format: "%.2f", sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000) }
            return "\(at(0.5)) / \(at(0.99)) / \(String(format: "%.2f", sorted.last! * 1000)) ms"
        }
        return "| \(load) | \(cell(samples.map(\.taken))) | \(cell(samples.map(\.durable))) | \(cell(samples.map(\.answered))) | \(peak) |"
    }
}
