import ArgumentParser
import CLISupport
import Foundation
import HubDomain
import HubRuntime

struct ExecCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract: "Execute commands given as JSON objects (or JSON Lines on stdin with '-'); print each outcome.",
        discussion: """
        Example: hub exec '{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}'
        Commands: \(CommandJSON.names.joined(separator: ", ")). The hub must not be running on the same data directory.
        """)

    @OptionGroup var data: DataOptions
    @OptionGroup var log: LogLevelOption

    @Option(help: "Who is acting (recorded as the events' actor).")
    var actor: String = "cli"

    @Argument(help: "Command objects, or '-' to read JSON Lines from standard input.")
    var commands: [String]

    func run() async throws {
        let hub = try await Console.guarded { try Hub(paths: data.paths()) }
        // What opening repaired or set aside (a torn tail cut into quarantine, a snapshot the log disowns).
        for note in hub.openingNotes where note.hasPrefix("recovered") || note.contains("set aside") { Console.note("hub: \(note)") }
        // The same command path as `hub run`, with no drivers running: members of a group or scene
        // are sent their switch and stay pending until a running hub's drivers carry it out.
        let service = CommandService(hub: hub, catalog: DriverCatalog(LinkedDrivers.all), confirmTimeout: .zero,
                                     logger: Console.logger(level: log.logLevel ?? .info))
        var texts = commands
        if texts == ["-"] {
            texts = []
            while let line = readLine() {
                if !line.isEmpty { texts.append(line) }
            }
        }
        var failures = 0
        for text in texts {
            let now = currentMicros()
            let answer: JSONValue
            do {
                let (command, commandId) = try CommandJSON.parse(try JSONValue.parse(text), now: now)
                let outcome = await service.execute(command, commandId: commandId, actor: actor, now: now)
                if !outcome.isOK { failures += 1 }
                answer = outcome.execLine
            } catch {
                failures += 1
                answer = .object([("status", "error"), ("error", .string("\(error)"))])
            }
            print(answer.serialized())
        }
        if let problem = try await Console.guarded({ try await hub.close() }) { Console.note("hub: \(problem)") }
        if failures > 0 { throw ExitCode.failure }
    }
}
