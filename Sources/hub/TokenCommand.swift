import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT

/// `hub token`: the HTTP listener's access tokens (needed on any bind other than loopback).
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "The HTTP access tokens in <data-dir>/http/tokens.json (only their SHA-256 is stored).",
        subcommands: [Rotate.self, List.self])

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new token (replacing the one of that name, and ending its browser sessions) and print it once.")
        @OptionGroup var data: DataOptions
        @Option(help: "The token's name: the actor its requests are recorded with is http:<name>.") var name = "admin"

        func run() async throws {
            try await Console.guarded {
                let token = try AccessTokens(dataDirectory: data.dataDir).rotate(name: name)
                print(token)
                Console.note("hub: token \"\(name)\" replaced; the old one is refused from the next request on (shown once, keep it)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Name the tokens and when each was made (never the tokens).")
        @OptionGroup var data: DataOptions

        func run() async throws {
            try await Console.guarded {
                let entries = try AccessTokens(dataDirectory: data.dataDir).entries()
                if entries.isEmpty { Console.note("hub: no tokens in \(data.dataDir)/http/tokens.json (hub token rotate makes one)") }
                for entry in entries { print("\(entry.name)\t\(entry.created)") }
            }
        }
    }
}
