import ArgumentParser
import Foundation
import HubRuntime

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the hub until interrupted (SIGINT/SIGTERM).")

    @OptionGroup var data: DataOptions

    @Option(help: "Write a read-model snapshot after this many new events.")
    var snapshotEvery: UInt64 = 10_000

    func run() async throws {
        let hub = try await Console.guarded {
            try Hub(paths: HubPaths(dataDirectory: data.dataDir), snapshotEvery: snapshotEvery)
        }
        for note in hub.openingNotes { Console.note("hub: \(note)") }
        let state = await hub.state
        Console.note("hub: running with data directory \(data.dataDir): \(state.lastSequence) events, "
                     + "\(state.devices.active.count) devices, \(state.animals.admitted.count) animals admitted. Ctrl-C stops.")
        await waitForTermination()
        try await Console.guarded { try await hub.close() }
        Console.note("hub: stopped; snapshot written, log closed")
    }
}

/// Suspends until SIGINT or SIGTERM.
func waitForTermination() async {
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    let (signals, continuation) = AsyncStream<Int32>.makeStream()
    let sources = [SIGINT, SIGTERM].map { sig -> DispatchSourceSignal in
        let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        source.setEventHandler { continuation.yield(sig) }
        source.resume()
        return source
    }
    for await _ in signals { break }
    sources.forEach { $0.cancel() }
}
