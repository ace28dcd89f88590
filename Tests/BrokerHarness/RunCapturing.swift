import Foundation

/// Runs `command` (an absolute path, then its arguments) to completion and returns its exit status
/// and what it printed (standard output and error together), read before waiting so that a chatty
/// tool cannot fill the pipe and hang.
public func runCapturing(_ command: [String]) throws -> (status: Int32, output: String) {
    var pipe = Pipe()
    let process = try spawn {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        return process
    }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// Starts the process `make` builds. Foundation's `Process.run()` on Linux fails with EBADF when
/// another thread of this process closes a file descriptor while it spawns (it lists the open ones
/// to close in the child; a test process has sockets and files closing on other threads all the
/// time). Nothing was started then, so it is tried again, a few times, with a fresh process.
public func spawn(_ make: () throws -> Process) throws -> Process {
    var attempts = 0
    while true {
        let process = try make()
        do {
            try process.run()
            return process
        } catch let error as NSError where attempts < 4 && isBadFileDescriptor(error) {
            attempts += 1
            usleep(20_000)
        }
    }
}

/// ``spawn(_:)`` for a process already set up: when it must be tried again, a fresh one with the
/// same executable, arguments, environment, directory and standard streams is started instead, and
/// returned (use the returned process from then on).
public func spawn(configured: Process) throws -> Process {
    var first: Process? = configured
    return try spawn {
        if let process = first {
            first = nil
            return process
        }
        let process = Process()
        process.executableURL = configured.executableURL
        process.arguments = configured.arguments
        process.environment = configured.environment
        process.currentDirectoryURL = configured.currentDirectoryURL
        process.standardInput = configured.standardInput
        process.standardOutput = configured.standardOutput
        process.standardError = configured.standardError
        return process
    }
}

private func isBadFileDescriptor(_ error: NSError) -> Bool {
    if error.domain == NSPOSIXErrorDomain, error.code == Int(EBADF) { return true }
    guard let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError else { return false }
    return underlying.domain == NSPOSIXErrorDomain && underlying.code == Int(EBADF)
}
