import BrokerHarness
import Foundation
import HubLog
import Synchronization
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// A child process (`hub-bench crash-writer`) appends as fast as it can and prints each acknowledged append; it is killed
/// with SIGKILL at random moments. After every kill, every acknowledged event must be in the log
/// and the log must verify.
@Suite struct CrashTests {
    @Test func everyAcknowledgedAppendSurvivesSIGKILL() async throws {
        let executable = try #require(builtExecutable("hub-bench"), "the hub-bench executable must be built (swift build)")
        let dir = temporaryDirectory()
        var acknowledged: [(first: UInt64, last: UInt64, id: String)] = []
        var generator = SystemRandomNumberGenerator()
        let rounds = 12
        for round in 0..<rounds {
            let configured = Process()
            configured.executableURL = URL(fileURLWithPath: executable)
            configured.arguments = ["crash-writer", "--data-dir", dir, "--segment-size", "65536", "--tasks", "8"]
            let pipe = Pipe()
            configured.standardOutput = pipe
            configured.standardError = FileHandle.nullDevice
            let collected = Mutex([UInt8]())
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                collected.withLock { $0 += data }
            }
            let process = try spawn(configured: configured)
            // Wait until it has opened the log and acknowledged something, then kill it mid-flight.
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, !collected.withLock({ String(decoding: $0, as: UTF8.self).contains("\nack ") }) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let wait = Int.random(in: 0..<300, using: &generator)
            try await Task.sleep(for: .milliseconds(wait))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            pipe.fileHandleForReading.readabilityHandler = nil
            let rest = pipe.fileHandleForReading.readDataToEndOfFile()
            let output = String(decoding: collected.withLock { $0 } + rest, as: UTF8.self)
            #expect(process.terminationReason == .uncaughtSignal, "round \(round): the writer was not killed")
            var thisRound = 0
            for line in output.split(separator: "\n", omittingEmptySubsequences: true) {
                let parts = line.split(separator: " ")
                // Only whole lines count; a line cut by the kill lacks its fields.
                guard parts.count == 4, parts[0] == "ack", let first = UInt64(parts[1]), let last = UInt64(parts[2]) else { continue }
                acknowledged.append((first, last, String(parts[3])))
                thisRound += 1
            }
            #expect(thisRound > 0, "round \(round): nothing was acknowledged in \(wait) ms")

            // Recover (cutting any torn tail) and check every acknowledged append is there, intact.
            let store: any EventStore = try SegmentStore(directory: dir + "/log")
            var byId: [String: (UInt64, UInt64)] = [:]
            try await store.read(from: 1, through: store.lastSequence) { record in
                if let id = record.causation.commandId {
                    let range = byId[id] ?? (record.sequence, record.sequence)
                    byId[id] = (range.0, record.sequence)
                }
                return true
            }
            await store.close()
            for ack in acknowledged {
                let found = byId[ack.id]
                #expect(
                    found?.0 == ack.first && found?.1 == ack.last, "round \(round): acknowledged \(ack.id) \(ack.first)-\(ack.last) lost")
            }
            let report = try await SegmentStore(directory: dir + "/log", readOnly: true).verify(progress: nil)
            #expect(report.incompleteTail == nil)
            #expect(report.records >= acknowledged.map(\.last).max() ?? 0)
        }
        #expect(acknowledged.count > rounds * 10)
    }
}
