import Foundation
import HubDomain
import HubEngine
import HubHistory
import HubLog
import HubRelease

/// The on-disk formats of a data directory's parts, recorded in `<data-dir>/format.json` with the
/// hub that last wrote the directory (docs/operations.md, "Format versions"):
///
/// ```json
/// {"formats":{"audit-heads":1,...,"log":2,"snapshots":7},"written_by":"hub 0.9.0 (commit 3f09a2c1b7e4)"}
/// ```
///
/// Every command checks it before it opens anything: a part recorded at a format newer than this
/// hub reads is refused with both versions and the hub that wrote it, and nothing is changed (a
/// downgrade never answers from files it would misread). A part this hub does not know is refused
/// the same way. A hub that opens the directory to write records its own formats, once they
/// differ from what the file says; an older format is read and said (``check(dataDirectory:)``).
public enum DataFormats {
    /// `format.json`.
    public static let fileName = "format.json"

    /// The format of each part this hub writes, and the newest it reads. Raise a part's number
    /// with every change of its layout (and add a fixture written by the build before the change
    /// to Tests/Fixtures/datadirs).
    public static let current: [String: Int] = [
        // log/*.seg: segment magic HUBLOG02 (HUBLOG01 is read too).
        "log": 2,
        // The events in the log: the event catalogue's version (new types, new schemas).
        "events": EventType.catalogVersion,
        // log/commands.idx: HUBCIX01.
        "command-index": 1,
        // log/recovery.ckpt: HUBRCK01.
        "recovery-checkpoint": 1,
        // snapshots/: the read models' snapshot format (older ones are set aside and rebuilt).
        "snapshots": Hub.snapshotFormat,
        // history/: time-weighted buckets (older ones are rebuilt from the log).
        "history": HistoryFiles.formatVersion,
        // audit/tree: HUBTREE1; audit/heads: one signed head per line; audit/key.
        "audit-tree": 1,
        "audit-heads": 1,
        // keys/: one owner-data key per animal.
        "owner-keys": 1,
        // http/tokens.json.
        "http-tokens": 1,
        // mqtt-events.checkpoint.
        "mqtt-checkpoint": 1,
        // photos/.
        "photos": 1
    ]

    /// What `format.json` says.
    public struct Record: Sendable, Equatable, Codable {
        /// Each part's format.
        public var formats: [String: Int]
        /// The hub that last wrote the directory (`hub 0.9.0 (commit …)`).
        public var writtenBy: String

        enum CodingKeys: String, CodingKey {
            case formats
            case writtenBy = "written_by"
        }

        /// This hub's own formats, written by it.
        public static var current: Record { Record(formats: DataFormats.current, writtenBy: HubRelease.description) }
    }

    /// Why a data directory is not opened: written by a newer hub, or an unreadable `format.json`.
    public struct Refusal: Error, CustomStringConvertible {
        /// The sentence said to the operator: what was found, what this hub reads, and that nothing changed.
        public let description: String
    }

    /// Reads `format.json`, or nil when the directory has none (made before formats were recorded, or new).
    public static func read(dataDirectory: String) throws -> Record? {
        let path = dataDirectory + "/" + fileName
        guard let data = FileManager.default.contents(atPath: path) else {
            if FileManager.default.fileExists(atPath: path) {
                throw Refusal(description: "\(path) cannot be read; nothing was opened or changed")
            }
            return nil
        }
        do {
            return try JSONDecoder().decode(Record.self, from: data)
        } catch {
            throw Refusal(
                description:
                    "\(path) is not a format record ({\"formats\":{...},\"written_by\":\"...\"}): \(error); nothing was opened or changed"
            )
        }
    }

    /// Checks the directory's recorded formats against this hub's.
    ///
    /// - Returns: A note when the directory was written in older formats (or before formats were
    ///   recorded, when it holds anything), which a writer then upgrades; nil when it matches.
    /// - Throws: ``Refusal`` when a part is newer than this hub reads, or unknown to it, or the record
    ///   cannot be read.
    @discardableResult
    public static func check(dataDirectory: String) throws -> String? {
        guard let record = try read(dataDirectory: dataDirectory) else {
            let entries = Set((try? FileManager.default.contentsOfDirectory(atPath: dataDirectory)) ?? [])
            let written = !entries.isDisjoint(with: ["log", "snapshots", "history", "audit", "keys"])
            return written ? "\(dataDirectory) has no \(fileName) (written by a hub before 0.9.0): its formats are read as such" : nil
        }
        let newer = record.formats.keys.sorted().compactMap { part -> String? in
            let found = record.formats[part]!
            guard let known = current[part] else { return "\(part) format \(found) (a part this hub does not know)" }
            return found > known ? "\(part) format \(found) (this hub reads \(part) formats up to \(known))" : nil
        }
        if !newer.isEmpty {
            throw Refusal(
                description:
                    "\(dataDirectory) was written by a newer hub (\(record.writtenBy)): \(newer.joined(separator: ", ")); "
                    + "this is \(HubRelease.description). Nothing was opened or changed: run the newer hub on it, "
                    + "or restore a backup taken by this version")
        }
        let older = record.formats.keys.sorted().compactMap { part -> String? in
            let found = record.formats[part]!
            return found < current[part]! ? "\(part) \(found) -> \(current[part]!)" : nil
        }
        return older.isEmpty
            ? nil : "\(dataDirectory) was written by \(record.writtenBy) in older formats (\(older.joined(separator: ", ")))"
    }

    /// Records this hub's formats in `format.json`, when the file says anything else (written
    /// atomically; an unchanged record is not written again). Called by a hub that opened the
    /// directory to write, after it holds the log.
    public static func record(dataDirectory: String) throws {
        if (try? read(dataDirectory: dataDirectory)) == Record.current { return }
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = Array(try encoder.encode(Record.current)) + [0x0A]
        try FileIO.writeAtomically(bytes, to: dataDirectory + "/" + fileName, directory: dataDirectory)
    }
}
