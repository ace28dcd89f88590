import Foundation
import Testing

@testable import HubLog

/// Builds a log of `count` single-event appends and returns its directory and the segment path.
func makeLog(count: Int) async throws -> (dir: String, segment: String) {
    let dir = temporaryDirectory()
    let store = try SegmentStore(directory: dir)
    for i in 0..<count { _ = try await store.append(request("device/\(i % 3)", i)) }
    store.close()
    return (dir, segmentPaths(dir)[0])
}

@Suite struct TamperAndRecoveryTests {
    @Test func truncatingTheLastRecordAtEveryOffsetKeepsExactlyTheCompleteRecords() async throws {
        let (dir, segment) = try await makeLog(count: 4)
        let original = readFile(segment)
        let frames = frameOffsets(original)
        let last = frames[frames.count - 1]
        for cut in last.offset..<(last.offset + last.length) {
            writeFile(segment, Array(original[0..<cut]))
            let store = try SegmentStore(directory: dir)
            #expect(store.lastSequence == 3, "cut at \(cut)")
            if cut > last.offset {
                #expect(store.recovery.truncatedTail?.offset == last.offset)
                #expect(store.recovery.truncatedTail?.bytes == cut - last.offset)
            }
            // The log is usable again: the next append gets sequence 4.
            let next = try await store.append(request("device/0", 99))
            #expect(next.firstSequence == 4)
            store.close()
            #expect(try LogVerifier.verify(directory: dir).records == 4)
        }
    }

    /// Zeros after the last record are the unused end of a preallocated segment (or a file that grew
    /// before a crash while its data never reached the disk): no tail at all. Verify and open keep
    /// every record and cut nothing, and the next append is written over the zeros.
    @Test func zerosAfterTheLastRecordAreUnusedSpaceNotATornTail() async throws {
        let (dir, segment) = try await makeLog(count: 3)
        let end = readFile(segment).count
        writeFile(segment, readFile(segment) + [UInt8](repeating: 0, count: 4096))
        let verified = try LogVerifier.verify(directory: dir)
        #expect(verified.incompleteTail == nil && verified.records == 3)
        let store = try SegmentStore(directory: dir)
        #expect(store.lastSequence == 3)
        #expect(store.recovery.truncatedTail == nil && quarantineFiles(dir).isEmpty)
        #expect(store.openingNotes.isEmpty, "\(store.openingNotes)")
        #expect(try await store.append(request("device/0", 9)).firstSequence == 4)
        store.close()
        let frames = frameOffsets(readFile(segment))
        #expect(frames.map(\.offset).last == end)
        #expect(readFile(segment).count == end + frames[3].length, "a closed segment ends at its last record")
        #expect(try LogVerifier.verify(directory: dir).records == 4)
    }

    @Test func aCutTornTailIsKeptInAQuarantineFileTheNotesName() async throws {
        let (dir, segment) = try await makeLog(count: 4)
        let original = readFile(segment)
        let last = frameOffsets(original)[3]
        let cut = last.offset + last.length / 2
        writeFile(segment, Array(original[0..<cut]))
        let store = try SegmentStore(directory: dir)
        store.close()
        #expect(store.lastSequence == 3)
        let name = "quarantine-00000000000000000001-\(last.offset).bin"
        #expect(quarantineFiles(dir) == [name])
        #expect(quarantineFiles(dir).first.map { readFile(dir + "/" + $0) } == Array(original[last.offset..<cut]))
        #expect(store.openingNotes.contains { $0.contains(name) }, "\(store.openingNotes)")
        // A second open finds nothing to cut and keeps the quarantine file.
        let again = try SegmentStore(directory: dir)
        again.close()
        #expect(again.openingNotes.isEmpty)
        #expect(quarantineFiles(dir) == [name])
    }

    /// A complete last frame whose CRC fails is damage to an acknowledged event, not a torn write:
    /// open and verify both refuse it, name it, and change nothing.
    @Test func aFlippedByteInTheLastRecordRefusesTheOpenAndChangesNothing() async throws {
        let (dir, segment) = try await makeLog(count: 5)
        let original = readFile(segment)
        let last = frameOffsets(original)[4]
        for position in last.offset..<(last.offset + last.length) {
            var bytes = original
            bytes[position] ^= 0x40
            writeFile(segment, bytes)
            for readOnly in [false, true] {
                do {
                    let store = try SegmentStore(directory: dir, readOnly: readOnly)
                    store.close()
                    Issue.record("open (read-only: \(readOnly)) took a flipped byte at \(position) for a torn tail")
                } catch let EventLogError.corrupt(name, offset, sequence, _) {
                    #expect(name == "00000000000000000001.seg")
                    #expect(offset == UInt64(last.offset), "flip at \(position)")
                    #expect(sequence == 5)
                }
            }
            do {
                _ = try LogVerifier.verify(directory: dir)
                Issue.record("verify passed a flipped byte at \(position)")
            } catch let EventLogError.corrupt(_, offset, sequence, _) {
                #expect(offset == UInt64(last.offset) && sequence == 5)
            }
            let unchanged = readFile(segment) == bytes
            #expect(unchanged, "a refused open must not change the file (flip at \(position))")
            #expect(quarantineFiles(dir).isEmpty)
        }
    }

    /// Without a recovery checkpoint (with one, see `RecoveryCheckpointTests`: only reads and verify see it).
    @Test func aFlippedByteInAnEarlierRecordRefusesTheOpenAndNamesIt() async throws {
        let (dir, segment) = try await makeLog(count: 5)
        try FileManager.default.removeItem(atPath: dir + "/" + RecoveryCheckpoint.fileName)
        let original = readFile(segment)
        let frames = frameOffsets(original)
        // Every byte of record 2 (header and body).
        for position in frames[1].offset..<(frames[1].offset + frames[1].length) {
            var bytes = original
            bytes[position] ^= 0x40
            writeFile(segment, bytes)
            do {
                let store = try SegmentStore(directory: dir)
                store.close()
                Issue.record("open accepted a flipped byte at \(position)")
            } catch let EventLogError.corrupt(name, offset, sequence, _) {
                #expect(name == "00000000000000000001.seg")
                #expect(offset == UInt64(frames[1].offset), "flip at \(position)")
                #expect(sequence == 2)
            }
            #expect(throws: EventLogError.self) { try LogVerifier.verify(directory: dir) }
            #expect(readFile(segment) == bytes, "a refused open must not change the file")
        }
    }

    @Test func anAlteredPayloadWithAFixedCRCIsCaughtByTheChain() async throws {
        let (dir, segment) = try await makeLog(count: 5)
        var bytes = readFile(segment)
        let frame = frameOffsets(bytes)[2]
        let bodyStart = frame.offset + 12
        let bodyEnd = frame.offset + frame.length
        bytes[bodyEnd - 33] ^= 0x01  // last payload byte
        let crc = bytes[bodyStart..<bodyEnd].withUnsafeBytes { CRC32C.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { for i in 0..<4 { bytes[frame.offset + 8 + i] = $0[i] } }
        writeFile(segment, bytes)
        // Frames are sound, so it opens; verify walks the chain and names the record.
        do {
            _ = try LogVerifier.verify(directory: dir)
            Issue.record("verify missed an altered payload")
        } catch let EventLogError.corrupt(_, offset, sequence, reason) {
            #expect(offset == UInt64(frame.offset))
            #expect(sequence == 3)
            #expect(reason.contains("hash chain"))
        }
    }

    @Test func removedOrSwappedRecordsAreCaught() async throws {
        let (dir, segment) = try await makeLog(count: 5)
        let original = readFile(segment)
        let frames = frameOffsets(original)
        func slice(_ i: Int) -> [UInt8] { Array(original[frames[i].offset..<(frames[i].offset + frames[i].length)]) }
        let header = Array(original[0..<RecordFormat.segmentHeaderSize])
        let removed = header + slice(0) + slice(2) + slice(3) + slice(4)
        let swapped = header + slice(0) + slice(2) + slice(1) + slice(3) + slice(4)
        // Opening sees it when it reads those records: without a recovery checkpoint (with one
        // that covers them, only verify does; see RecoveryCheckpointTests).
        try FileManager.default.removeItem(atPath: dir + "/" + RecoveryCheckpoint.fileName)
        for tampered in [removed, swapped] {
            writeFile(segment, tampered)
            #expect(throws: EventLogError.self) { try LogVerifier.verify(directory: dir) }
            #expect(throws: EventLogError.self) { try SegmentStore(directory: dir) }
        }
        // Removing the last record cannot be seen in the chain alone: the head hash changes.
        writeFile(segment, original)
        let head = try LogVerifier.verify(directory: dir).headHash
        writeFile(segment, header + slice(0) + slice(1) + slice(2) + slice(3))
        #expect(try LogVerifier.verify(directory: dir).headHash != head)
    }

    @Test func aMissingSegmentIsCaught() async throws {
        let dir = temporaryDirectory()
        let store = try SegmentStore(directory: dir, options: SegmentStoreOptions(segmentSize: 2048))
        for i in 0..<100 { _ = try await store.append(request("s", i)) }
        store.close()
        let paths = segmentPaths(dir)
        #expect(paths.count >= 3)
        try FileManager.default.removeItem(atPath: paths[1])
        #expect(throws: EventLogError.self) { try LogVerifier.verify(directory: dir) }
        #expect(throws: EventLogError.self) { try SegmentStore(directory: dir) }
    }
}
