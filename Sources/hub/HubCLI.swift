import ArgumentParser
import CLISupport
import Foundation
import HubRuntime
import Logging

@main
struct HubCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "An event-sourced IoT hub: an append-only event log of everything devices and people did.",
        subcommands: [RunCommand.self, ExecCommand.self, EventsCommand.self, ReplayCommand.self, VerifyCommand.self,
                      ExportCommand.self, ImportCommand.self, SimCommand.self]
    )
}

/// `--data-dir`, shared by every subcommand.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The hub's data directory (event log and snapshots).")
    var dataDir: String = "./hub-data"
}

extension Console {
    /// The hub's diagnostics on standard error, one `hub: ...` line each.
    static let logger = Logger(label: "hub") { _ in LineLogHandler(prefix: "hub: ", sink: { Console.note($0) }) }
}
