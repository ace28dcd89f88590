import ArgumentParser
import Foundation
import HubRuntime

/// `hub-bench`: the benchmarks and crash tools, kept out of the product binary (as swift-nio keeps
/// NIOPerformanceTester and NIOCrashTester apart). The benchmarks that run the hub as a separate
/// process launch the `hub` executable built beside this one.
@main
struct HubBenchCLI: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub-bench",
        abstract: "Benchmarks of the hub against real peers, and the crash test's writer. Not part of the product.",
        subcommands: [LogBench.self, MQTTBench.self, PlugsBench.self, BeaconsBench.self, CrashWriterCommand.self]
    )
}

/// Standard error output and the one-line error convention (as the hub's own CLI).
enum Console {
    static func note(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// Runs `body`; any error becomes one line on stderr and exit code 1 (never a trap or a stack).
    static func guarded<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ExitCode {
            throw error
        } catch {
            note("hub-bench: error: \(error)")
            throw ExitCode.failure
        }
    }
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

/// Writes straight to file descriptor 1 (unbuffered; a short line is one atomic write to a pipe).
func writeStandardOutput(_ text: String) {
    let bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 { if errno == EINTR { continue } else { return } }
        offset += n
    }
}
