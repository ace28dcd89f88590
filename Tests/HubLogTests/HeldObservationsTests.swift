import Foundation
import Testing

@testable import HubLog

/// Whether `/dev/shm` is a tmpfs (the writer then holds observations).
private let hasTmpfs = StagedFrames.fileSystemType(of: "/dev/shm") == "tmpfs"

/// Observations held back from their segment until the next write moment (an immediate commit,
/// the delay up, close), read from memory meanwhile, staged on tmpfs so a writer that dies leaves
/// them for the next open.
@Suite(.enabled(if: hasTmpfs, "held observations are staged on a tmpfs at /dev/shm, which this machine lacks"))
struct HeldObservationsTests {
    /// A store with a long delay whose staging directory is a tmpfs directory of its own.
    static func store(_ dir: String, staging: String, delay: Duration = .seconds(600)) throws -> SegmentStore {
        var options = SegmentStoreOptions(observationCommitDelay: delay)
        options.stagingDirectory = staging
        return try SegmentStore(directory: dir, options: options)
    }

    /// A directory on tmpfs (`/dev/shm`), which the test machine has.
    static func tmpfsDirectory() throws -> String {
        let path = "/dev/shm/hub-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    static func writes(_ operations: [FileIO.Operation]) -> Int {
        operations.count { if case .write = $0 { true } else { false } }
    }

    @Test func observationsAreWrittenOnlyAtTheNextWriteMomentAndReadFromMemoryMeanwhile() async throws {
        let dir = temporaryDirectory(), staging = try Self.tmpfsDirectory()
        let store = try Self.store(dir, staging: staging)
        var operations = try await ObservationDurabilityTests.recording(dir) {
            for n in 0..<5 { _ = try await store.append(ObservationDurabilityTests.observation("device/plug", n)) }
        }
        #expect(Self.writes(operations) == 0, "held, not written: \(operations)")
        #expect(store.lastSequence == 5 && store.durableSequence == 0)
        #expect(store.observationsNotHeld == nil)
        #expect(try allRecords(store).map(\.sequence) == Array(1...5))
        var viewed: [UInt64] = []
        try await store.readViews(from: 2, through: 4) {
            viewed.append($0.sequence); return true
        }
        #expect(viewed == [2, 3, 4])
        #expect(try await store.chainHash(at: 3) != nil)
        // Another process sees them at the next write moment.
        #expect(try SegmentStore(directory: dir, readOnly: true).lastSequence == 0)
        operations = try await ObservationDurabilityTests.recording(dir) {
            _ = try await store.append(request("device/plug", 10, commandId: "switch-1"))
        }
        #expect(Self.writes(operations) == 2, "the held frames, then the command's: \(operations)")
        #expect(operations.last.map { if case .sync = $0 { true } else { false } } == true)
        #expect(store.durableSequence == 6)
        #expect(try SegmentStore(directory: dir, readOnly: true).lastSequence == 6)
        store.close()
        #expect(try FileManager.default.contentsOfDirectory(atPath: staging).isEmpty, "the staged copy goes at close")
    }

    @Test func waitingForDurableReturnsAtTheWriteMoment() async throws {
        let dir = temporaryDirectory(), staging = try Self.tmpfsDirectory()
        let store = try Self.store(dir, staging: staging, delay: .milliseconds(300))
        _ = try await store.append(ObservationDurabilityTests.observation("device/plug", 1))
        #expect(store.durableSequence == 0)
        try await store.waitForDurable(after: 0)
        #expect(store.durableSequence == 1)
        #expect(try SegmentStore(directory: dir, readOnly: true).lastSequence == 1)
        store.close()
    }

    /// Asking for a write moment (as the hub does before its last signed head) writes and syncs
    /// what is held at once, not at the delay; with nothing held it returns at once.
    @Test func aWriteMomentAskedForComesAtOnce() async throws {
        let dir = temporaryDirectory(), staging = try Self.tmpfsDirectory()
        let store = try Self.store(dir, staging: staging)  // a delay of 600 s
        for n in 0..<3 { _ = try await store.append(ObservationDurabilityTests.observation("device/plug", n)) }
        #expect(store.durableSequence == 0)
        try await store.makeDurable()
        #expect(store.durableSequence == 3)
        #expect(try SegmentStore(directory: dir, readOnly: true).lastSequence == 3, "in the file")
        try await store.makeDurable()
        _ = try await store.append(ObservationDurabilityTests.observation("device/plug", 4))
        try await store.makeDurable()
        #expect(store.durableSequence == 4)
        store.close()
    }

    /// What a killed writer leaves: the segment without the held frames, and their staged copy.
    static func leftByAKill(_ dir: String, staging: String, observations: Int) async throws -> (copy: String, staged: String) {
        let store = try Self.store(dir, staging: staging)
        _ = try await store.append(request("device/plug", 0, commandId: "switch-0"))
        for n in 1...observations { _ = try await store.append(ObservationDurabilityTests.observation("device/plug", n)) }
        // The files as they are now, copied elsewhere: the staging file is found by the copy's lock.
        let copy = temporaryDirectory()
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
            try FileManager.default.copyItem(atPath: dir + "/" + name, toPath: copy + "/" + name)
        }
        let stagedHere = try #require(store.stagingPath)
        let stagedThere = try #require(StagedFrames.path(in: staging, logDirectory: copy))
        try FileManager.default.copyItem(atPath: stagedHere, toPath: stagedThere)
        store.close()
        return (copy, stagedThere)
    }

    @Test func aKilledWritersHeldObservationsArePutBackByTheNextOpen() async throws {
        let dir = temporaryDirectory(), staging = try Self.tmpfsDirectory()
        let (copy, staged) = try await Self.leftByAKill(dir, staging: staging, observations: 4)
        #expect(try SegmentStore(directory: copy, readOnly: true).lastSequence == 1, "only the command is in the files")
        let reopened = try Self.store(copy, staging: staging)
        #expect(reopened.lastSequence == 5)
        #expect(reopened.openingNotes.contains { $0.contains("put back") }, "\(reopened.openingNotes)")
        #expect(try allRecords(reopened).map(\.sequence) == Array(1...5))
        #expect(try FileIO.size(path: staged) == 0, "taken: the reopened writer stages its own there")
        reopened.close()
        #expect(!FileManager.default.fileExists(atPath: staged))
        #expect(try await SegmentStore(directory: copy, readOnly: true).verify(progress: nil).incompleteTail == nil)
        #expect(try allRecords(try SegmentStore(directory: copy, readOnly: true)).count == 5)
    }

    @Test func stagedFramesThatDoNotFollowTheLogAreNotPutBack() async throws {
        let dir = temporaryDirectory(), staging = try Self.tmpfsDirectory()
        let (copy, staged) = try await Self.leftByAKill(dir, staging: staging, observations: 3)
        // The record they follow is not the one staged: its chain hash differs.
        var bytes = try FileIO.readAll(path: staged)
        bytes[40] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: staged))
        let reopened = try Self.store(copy, staging: staging)
        #expect(reopened.lastSequence == 1)
        #expect(reopened.openingNotes.contains { $0.contains("were not put back") }, "\(reopened.openingNotes)")
        reopened.close()
    }

    @Test func stagedFramesAlreadyWrittenAreNotWrittenTwice() async throws {
        let dir = temporaryDirectory(), staging = try Self.tmpfsDirectory()
        let store = try Self.store(dir, staging: staging)
        _ = try await store.append(request("device/plug", 0, commandId: "switch-0"))
        for n in 1...3 { _ = try await store.append(ObservationDurabilityTests.observation("device/plug", n)) }
        let stagedCopy = try FileIO.readAll(path: try #require(store.stagingPath))
        store.close()  // writes them
        // A kill after the frames were written and before the staging file was emptied.
        let stagedAgain = try #require(StagedFrames.path(in: staging, logDirectory: dir))
        try Data(stagedCopy).write(to: URL(fileURLWithPath: stagedAgain))
        let reopened = try Self.store(dir, staging: staging)
        #expect(reopened.lastSequence == 4)
        #expect(reopened.openingNotes.isEmpty, "\(reopened.openingNotes)")
        reopened.close()
    }

    @Test func withoutATmpfsNothingIsHeld() async throws {
        let dir = temporaryDirectory()
        let store = try Self.store(dir, staging: temporaryDirectory())  // not a tmpfs
        let operations = try await ObservationDurabilityTests.recording(dir) {
            _ = try await store.append(ObservationDurabilityTests.observation("device/plug", 1))
        }
        #expect(Self.writes(operations) == 1, "written at once, synced later: \(operations)")
        #expect(store.durableSequence == 0 && store.lastSequence == 1)
        #expect(store.observationsNotHeld?.contains("is not a tmpfs") == true, "the hub says why: \(store.observationsNotHeld ?? "nil")")
        store.close()
    }
}
