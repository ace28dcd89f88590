import Foundation

/// Runs `command` (an absolute path, then its arguments) to completion and returns its exit status
/// and what it printed (standard output and error together), read before waiting so that a chatty
/// tool cannot fill the pipe and hang.
public func runCapturing(_ command: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
