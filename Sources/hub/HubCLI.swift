import ArgumentParser
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

/// Standard error output and the one-line error convention.
enum Console {
    static func note(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// The hub's diagnostics on standard error, one `hub: ...` line each.
    static let logger = Logger(label: "hub") { _ in LineLogHandler(prefix: "hub: ", sink: { Console.note($0) }) }

    /// Runs `body`; any error becomes one line on stderr and exit code 1 (never a trap or a stack).
    static func guarded<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ExitCode {
            throw error
        } catch {
            note("hub: error: \(error)")
            throw ExitCode.failure
        }
    }

    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// Writes straight to file descriptor 1 (unbuffered; a short line is one atomic write to a pipe).
func writeStandardOutput(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 { if errno == EINTR { continue } else { return } }
        offset += n
    }
}
