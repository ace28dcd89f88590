import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT

/// `hub-bench`: the benchmarks and crash tools, kept out of the product binary (as swift-nio keeps
/// NIOPerformanceTester and NIOCrashTester apart). The benchmarks that run the hub as a separate
/// process launch the `hub` executable built beside this one.
@main
struct HubBenchCLI: AsyncParsableCommand {

    static let configuration = CommandConfiguration(
        commandName: "hub-bench",
        abstract: "Benchmarks of the hub against real peers, and the crash test's writer. Not part of the product.",
        subcommands: [
            LogBench.self, MQTTBench.self, QoSWindowBench.self, PlugsBench.self, BeaconsBench.self, HistoryBench.self, ConsoleBench.self,
            SoakBench.self, CommandIndexBench.self, StartupBench.self, AuditBench.self, HouseholdBench.self, CrashWriterCommand.self
        ]
    )
}

/// The `hub` executable beside this one (`swift build` puts both products in one directory).
func hubExecutable() throws -> String {
    let own = URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0])
    let path = own.deletingLastPathComponent().appendingPathComponent("hub").path
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw HubError.failed("no hub executable at \(path): build it too (swift build -c release --product hub)")
    }
    return path
}
