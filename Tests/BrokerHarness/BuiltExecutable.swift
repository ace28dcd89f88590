import Foundation

/// An executable of this package (`hub`, `hub-bench`) built next to the test bundle: for tests
/// that run it as a real process.
public func builtExecutable(_ name: String = "hub") -> String? {
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<4 {
        let candidate = dir.appendingPathComponent(name).path
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        dir = dir.deletingLastPathComponent()
    }
    let fallback = FileManager.default.currentDirectoryPath + "/.build/debug/" + name
    return FileManager.default.isExecutableFile(atPath: fallback) ? fallback : nil
}

/// What a finished process printed, and its exit status.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs the `hub` executable to completion, with `stdin` as its input and `environment` added to
/// this process's own.
/// `hub run` serves HTTP on 127.0.0.1:8080 unless told otherwise: tests run many hubs at once, so
/// a `run` that names no address gets `--no-http` (a test that wants the listener passes `--http`).
public func withoutDefaultHTTP(_ arguments: [String]) -> [String] {
    guard arguments.first == "run", !arguments.contains(where: { $0.hasPrefix("--http") || $0 == "--no-http" }) else { return arguments }
    return arguments + ["--no-http"]
}

public func runHub(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) throws -> ProcessResult {
    guard let path = builtExecutable("hub") else { throw BrokerHarnessError("the hub executable was not built") }
    var out = Pipe(), err = Pipe(), input = Pipe()
    let process = try spawn {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = withoutDefaultHTTP(arguments)
        if !environment.isEmpty { process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new } }
        (out, err, input) = (Pipe(), Pipe(), Pipe())
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        return process
    }
    if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
    try input.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProcessResult(
        status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData, as: UTF8.self))
}
