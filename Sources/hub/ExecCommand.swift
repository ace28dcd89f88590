import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT

struct ExecCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract: "Execute commands given as JSON objects (or JSON Lines on stdin with '-'); print each outcome.",
        discussion: """
            Example: hub exec '{"command":"register_device","id":"lamp","driver":"virtual","name":"Lamp"}'
            Commands: \(CommandJSON.names.joined(separator: ", ")). The hub must not be running on the same data directory.
            Queries: {"query":"history","subject":"device/lamp","quantity":"power","from":"<ISO-8601>","to":"<ISO-8601>","bucket":"1h"}.
            """)

    @OptionGroup var data: DataOptions
    @OptionGroup var log: LogLevelOption

    @Option(help: "Who is acting (recorded as the events' actor).")
    var actor: String = "cli"

    @Argument(help: "Command objects, or '-' to read JSON Lines from standard input.")
    var commands: [String]

    func run() async throws {
        let hub = try await Console.guarded { try await Hub(paths: data.paths()) }
        // On a PostgreSQL log, a hub holding the lease refuses exec; otherwise exec holds it while it writes.
        let lease: ToolLease?
        do {
            lease = try await ToolLease.take(hub.store, for: "hub exec")
        } catch {
            Console.note("hub: error: \(error)")
            if let problem = try await Console.guarded({ try await hub.close() }) { Console.note("hub: \(problem)") }
            throw ExitCode.failure
        }
        // What opening repaired, rebuilt, upgraded or set aside (a torn tail cut into quarantine, the
        // command index or the history rebuilt, a snapshot the log disowns, older formats): all but
        // the routine lines of where the read models came from.
        for note in hub.openingNotes where !note.hasPrefix("replayed ") && !note.hasPrefix("read models restored from the snapshot") {
            Console.note("hub: \(note)")
        }
        // The same command path as `hub run`, with no drivers running: members of a group or scene
        // are sent their switch and stay pending until a running hub's drivers carry it out.
        let service = CommandService(
            hub: hub, catalog: DriverCatalog(LinkedDrivers.all), confirmTimeout: .zero,
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
                let object = try JSONValue.parse(text)
                if object["query"] != nil {
                    answer = await Self.query(object, hub: hub)
                    if answer["status"] != .string("ok") { failures += 1 }
                    print(answer.serialized())
                    continue
                }
                let (command, commandId) = try CommandJSON.parse(object, now: now)
                let cause = try RequestParser.cause(object)
                let outcome = await service.execute(command, commandId: commandId, actor: actor, cause: cause, now: now)
                if !outcome.isOK { failures += 1 }
                answer = outcome.execLine
            } catch let error as RequestError where error.code != nil {
                failures += 1  // a bad cause (`invalid_cause`)
                answer = .object([("status", "error"), ("code", .string(error.code ?? "")), ("error", .string(error.message))])
            } catch {
                failures += 1
                answer = .object([("status", "error"), ("error", .string("\(error)"))])
            }
            print(answer.serialized())
        }
        if let lease {
            do { try await lease.release() } catch { Console.note("hub: the lease was not released (it lapses in 3 s): \(error)") }
        }
        if let problem = try await Console.guarded({ try await hub.close() }) { Console.note("hub: \(problem)") }
        if failures > 0 { throw ExitCode.failure }
    }

    /// A read-only query: `{"query":"history",...}` (the only one so far), answered like the MQTT request.
    static func query(_ object: JSONValue, hub: Hub) async -> JSONValue {
        func refusal(_ message: String, code: String?) -> JSONValue {
            .object([("status", "error")] + (code.map { [("code", JSONValue.string($0))] } ?? []) + [("error", .string(message))])
        }
        guard object["query"] == .string("history") else {
            return refusal("\"query\": must be \"history\" (the only query hub exec answers)", code: nil)
        }
        do {
            let query = try HistoryJSON.query(object, alsoAllowed: ["query"])
            return .object([("status", "ok"), ("data", HistoryJSON.data(try await hub.history(query)))])
        } catch let failure as HistoryJSON.Failure {
            return refusal(failure.message, code: failure.code)
        } catch let rejection as Rejection {
            return refusal(rejection.message, code: rejection.code)
        } catch {
            return refusal("\(error)", code: nil)
        }
    }
}
