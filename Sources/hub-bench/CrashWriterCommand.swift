import ArgumentParser
import CLISupport
import Foundation
import HubLog

/// For the crash test: appends as fast as it can from several tasks and prints one line per
/// acknowledged append (`ack <first> <last> <command id>`), flushed at once, until killed.
struct CrashWriterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "crash-writer", abstract: "Test tool: append until killed.")

    @Option(name: .long, help: "The data directory (the log goes to <dir>/log).")
    var dataDir = "./hub-data"
    @Option(help: "Concurrent appending tasks.")
    var tasks = 8
    @Option(help: "Segment size in bytes (small values exercise rotation).")
    var segmentSize = 1 << 20

    func run() async throws {
        let store = try await Console.guarded {
            try SegmentStore(directory: dataDir + "/log", options: SegmentStoreOptions(segmentSize: segmentSize))
        }
        let run = UUID().uuidString.prefix(8)
        writeStandardOutput("ready \(store.lastSequence)\n")
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var n = 0
                    while true {
                        n += 1
                        let id = "\(run)-\(task)-\(n)"
                        let count = 1 + n % 3
                        let events = (0..<count).map { i in
                            ProposedEvent(
                                type: "CrashTest", schemaVersion: 1, timestamp: Int64(n),
                                payload: Array(repeating: UInt8(truncatingIfNeeded: n + i), count: 20 + (n * 7 + i) % 200))
                        }
                        guard
                            let result = try? await store.append(
                                AppendRequest(
                                    stream: "crash/\(task)", causation: Causation(commandId: id, actor: "crash-writer"), events: events))
                        else { return }
                        let line = "ack \(result.firstSequence) \(result.lastSequence) \(id)\n"
                        writeStandardOutput(line)
                    }
                }
            }
        }
    }
}
