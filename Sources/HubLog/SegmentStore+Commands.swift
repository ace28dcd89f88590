/// The segment store's command ids (see ``CommandIndex``): looking one up, and the index's start-up.
extension SegmentStore {
    /// The original result of `commandId` (not marked duplicate), or nil when it was never appended:
    /// the window first, then the file, whose every hit is confirmed against the log records it names.
    /// `key` is the id's ``CommandKey`` (made once by the caller, who records the command with it).
    func lookUpCommand(_ commandId: String, key: CommandKey) throws -> AppendResult? {
        if let known = commands.remembered(commandId, key: key) { return known }
        let last = lastSequence
        for hint in try commands.candidates(key) where hint.first >= 1 && hint.first <= hint.last && hint.last <= last {
            if let result = try confirm(commandId, first: hint.first, last: hint.last) {
                commands.remember(key, result)
                return result
            }
        }
        return nil
    }

    /// The append's result when records `first...last` all carry `commandId`; nil when they do not
    /// (a stale entry: e.g. for a record cut from a torn tail, whose sequence now holds another).
    func confirm(_ commandId: String, first: UInt64, last: UInt64) throws -> AppendResult? {
        var expected = first, version: UInt64? = nil, matches = true
        let id = Array(commandId.utf8)
        try scanViews(from: first, through: last) { view in
            guard view.sequence == expected, view.commandIdEquals(id) else { matches = false; return false }
            version = view.streamVersion
            expected += 1
            return true
        }
        guard matches, expected == last + 1 else { return nil }
        return AppendResult(firstSequence: first, lastSequence: last, streamVersion: version, duplicate: false)
    }

    /// Rebuilds the index by a scan of the whole log when the one found cannot be used, brings its
    /// mark to the log's head, and hands it to ``commands``.
    func openCommandIndex(_ indexing: CommandIndexOpening, rebuild: String?, opened: LogRecovery.Opened) throws {
        guard var file = indexing.takeFile() else { return }
        if rebuild != nil {
            file.close()
            file = try CommandIndexFile.create(directory: directory)
            var running: (id: String, first: UInt64)? = nil
            try scanViews(from: 1, through: opened.lastSequence) { view in
                guard let id = view.commandId else { running = nil; return true }
                let first = running?.id == id ? running!.first : view.sequence
                try file.upsert(id, first: first, last: view.sequence)
                running = (id, first)
                return true
            }
        }
        if let full = opened.commandIndexError as? EventLogError {
            // The disk filled while the tail was indexed: the file keeps its mark (the next open
            // indexes the tail again) and the tail's commands are kept in memory meanwhile.
            commands.install(file, unindexed: opened.unindexedCommands, failure: full)
            return
        }
        do {
            try file.checkpoint(through: opened.lastSequence, hash: opened.lastHash)
        } catch let full as EventLogError where Self.isStorageFull(full) {
            commands.install(file, unindexed: [:], failure: full)
            return
        }
        commands.install(file)
    }

    /// Whether `error` is ``EventLogError/storageFull(path:operation:errno:)``.
    static func isStorageFull(_ error: Error) -> Bool {
        if case .storageFull? = error as? EventLogError { return true }
        return false
    }
}

/// The command index as start-up finds it, before the log's scan: the file the scan fills (with the
/// commands after its mark) and why it had to be made afresh.
final class CommandIndexOpening: @unchecked Sendable {
    private var file: CommandIndexFile?
    /// The scan indexes the commands after this sequence (`.max`: none).
    let after: UInt64
    /// Why the file was made afresh ("was missing", "was damaged (...)"), nil when it was opened.
    let remade: String?

    /// A read-only store's: no index.
    init() {
        file = nil
        after = .max
        remade = nil
    }

    /// Opens `commands.idx` in `directory`, or makes an empty one when it is missing or damaged (the
    /// scan then indexes every command).
    init(directory: String) throws {
        switch try CommandIndexFile.open(directory: directory) {
        case .opened(let found):
            (file, after, remade) = (found, found.mark, nil)
        case .missing:
            (file, after, remade) = (try CommandIndexFile.create(directory: directory), 0, "was missing")
        case .damaged(let why):
            (file, after, remade) = (try CommandIndexFile.create(directory: directory), 0, "was damaged (\(why))")
        }
    }

    /// The file, for the scan to fill.
    var scanned: CommandIndexFile? { file }

    func takeFile() -> CommandIndexFile? {
        defer { file = nil }
        return file
    }

    /// Why an index that opened cannot be used after the scan (it runs ahead of the log or belongs
    /// to another chain); nil when it can.
    func mustRebuild(_ opened: LogRecovery.Opened) -> String? {
        guard let file, remade == nil else { return nil }
        if file.mark > opened.lastSequence {
            return "did not match the log (it is complete through sequence \(file.mark) but the log ends at \(opened.lastSequence))"
        }
        if opened.hashAtCommandMark != file.markHash {
            return "did not match the log (its chain hash at sequence \(file.mark) is not the log's)"
        }
        return nil
    }

    /// The line ``SegmentStore/openingNotes`` says when the index was rebuilt by a scan (nothing
    /// for a new log).
    func note(_ opened: LogRecovery.Opened, rebuild: String?) -> String? {
        guard file != nil, let why = rebuild ?? remade else { return nil }
        if rebuild == nil && opened.lastSequence == 0 { return nil }
        let records = opened.lastSequence == 1 ? "1 record" : "\(opened.lastSequence) records"
        return "the command index \(CommandIndexFile.fileName) \(why): rebuilt by a scan of \(records)"
    }
}
