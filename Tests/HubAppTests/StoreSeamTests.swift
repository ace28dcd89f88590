import Foundation
import HubDomain
import HubLog
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// The hub, replay, export, import and verify see the log only as `any EventStore`.
@Suite struct StoreSeamTests {
    /// Opens the segment store and forgets its type: everything below goes through the protocol.
    func openStore(_ dir: String, readOnly: Bool = false) throws -> any EventStore {
        try SegmentStore(directory: dir + "/log", readOnly: readOnly)
    }

    @Test func hubRunsOnAnyEventStore() async throws {
        let dir = temporaryDirectory()
        let paths = HubPaths(dataDirectory: dir + "/a")
        let hub = try await Hub(store: try openStore(paths.dataDirectory), paths: paths)
        try await populate(hub)
        let state = await hub.state
        let last = hub.store.lastSequence
        #expect(last == 18)
        try await hub.close()
        // Closed through the protocol: the directory lock is released, so the log opens again.
        let reopened = try await Hub(store: try openStore(paths.dataDirectory), paths: paths)
        #expect(await reopened.state.lastSequence == state.lastSequence)
        #expect(await reopened.state.devices["pump"]?.name == "Garden pump")
        #expect(reopened.openingNotes.contains("read models restored from the snapshot at sequence \(last)"))
        try await reopened.close()

        // Replay, export and verify on a read-only store typed as the protocol.
        let store = try openStore(paths.dataDirectory, readOnly: true)
        var replayed = HubState()
        #expect(try await Hub.fold(store: store, into: &replayed, through: store.lastSequence) == 0)
        #expect(replayed.lastSequence == last)
        let file = dir + "/export.jsonl"
        #expect(try await LogTransfer.export(store: store, to: file) == last)
        let report = try await store.verify(progress: nil)
        #expect(report.records == last)
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(lines.last?.contains(#""hash":"\#(report.headHash)""#) == true, "the export's last hash is the verified head")

        // Import into another store through the protocol: same records, same chain.
        let target = try openStore(dir + "/b")
        #expect(try await LogTransfer.importFile(file, into: target) == last)
        #expect(try await target.verify(progress: nil).headHash == report.headHash)
        #expect(try await target.commandResult("cmd-3")?.duplicate == true)
        await target.close()
    }

    @Test func openingNotesComeFromTheStore() async throws {
        let dir = temporaryDirectory()
        let paths = HubPaths(dataDirectory: dir)
        let hub = try await Hub(paths: paths)
        try await populate(hub)
        try await hub.close()
        // A torn write at the end of the newest segment: the store cuts it and says so.
        let segment = paths.log + "/00000000000000000001.seg"
        let handle = try #require(FileHandle(forWritingAtPath: segment))
        handle.seekToEndOfFile()
        handle.write(Data([0x40, 0, 0, 0, 0xBF, 0xFF, 0xFF, 0xFF, 1, 2, 3]))
        try handle.close()
        let store = try openStore(dir)
        #expect(store.openingNotes.count == 1)
        #expect(store.openingNotes.first?.hasPrefix("recovered from a torn tail: cut 11 bytes") == true)
        let reopened = try await Hub(store: store, paths: paths)
        #expect(reopened.openingNotes.first == store.openingNotes.first)
        try await reopened.close()
    }
}
