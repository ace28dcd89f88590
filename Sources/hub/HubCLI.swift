import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import HubRelease
import Logging

@main
struct HubCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "An event-sourced IoT hub: an append-only event log of everything devices and people did.",
        // `hub --version`: the release and the commit it was built from.
        version: HubRelease.description,
        subcommands: [
            RunCommand.self, ExecCommand.self, EventsCommand.self, ReplayCommand.self, VerifyCommand.self,
            ExportCommand.self, ImportCommand.self, BackupCommand.self, RestoreCommand.self, AuditCommand.self, SimCommand.self,
            TokenCommand.self
        ]
    )
}

/// `--data-dir` and `--log`, shared by every subcommand.
struct DataOptions: ParsableArguments {
    @Option(name: .long, help: "The hub's data directory (event log and snapshots).")
    var dataDir: String = "./hub-data"
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Keep the event log in PostgreSQL instead of <data-dir>/log, such as postgres://hub@db.example:5432/hub (PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE fill what the URL leaves out). The data directory still holds snapshots and keys.",
            valueName: "url"))
    var log: String?

    /// The data directory, with the log `--log` names (or `fallback`, from the configuration file).
    func paths(fallback: String? = nil) throws -> HubPaths {
        let url = log ?? fallback
        if let url, !url.hasPrefix("postgres://"), !url.hasPrefix("postgresql://") {
            throw HubError.usage(
                "--log \(HubPaths(dataDirectory: dataDir, logURL: url).logDescription): not a postgres:// URL (postgres://user@host:5432/database); without --log the log is <data-dir>/log"
            )
        }
        return HubPaths(dataDirectory: dataDir, logURL: url)
    }

    /// The event log named for messages (a PostgreSQL URL with its password masked).
    var logDescription: String { (try? paths().logDescription) ?? dataDir }
}

/// `--log-level`, for the subcommands that write diagnostics through swift-log (`run`, `exec`).
struct LogLevelOption: ParsableArguments {
    @Option(
        help: ArgumentHelp("The lowest level of diagnostics written (default: info; debug adds a line per command).", valueName: "level"))
    var logLevel: Logger.Level?
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

extension Console {
    /// The hub's diagnostics on standard error, one `hub: ...` line each, at `info` and above.
    static let logger = logger(level: .info)

    /// The hub's diagnostics on standard error from `level` up.
    static func logger(level: Logger.Level) -> Logger {
        var logger = Logger(label: "hub") { _ in LineLogHandler(prefix: "hub: ", level: level, sink: { Console.note($0) }) }
        logger.logLevel = level
        return logger
    }
}
