import Foundation

@testable import HubLog

func temporaryDirectory(_ name: String = #function) -> String {
    let base = FileManager.default.temporaryDirectory.path + "/hublog-tests-" + UUID().uuidString.prefix(8)
    try? FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
    return base
}

func event(_ n: Int, type: String = "ReadingRecorded", size: Int = 40) -> ProposedEvent {
    ProposedEvent(
        type: type, schemaVersion: 1, timestamp: 1_700_000_000_000_000 + Int64(n),
        payload: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) })
}

func request(_ stream: String, _ n: Int, commandId: String? = nil, expected: ExpectedVersion = .any, count: Int = 1) -> AppendRequest {
    AppendRequest(
        stream: stream, expected: expected, causation: Causation(commandId: commandId, actor: "test"),
        events: (0..<count).map { event(n + $0) })
}

func allRecords(_ store: SegmentStore) throws -> [EventRecord] {
    var out: [EventRecord] = []
    try store.scanRecords(from: 1, through: .max) {
        out.append($0); return true
    }
    return out
}

func segmentPaths(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
        .filter { $0.hasSuffix(".seg") }.sorted().map { directory + "/" + $0 }
}

/// Offsets (from the file start) of every frame in a segment file (up to zeros after the last).
func frameOffsets(_ bytes: [UInt8]) -> [(offset: Int, length: Int)] {
    var out: [(Int, Int)] = []
    var offset = RecordFormat.segmentHeaderSize
    while offset + 12 <= bytes.count {
        let length = bytes.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian) }
        if length == 0 { break }  // the unused, preallocated end of the newest segment
        out.append((offset, 12 + length))
        offset += 12 + length
    }
    return out
}

func readFile(_ path: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path)!) }
func writeFile(_ path: String, _ bytes: [UInt8]) { FileManager.default.createFile(atPath: path, contents: Data(bytes)) }

/// Files in a log directory that hold bytes cut from a torn tail.
func quarantineFiles(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("quarantine-") }.sorted()
}

/// Copies a log directory while its store runs, as a crash would leave it: every file but `LOCK`,
/// skipping one that is gone by the time it is copied (a checkpoint's `.tmp` renamed meanwhile).
func copyRunningLog(_ directory: String, to image: String) throws {
    for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name != "LOCK" {
        do {
            try FileManager.default.copyItem(atPath: directory + "/" + name, toPath: image + "/" + name)
        } catch CocoaError.fileReadNoSuchFile, CocoaError.fileNoSuchFile {
            continue
        }
    }
}
