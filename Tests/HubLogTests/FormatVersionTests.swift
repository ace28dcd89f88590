import Foundation
import Testing

@testable import HubLog

/// Segments written before frames carried their place in their write (`HUBLOG01`) stay readable
/// and are appended to in their own layout; new segments are `HUBLOG02` (see ``RecordFormat``).
@Suite struct FormatVersionTests {
    @Test func aVersionOneSegmentIsReadAndAppendedToInItsOwnLayout() async throws {
        let directory = temporaryDirectory()
        let store = try SegmentStore(directory: directory)
        for n in 0..<3 {
            _ = try await store.append(
                AppendRequest(
                    stream: "device/d", expected: .any, causation: Causation(commandId: nil, actor: "test"),
                    events: [event(n)]))
        }
        store.close()
        // Every write held one record (place 0): the frames are those of a version 1 segment.
        let segment = segmentPaths(directory)[0]
        var bytes = readFile(segment)
        #expect(Array(bytes[0..<8]) == Array("HUBLOG02".utf8))
        bytes.replaceSubrange(0..<8, with: Array("HUBLOG01".utf8))
        writeFile(segment, bytes)
        let reopened = try SegmentStore(directory: directory)
        #expect(reopened.lastSequence == 3)
        let group = (3..<6).map { n in
            AppendRequest(stream: "device/d\(n)", expected: .any, causation: Causation(commandId: nil, actor: "test"), events: [event(n)])
        }
        for result in await reopened.appendAll(group) { _ = try result.get() }
        reopened.close()
        let after = readFile(segment)
        #expect(Array(after[0..<8]) == Array("HUBLOG01".utf8))
        for frame in frameOffsets(after) {
            let (length, check) = after.withUnsafeBytes {
                (
                    $0.loadUnaligned(fromByteOffset: frame.offset, as: UInt32.self),
                    $0.loadUnaligned(fromByteOffset: frame.offset + 4, as: UInt32.self)
                )
            }
            #expect(check == ~length, "a frame in a version 1 segment carries a place in its write")
        }
        let again = try SegmentStore(directory: directory)
        #expect(try allRecords(again).count == 6)
        again.close()
        #expect(try LogVerifier.verify(directory: directory).records == 6)
    }
}
