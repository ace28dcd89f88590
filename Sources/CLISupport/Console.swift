import ArgumentParser
import Foundation

/// What the hub's command-line tools (`hub`, `hub-bench`) share: one-line messages on standard
/// error, the one-line error convention, and unbuffered standard output.
public enum Console {
    /// The program's name (`hub`, `hub-bench`), written before its error lines (`hub: error: ...`).
    public static let program = URL(fileURLWithPath: CommandLine.arguments.first ?? "hub").lastPathComponent

    /// Writes one line to standard error.
    public static func note(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// Runs `body`; any error becomes one line on standard error (`<program>: error: ...`) and exit
    /// code 1, never a trap or a stack. An `ExitCode` passes through.
    public static func guarded<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ExitCode {
            throw error
        } catch {
            note("\(program): error: \(error)")
            throw ExitCode.failure
        }
    }

    /// Whether standard error is a terminal (progress bars only then).
    public static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// Writes straight to file descriptor 1 (unbuffered; a short line is one atomic write to a pipe).
public func writeStandardOutput(_ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if n < 0 { if errno == EINTR { continue } else { return } }
        offset += n
    }
}

/// Writes text straight to file descriptor 1.
public func writeStandardOutput(_ text: String) { writeStandardOutput(Array(text.utf8)) }
