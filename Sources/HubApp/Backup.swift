import Crypto
import Foundation
import HubAudit
import HubEngine
import HubJSON
import HubLog

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Live backups of a data directory, their check, and restores (docs/operations.md, Backups).
///
/// A backup is a directory (or a `.tar` stream of one) laid out as the data directory, with a
/// ``BackupManifest`` (`MANIFEST.json`) naming every file's size and SHA-256 and the log's head.
/// It is taken beside a running hub without the writer's lock: the log is opened read-only, its
/// head sequence fixed at that moment, and each segment copied up to the byte end of its last record
/// at or before the head (not the zeros a running writer keeps ahead). The audit heads and tree
/// are cut to that head too, so nothing in the backup is newer than its log. Left out, for the
/// restored hub to rebuild: the snapshots (`snapshots/`, but for its `seal.key`), the history files (`history/`), the
/// command index (`log/commands.idx`), the recovery checkpoint (`log/recovery.ckpt`) and the lock
/// files.
public enum Backup {
    /// The manifest's name at the backup's top.
    public static let manifestName = "MANIFEST.json"

    /// What a backup leaves out, by path relative to the data directory, and why (also written in
    /// the manifest's `skipped`).
    static func skipReason(_ path: String, segmentLog: Bool) -> String? {
        if path.hasPrefix("snapshots/"), path != "snapshots/seal.key" { return skipped[0] }
        if path.hasPrefix("history/") { return skipped[1] }
        if segmentLog && path == "log/commands.idx" { return skipped[2] }
        if segmentLog && path == "log/recovery.ckpt" { return skipped[3] }
        if path == "audit/LOCK" || (segmentLog && path == "log/LOCK") { return skipped[4] }
        return nil
    }

    /// What every backup leaves out (the manifest's `skipped`, with any symbolic link found).
    static let skipped = [
        "snapshots/ (all but seal.key): rebuilt from the log", "history/: rebuilt from the log",
        "log/commands.idx: rebuilt from the log at the first start", "log/recovery.ckpt: rebuilt from the log at the first start",
        "log/LOCK and audit/LOCK: made by the process that opens them"
    ]

    // MARK: Taking a backup

    /// Takes a backup of the data directory `paths` names into `destination`: a new (or empty)
    /// directory, a `.tar` file (written as `<file>.partial` and renamed when complete), or `-`
    /// for a `.tar` stream on standard output.
    ///
    /// - Parameters:
    ///   - paths: The data directory and its log (a segment log in `<data-dir>/log`, or PostgreSQL:
    ///     then the backup holds the data directory only, and the manifest says so).
    ///   - destination: Where to write it.
    ///   - now: When it is taken (written in the manifest).
    /// - Returns: The manifest written.
    /// - Throws: `HubError` naming what and where (a destination that exists and is not empty, a
    ///   destination inside the data directory, a file that changed under the copy), or what the
    ///   log throws when it cannot be opened.
    public static func take(paths: HubPaths, to destination: String, now: Date = Date()) async throws -> BackupManifest {
        let source = paths.dataDirectory
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw HubError.usage("no data directory at \(source)")
        }
        if destination != "-" {
            let sourceReal = realPath(source)
            let parent = (destination as NSString).deletingLastPathComponent
            let destinationReal = realPath(parent.isEmpty ? "." : parent) + "/" + (destination as NSString).lastPathComponent
            if destinationReal == sourceReal || destinationReal.hasPrefix(sourceReal + "/") {
                throw HubError.usage("\(destination) lies inside the data directory \(source): write the backup elsewhere")
            }
        }
        let segmentLog = paths.logURL == nil
        // The log first: its head fixes the backup's point in time, and everything else is cut to it.
        let log = try await LogPoint.fix(paths: paths)
        var manifest = BackupManifest(
            taken: HeadTime.format(unixSeconds: Int64(now.timeIntervalSince1970)), dataDirectory: realPath(source),
            postgres: segmentLog ? nil : paths.logDescription, headSequence: log.head, headHash: LogVerifier.hex(log.headHash))
        let sink: any BackupSink
        if isTar(destination) {
            sink = try TarSink(file: destination == "-" ? nil : destination)
        } else {
            sink = try DirectorySink(destination)
        }
        do {
            var skipped = Self.skipped
            for file in try listFiles(source) {
                if skipReason(file.path, segmentLog: segmentLog) != nil { continue }
                let full = source + "/" + file.path
                if file.isLink {
                    skipped.append("\(file.path): a symbolic link, not followed")
                    continue
                }
                let entry: BackupManifest.File?
                if segmentLog, let end = log.segmentEnds[file.path] {
                    entry = try copy(full, as: file.path, limit: end, exact: true, into: sink)
                } else if segmentLog, file.path.hasPrefix("log/"), LogPoint.segmentFirst(file.path) != nil {
                    continue  // a segment begun after the head: its records are not in the backup
                } else if file.path == "audit/heads" {
                    let kept = try headsUpTo(log.head, path: full)
                    manifest.auditHeads = kept.reduce(0) { $0 + ($1 == 10 ? 1 : 0) }
                    entry = try copyBytes(kept, as: file.path, mode: file.mode, into: sink)
                } else if file.path == "audit/tree" {
                    entry = try copy(full, as: file.path, limit: treeBytes(upTo: log.head, path: full), exact: false, into: sink)
                } else {
                    entry = try copy(full, as: file.path, limit: nil, exact: false, into: sink)
                }
                if let entry { manifest.files.append(entry) }
            }
            manifest.skipped = skipped
            _ = try copyBytes(Array(manifest.text.utf8), as: manifestName, mode: 0o644, into: sink)
            try sink.finish()
        } catch {
            sink.abandon()
            throw error
        }
        return manifest
    }

    /// The log's point in time: its head and, for a segment log, each segment's copied length.
    struct LogPoint {
        var head: UInt64
        var headHash: [UInt8]
        /// `log/<segment>` to the byte end of its last record at or before the head.
        var segmentEnds: [String: Int] = [:]

        /// The first sequence of a segment file's path (`log/00000000000000000001.seg`), or nil.
        static func segmentFirst(_ path: String) -> UInt64? {
            let name = path.hasPrefix("log/") ? String(path.dropFirst(4)) : path
            guard name.count == 24, name.hasSuffix(".seg") else { return nil }
            return UInt64(name.prefix(20))
        }

        /// Opens the log read-only and fixes its head; the newest segment copied is synced, so every
        /// record up to the head is durable in the data directory too.
        static func fix(paths: HubPaths) async throws -> LogPoint {
            guard paths.logURL != nil else { return try fixSegments(directory: paths.log) }
            let store = try await paths.openEventStore(readOnly: true)
            let head = store.lastSequence
            let hash: [UInt8]?
            do { hash = head == 0 ? RecordFormat.genesisHash : try await store.chainHash(at: head) } catch {
                await store.close()
                throw error
            }
            await store.close()
            guard let hash else { throw HubError.failed("\(paths.logDescription) has no chain hash at its last record \(head)") }
            return LogPoint(head: head, headHash: hash)
        }

        /// Opens the segment log read-only. Opening beside a writer can meet a frame the writer
        /// is writing at that instant, which reads as damage; it is opened again (up to 20 times,
        /// 50 ms apart) before the damage is believed.
        static func openBesideWriter(_ directory: String) throws -> SegmentStore {
            var attempt = 0
            while true {
                do { return try SegmentStore(directory: directory, readOnly: true) } catch let error as EventLogError {
                    guard case .corrupt = error, attempt < 20 else { throw error }
                    attempt += 1
                    usleep(50_000)
                }
            }
        }

        static func fixSegments(directory: String) throws -> LogPoint {
            guard FileIO.exists(directory) else {
                throw HubError.usage("no event log in \(directory) (a data directory holds one once `hub run` or `hub import` made it)")
            }
            let store = try openBesideWriter(directory)
            defer { store.close() }
            let head = store.lastSequence
            let segments = try FileIO.listDirectory(directory).compactMap { name in segmentFirst(name).map { (name, $0) } }
                .filter { $0.1 <= max(head, 1) }.sorted { $0.1 < $1.1 }
            var point = LogPoint(head: head, headHash: RecordFormat.genesisHash)
            for (i, (name, first)) in segments.enumerated() {
                let last = i + 1 < segments.count ? segments[i + 1].1 - 1 : head
                var end = RecordFormat.segmentHeaderSize
                if first <= last {
                    try store.scanViews(from: first, through: last) { view in
                        end += RecordFormat.frameHeaderSize + view.body.count
                        if view.sequence == head { point.headHash = view.hash }
                        return true
                    }
                }
                point.segmentEnds["log/" + name] = end
            }
            if let newest = segments.last {
                // The records up to the head were written by the hub; now they are synced too.
                let path = directory + "/" + newest.0
                let fd = try FileIO.openFile(path, flags: O_RDONLY)
                defer { close(fd) }
                try FileIO.dataSync(fd: fd, path: path)
            }
            return point
        }
    }

    /// The whole lines of `audit/heads` up to the first head past `head` (signed after the backup's
    /// point in time), and none cut by a write under way.
    static func headsUpTo(_ head: UInt64, path: String) throws -> [UInt8] {
        let bytes = try FileIO.readAll(path: path)
        var kept = 0
        var start = 0
        for (i, byte) in bytes.enumerated() where byte == 10 {
            let line = String(decoding: bytes[start..<i], as: UTF8.self)
            if let signed = try? SignedHead(line: line), signed.size > head { break }
            kept = i + 1
            start = i + 1
        }
        return Array(bytes[..<kept])
    }

    /// The length of `audit/tree` holding the tree of at most `head` records (whole nodes only).
    static func treeBytes(upTo head: UInt64, path: String) throws -> Int {
        let length = try FileIO.size(path: path)
        guard length >= 32 else { return length }
        let stored = UInt64((length - 32) / 32)
        var n = min(stored / 2 + 64, head)
        while n > 0, TreeFile.nodeCount(n) > stored { n -= 1 }
        return 32 + Int(TreeFile.nodeCount(n)) * 32
    }

    /// Copies a file of the data directory into the sink: at most `limit` bytes (exactly, when
    /// `exact`), or the whole file as it is when it is opened. A file gone meanwhile is left out.
    static func copy(_ path: String, as name: String, limit: Int?, exact: Bool, into sink: any BackupSink) throws -> BackupManifest.File? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw EventLogError.io(path: path, operation: "open", errno: errno)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw EventLogError.io(path: path, operation: "fstat", errno: errno) }
        let size = limit.map { min($0, Int(st.st_size)) } ?? Int(st.st_size)
        if exact, let limit, size < limit {
            throw HubError.failed("\(path) holds \(st.st_size) bytes, fewer than the \(limit) its records up to the backup's head take")
        }
        let mode = Int(st.st_mode & 0o7777)
        try sink.begin(path: name, size: size, mode: mode)
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var done = 0
        while done < size {
            let want = min(buffer.count, size - done)
            let got = try buffer.withUnsafeMutableBytes {
                try FileIO.read(fd: fd, path: path, into: UnsafeMutableRawBufferPointer(rebasing: $0[..<want]), at: done)
            }
            guard got == want else {
                throw HubError.failed("\(path) shrank while it was copied (\(done + got) of \(size) bytes): take the backup again")
            }
            try buffer.withUnsafeBytes { raw in
                let chunk = UnsafeRawBufferPointer(rebasing: raw[..<want])
                hasher.update(bufferPointer: chunk)
                try sink.write(chunk)
            }
            done += want
        }
        try sink.end()
        return BackupManifest.File(path: name, size: size, sha256: hexDigest(hasher.finalize()), mode: mode)
    }

    static func copyBytes(_ bytes: [UInt8], as name: String, mode: Int, into sink: any BackupSink) throws -> BackupManifest.File {
        try sink.begin(path: name, size: bytes.count, mode: mode)
        try bytes.withUnsafeBytes { try sink.write($0) }
        try sink.end()
        return BackupManifest.File(path: name, size: bytes.count, sha256: hexDigest(SHA256.hash(data: bytes)), mode: mode)
    }

    /// A regular file (or symbolic link) found under a directory.
    struct Found {
        var path: String
        var mode: Int
        var isLink: Bool
    }

    /// Every regular file and symbolic link under `root`, relative to it, in name order.
    static func listFiles(_ root: String) throws -> [Found] {
        var found: [Found] = []
        func walk(_ relative: String) throws {
            let directory = relative.isEmpty ? root : root + "/" + relative
            for name in try FileIO.listDirectory(directory) {
                let path = relative.isEmpty ? name : relative + "/" + name
                var st = stat()
                guard lstat(root + "/" + path, &st) == 0 else {
                    if errno == ENOENT { continue }
                    throw EventLogError.io(path: root + "/" + path, operation: "lstat", errno: errno)
                }
                switch st.st_mode & S_IFMT {
                case S_IFDIR: try walk(path)
                case S_IFREG: found.append(Found(path: path, mode: Int(st.st_mode & 0o7777), isLink: false))
                case S_IFLNK: found.append(Found(path: path, mode: 0, isLink: true))
                default: continue  // sockets, pipes: nothing to copy
                }
            }
        }
        try walk("")
        return found
    }

    // MARK: Checking a backup

    /// What ``check(_:heads:)`` found.
    public struct CheckReport: Sendable {
        /// The manifest, when it could be read.
        public var manifest: BackupManifest?
        /// What is wrong, one sentence each naming the file; empty when the backup is sound.
        public var problems: [String] = []
        /// Notes that are not faults (heads signed after the backup was taken, a PostgreSQL log).
        public var notes: [String] = []
        /// Signed heads in the backup's `audit/heads` that match its log.
        public var headsMatched = 0

        /// One line: `backup sound: ...`, or nil when there are problems.
        public var soundLine: String? {
            guard problems.isEmpty, let manifest else { return nil }
            let bytes = manifest.files.reduce(0) { $0 + $1.size }
            let log =
                manifest.postgres == nil
                ? "log up to record \(manifest.headSequence) (head hash \(manifest.headHash)), \(headsMatched) signed head(s) match it"
                : "data directory of a PostgreSQL log at record \(manifest.headSequence) (head hash \(manifest.headHash)), its log in pg_dump"
            return "backup sound: \(manifest.files.count) files, \(bytes) bytes, \(log); taken \(manifest.taken)"
        }
    }

    /// Checks a backup without opening a hub: every file's size and SHA-256 against the manifest,
    /// files missing or not in it, the log copy's frames and hash chain up to the manifest's head,
    /// and the audit tree and heads against the log copy. A `.tar` (or `-`, standard input) is
    /// unpacked into a temporary directory first.
    ///
    /// - Parameters:
    ///   - source: The backup directory, a `.tar` file, or `-`.
    ///   - heads: Signed heads kept elsewhere (an auditor's, the broker's retained one): each is
    ///     checked against the backup, and one past its head is named as missing from it.
    /// - Returns: The report (its problems empty when the backup is sound).
    /// - Throws: When the source cannot be read at all (no such file, not a tar stream).
    public static func check(_ source: String, heads: [SignedHead] = []) async throws -> CheckReport {
        if isTar(source) {
            let temporary = try makeTemporaryDirectory()
            defer { removeTree(temporary) }
            try unpackTar(source, into: temporary)
            return try await check(directory: temporary, heads: heads, named: source)
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) else {
            throw HubError.usage("no backup at \(source)")
        }
        guard isDirectory.boolValue else {
            throw HubError.usage("\(source) is neither a backup directory nor a .tar file")
        }
        return try await check(directory: source, heads: heads, named: source)
    }

    /// Whether `source` names a tar stream: `-` or a name ending in `.tar`.
    static func isTar(_ source: String) -> Bool { source == "-" || source.hasSuffix(".tar") }

    static func check(directory: String, heads: [SignedHead], named: String) async throws -> CheckReport {
        var report = CheckReport()
        let manifestPath = directory + "/" + manifestName
        guard FileIO.exists(manifestPath) else {
            report.problems.append("\(named): no \(manifestName) (not a hub backup, or one that did not finish)")
            return report
        }
        let manifest: BackupManifest
        do { manifest = try BackupManifest(parsing: FileIO.readAll(path: manifestPath)) } catch {
            report.problems.append("\(manifestName): \(error)")
            return report
        }
        report.manifest = manifest
        var listed = Set<String>()
        for file in manifest.files {
            listed.insert(file.path)
            let path = directory + "/" + file.path
            guard FileIO.exists(path) else {
                report.problems.append("\(file.path): missing (the manifest lists it, \(file.size) bytes)")
                continue
            }
            let (size, digest) = try sum(path)
            if size != file.size {
                report.problems.append("\(file.path): \(size) bytes, the manifest says \(file.size)")
            } else if digest != file.sha256 {
                report.problems.append("\(file.path): SHA-256 differs from the manifest")
            }
        }
        for found in try listFiles(directory) where found.path != manifestName && !listed.contains(found.path) {
            report.problems.append("\(found.path): not in the manifest")
        }
        guard manifest.postgres == nil else {
            report.notes.append(
                "the log is in PostgreSQL (\(manifest.postgres!)): this backup holds the data directory only; the log's backup is its pg_dump, which must hold record \(manifest.headSequence) with chain hash \(manifest.headHash)"
            )
            return report
        }
        let logDirectory = directory + "/log"
        do {
            let verified = try LogVerifier.verify(directory: logDirectory)
            if verified.records != manifest.headSequence || verified.headHash != manifest.headHash {
                report.problems.append(
                    "log: the copy ends at record \(verified.records) with chain hash \(verified.headHash), the manifest says record \(manifest.headSequence) with \(manifest.headHash)"
                )
            } else if let tail = verified.incompleteTail {
                report.problems.append("log: \(tail)")
            }
        } catch {
            report.problems.append("log: \(error)")
            return report
        }
        guard report.problems.isEmpty else { return report }
        // The audit tree and heads against the log copy, and heads kept elsewhere against both.
        let store: SegmentStore
        do { store = try SegmentStore(directory: logDirectory, readOnly: true) } catch {
            report.problems.append("log: \(error)")
            return report
        }
        defer { store.close() }
        let auditDirectory = AuditTrail.directory(dataDirectory: directory)
        if FileIO.exists(auditDirectory + "/tree") || FileIO.exists(auditDirectory + "/heads") {
            let audit = try await AuditVerifier.check(store: store, dataDirectory: directory, leaf: AuditLeaf.bytes)
            report.problems += audit.problems.map { "audit: \($0)" }
            report.headsMatched = audit.heads
        }
        if !heads.isEmpty {
            let findings = try await compare(heads, store: store, auditDirectory: auditDirectory, what: "the backup")
            report.problems += findings.problems
            report.notes += findings.notes
        }
        return report
    }

    /// Compares heads kept elsewhere with a log: signed by the data directory's key, and for a head
    /// the log reaches, the log's tree of its size has its root; a head past the log's end is
    /// named as missing (its records were appended after the log's last record).
    ///
    /// - Returns: Problems (a head not this hub's, or one the log contradicts) and notes (heads
    ///   past the end).
    public nonisolated(nonsending) static func compare(
        _ heads: [SignedHead], store: any EventStore, auditDirectory: String, what: String
    ) async throws -> (problems: [String], notes: [String]) {
        var problems: [String] = []
        var notes: [String] = []
        let keyPath = auditDirectory + "/key"
        let key = FileIO.exists(keyPath) ? try AuditKey.load(path: keyPath, create: false).publicKey : nil
        let end = store.lastSequence
        var roots: [UInt64: [UInt8]] = [:]
        let sizes = Set(heads.map(\.size).filter { $0 <= end })
        if let through = sizes.max(), through > 0 {
            var builder = RootBuilder()
            try await store.readViews(from: 1, through: through) { view in
                builder.append(Merkle.leafHash(AuditLeaf.bytes(view)))
                if sizes.contains(view.sequence) { roots[view.sequence] = builder.root }
                return true
            }
        }
        for head in heads {
            let name = "head of size \(head.size) signed \(head.time)"
            if let key, !head.isSigned(by: key) {
                problems.append("\(name): not signed by the audit key in \(keyPath) (another hub's head?)")
            } else if head.size > end {
                notes.append(
                    "\(name) is past the end of \(what) (record \(end)): records \(end + 1)...\(head.size) it signed are missing from \(what); heads signed from now on over records past \(end) do not extend it"
                )
            } else if let root = roots[head.size], root != head.root {
                problems.append(
                    "\(name): the tree of \(what)'s first \(head.size) records has root \(Hex.string(root)), the head signed \(Hex.string(head.root)): \(what) holds another history"
                )
            } else {
                notes.append("\(name): matches \(what)")
            }
        }
        return (problems, notes)
    }

    /// The size and SHA-256 (hex) of a file.
    static func sum(_ path: String) throws -> (Int, String) {
        let fd = try FileIO.openFile(path, flags: O_RDONLY)
        defer { close(fd) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var done = 0
        while true {
            let got = try buffer.withUnsafeMutableBytes { try FileIO.read(fd: fd, path: path, into: $0, at: done) }
            if got == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[..<got])) }
            done += got
        }
        return (done, hexDigest(hasher.finalize()))
    }

    // MARK: Restoring

    /// What a restore wrote.
    public struct Restored: Sendable {
        /// The backup's check (sound, with its notes).
        public var check: CheckReport
        /// The directory written.
        public var dataDirectory: String
    }

    /// Restores a backup into `dataDirectory`, which must be empty or not exist. The backup is
    /// unpacked into `<data-dir>/.restore-partial` and checked there as ``check(_:heads:)`` checks
    /// it; only a sound one is moved into place (the manifest stays out of the data directory).
    ///
    /// - Parameters:
    ///   - source: A backup directory, a `.tar` file, or `-` (a tar stream on standard input).
    ///   - heads: Heads kept elsewhere, compared with the backup as ``check(_:heads:)`` does.
    /// - Throws: `HubError` naming a target that is not empty, or the backup's problems (nothing is
    ///   then left in the target).
    public static func restore(_ source: String, into dataDirectory: String, heads: [SignedHead] = []) async throws -> Restored {
        var isDirectory: ObjCBool = false
        let existed = FileManager.default.fileExists(atPath: dataDirectory, isDirectory: &isDirectory)
        if existed {
            guard isDirectory.boolValue else {
                throw HubError.usage("\(dataDirectory) is not a directory: restore into a new or empty one")
            }
            let entries = try FileIO.listDirectory(dataDirectory)
            guard entries.isEmpty else {
                let shown = entries.prefix(5).joined(separator: ", ") + (entries.count > 5 ? ", ..." : "")
                throw HubError.usage(
                    "\(dataDirectory) is not empty (it holds \(shown)): a restore writes only into a new or empty directory, never over a data directory"
                )
            }
        }
        let staging = dataDirectory + "/.restore-partial"
        func clean() {
            removeTree(staging)
            if !existed { rmdir(dataDirectory) }
        }
        do {
            try FileIO.makeDirectory(dataDirectory, mode: 0o700)
            if isTar(source) {
                try unpackTar(source, into: staging)
            } else {
                guard FileManager.default.fileExists(atPath: source + "/" + manifestName) else {
                    throw HubError.usage("\(source): no \(manifestName) (not a hub backup, or one that did not finish)")
                }
                let sink = try DirectorySink(staging)
                for file in try listFiles(source) where !file.isLink {
                    _ = try copy(source + "/" + file.path, as: file.path, limit: nil, exact: false, into: sink)
                }
                try sink.finish()
            }
            let report = try await check(directory: staging, heads: heads, named: source)
            guard report.problems.isEmpty else {
                throw HubError.failed(
                    "the backup \(source) is not sound, nothing was restored into \(dataDirectory): "
                        + report.problems.joined(separator: "; "))
            }
            FileIO.remove(staging + "/" + manifestName)
            for name in try FileIO.listDirectory(staging) {
                try FileIO.rename(staging + "/" + name, dataDirectory + "/" + name)
            }
            rmdir(staging)
            try FileIO.syncDirectory(dataDirectory)
            return Restored(check: report, dataDirectory: dataDirectory)
        } catch {
            clean()
            throw error
        }
    }

    // MARK: Helpers

    static func hexDigest(_ digest: SHA256.Digest) -> String { LogVerifier.hex(Array(digest)) }

    static func realPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return (path as NSString).standardizingPath }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func makeTemporaryDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/hub-backup-check-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw EventLogError.io(path: NSTemporaryDirectory(), operation: "mkdtemp", errno: errno)
        }
        return String(cString: made)
    }

    static func removeTree(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

    /// Unpacks a tar stream (a file, or standard input for `-`) into `directory` (made, must not
    /// hold the files already).
    static func unpackTar(_ source: String, into directory: String) throws {
        let fd: Int32
        if source == "-" {
            fd = 0
        } else {
            guard FileIO.exists(source) else { throw HubError.usage("no backup at \(source)") }
            fd = try FileIO.openFile(source, flags: O_RDONLY)
        }
        defer { if fd != 0 { close(fd) } }
        let sink = try DirectorySink(directory)
        let reader = TarReader(fd: fd, name: source)
        while let header = try reader.next() {
            switch header.type {
            case .directory: continue
            case .file:
                try sink.begin(path: header.path, size: header.size, mode: header.mode)
                try reader.content(header) { try sink.write($0) }
                try sink.end()
            }
        }
        try sink.finish()
    }
}

/// The right edge of a Merkle tree built leaf by leaf (RFC 9162 hashing): its root at any size.
struct RootBuilder {
    /// Complete subtrees, largest first, with their leaf counts.
    private var edge: [(hash: [UInt8], leaves: UInt64)] = []

    mutating func append(_ leafHash: [UInt8]) {
        var node = (hash: leafHash, leaves: UInt64(1))
        while let last = edge.last, last.leaves == node.leaves {
            edge.removeLast()
            node = (Merkle.nodeHash(last.hash, node.hash), last.leaves * 2)
        }
        edge.append(node)
    }

    var root: [UInt8] {
        guard var hash = edge.last?.hash else { return Merkle.emptyRoot }
        for node in edge.dropLast().reversed() { hash = Merkle.nodeHash(node.hash, hash) }
        return hash
    }
}

/// `MANIFEST.json`: what a backup holds. One JSON object: `format` (`hub-backup/1`), `taken`
/// (ISO-8601 UTC), `data_dir` (the directory backed up), `log` (`{"kind":"segments"}`, or
/// `{"kind":"postgresql","location":...,"backed_up_by":"pg_dump"}`), `head_sequence` and
/// `head_hash` (the log's last record in the backup and its chain hash), `audit_heads` (the signed
/// heads in `audit/heads`), `skipped` (what was left out, and why), and `files`: one
/// `{"path","size","sha256","mode"}` per file, paths relative to the backup's top.
public struct BackupManifest: Sendable, Equatable {
    /// One file of the backup.
    public struct File: Sendable, Equatable {
        /// Relative to the backup's top (and to the data directory).
        public var path: String
        /// Its length in bytes.
        public var size: Int
        /// 64 lowercase hex digits.
        public var sha256: String
        /// The file's permission bits.
        public var mode: Int
    }

    /// The manifest's format name, `hub-backup/1`.
    public static let format = "hub-backup/1"
    /// When the backup was taken, ISO-8601 UTC.
    public var taken: String
    /// The data directory backed up, as given.
    public var dataDirectory: String
    /// The PostgreSQL log's location (password masked), or nil for the segment log in the backup.
    public var postgres: String?
    /// The sequence of the log's last record in the backup.
    public var headSequence: UInt64
    /// That record's chain hash, hex.
    public var headHash: String
    /// How many signed audit heads the backup holds.
    public var auditHeads = 0
    /// What was left out, and why (one sentence each).
    public var skipped: [String] = []
    /// Every file of the backup, with its size, SHA-256 and mode.
    public var files: [File] = []

    init(taken: String, dataDirectory: String, postgres: String?, headSequence: UInt64, headHash: String) {
        self.taken = taken
        self.dataDirectory = dataDirectory
        self.postgres = postgres
        self.headSequence = headSequence
        self.headHash = headHash
    }

    /// The manifest's text: one field a line, one file a line.
    public var text: String {
        let log: JSONValue =
            postgres.map { .object([("kind", "postgresql"), ("location", .string($0)), ("backed_up_by", "pg_dump")]) }
            ?? .object([("kind", "segments")])
        let fields: [(String, JSONValue)] = [
            ("format", .string(Self.format)), ("taken", .string(taken)), ("data_dir", .string(dataDirectory)), ("log", log),
            ("head_sequence", .number(Double(headSequence))), ("head_hash", .string(headHash)),
            ("audit_heads", .number(Double(auditHeads))), ("skipped", .array(skipped.map { .string($0) }))
        ]
        var out = "{\n"
        for (key, value) in fields { out += "  " + JSONValue.string(key).serialized() + ": " + value.serialized() + ",\n" }
        out += "  \"files\": [\n"
        out += files.map { file in
            "    "
                + JSONValue.object([
                    ("path", .string(file.path)), ("size", .number(Double(file.size))), ("sha256", .string(file.sha256)),
                    ("mode", .string(String(file.mode, radix: 8)))
                ]).serialized()
        }.joined(separator: ",\n")
        out += "\n  ]\n}\n"
        return out
    }

    /// Reads a manifest's text.
    ///
    /// - Throws: `HubError` naming the field that is missing or wrong.
    public init(parsing bytes: [UInt8]) throws {
        let json: JSONValue
        do { json = try JSONValue.parse(bytes) } catch { throw HubError.failed("not JSON: \(error)") }
        func string(_ key: String) throws -> String {
            guard let value = json[key]?.stringValue else { throw HubError.failed("no \"\(key)\" string") }
            return value
        }
        guard json["format"]?.stringValue == Self.format else {
            throw HubError.failed("\"format\" is \(json["format"]?.serialized() ?? "missing"), not \"\(Self.format)\"")
        }
        taken = try string("taken")
        dataDirectory = try string("data_dir")
        headHash = try string("head_hash")
        guard let head = json["head_sequence"]?.doubleValue, head >= 0 else { throw HubError.failed("no \"head_sequence\" number") }
        headSequence = UInt64(head)
        postgres = json["log"]?["kind"]?.stringValue == "postgresql" ? (json["log"]?["location"]?.stringValue ?? "") : nil
        auditHeads = Int(json["audit_heads"]?.doubleValue ?? 0)
        skipped = (json["skipped"]?.arrayValue ?? []).compactMap(\.stringValue)
        guard let list = json["files"]?.arrayValue else { throw HubError.failed("no \"files\" list") }
        files = try list.map { entry in
            guard let path = entry["path"]?.stringValue, let size = entry["size"]?.doubleValue, let sum = entry["sha256"]?.stringValue
            else { throw HubError.failed("a \"files\" entry without path, size and sha256: \(entry.serialized())") }
            guard TarHeader.safePath(path) else { throw HubError.failed("\"files\" entry \(path): not a relative path inside the backup") }
            return File(path: path, size: Int(size), sha256: sum, mode: entry["mode"]?.stringValue.flatMap { Int($0, radix: 8) } ?? 0o600)
        }
    }
}

// MARK: Where a backup is written

/// Where a backup's files go, one at a time: `begin`, `write`s of exactly `size` bytes, `end`.
protocol BackupSink: AnyObject {
    func begin(path: String, size: Int, mode: Int) throws
    func write(_ bytes: UnsafeRawBufferPointer) throws
    func end() throws
    /// Makes everything written durable (and renames a `.partial` file into place).
    func finish() throws
    /// After a failure: removes a `.partial` file (a directory keeps what was written, with no manifest).
    func abandon()
}

/// Writes the files into a directory (made when missing; it must be empty).
final class DirectorySink: BackupSink {
    let root: String
    private var fd: Int32 = -1
    private var path = ""
    private var directories: Set<String> = []

    init(_ root: String) throws {
        self.root = root
        if FileIO.exists(root) {
            let entries = try FileIO.listDirectory(root)
            guard entries.isEmpty else {
                throw HubError.usage("\(root) is not empty: a backup is written only into a new or empty directory")
            }
        }
        try FileIO.makeDirectory(root, mode: 0o700)
        directories.insert(root)
    }

    func begin(path relative: String, size: Int, mode: Int) throws {
        guard TarHeader.safePath(relative) else { throw HubError.failed("\(relative): not a relative path inside the backup") }
        path = root + "/" + relative
        let parent = (path as NSString).deletingLastPathComponent
        if !directories.contains(parent) {
            try FileIO.makeDirectory(parent, mode: 0o700)
            directories.insert(parent)
        }
        let made = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode == 0 ? 0o600 : mode))
        guard made >= 0 else {
            if errno == EEXIST { throw HubError.failed("\(relative) appears twice in the backup") }
            throw EventLogError.io(path: path, operation: "open", errno: errno)
        }
        fd = made
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws { try FileIO.writeAll(fd: fd, path: path, bytes) }

    func end() throws {
        defer {
            close(fd)
            fd = -1
        }
        try FileIO.dataSync(fd: fd, path: path)
    }

    func finish() throws {
        for directory in directories.sorted(by: { $0.count > $1.count }) { try FileIO.syncDirectory(directory) }
        var parent = (root as NSString).deletingLastPathComponent
        if parent.isEmpty { parent = "." }
        try FileIO.syncDirectory(parent)
    }

    func abandon() { if fd >= 0 { close(fd) } }
}

/// Writes the files as a ustar stream: to standard output, or to `<file>.partial`, renamed to
/// `<file>` when complete.
final class TarSink: BackupSink {
    private let fd: Int32
    private let file: String?
    private var buffer: [UInt8] = []
    private var remaining = 0
    private var padding = 0

    /// - Parameter file: The `.tar` file to write, or nil for standard output.
    init(file: String?) throws {
        self.file = file
        guard let file else {
            fd = 1
            return
        }
        guard !FileIO.exists(file) else { throw HubError.usage("\(file) already exists: a backup never overwrites a file") }
        fd = try FileIO.openFile(file + ".partial", flags: O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600)
    }

    func begin(path: String, size: Int, mode: Int) throws {
        buffer += try TarHeader.make(path: path, size: size, mode: mode, mtime: Int(Date().timeIntervalSince1970))
        remaining = size
        padding = (512 - size % 512) % 512
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        remaining -= bytes.count
        buffer += bytes
        if buffer.count >= 1 << 20 { try flush() }
    }

    func end() throws {
        precondition(remaining == 0, "a tar entry got other than its size")
        buffer += [UInt8](repeating: 0, count: padding)
    }

    func flush() throws {
        let name = file.map { $0 + ".partial" } ?? "standard output"
        try buffer.withUnsafeBytes { try FileIO.writeAll(fd: fd, path: name, $0) }
        buffer.removeAll(keepingCapacity: true)
    }

    func finish() throws {
        buffer += [UInt8](repeating: 0, count: 1024)
        try flush()
        if let file {
            try FileIO.dataSync(fd: fd, path: file + ".partial")
            close(fd)
            try FileIO.rename(file + ".partial", file)
            let parent = (file as NSString).deletingLastPathComponent
            try FileIO.syncDirectory(parent.isEmpty ? "." : parent)
        }
    }

    func abandon() {
        if let file {
            close(fd)
            FileIO.remove(file + ".partial")
        }
    }
}

// MARK: The tar format (POSIX ustar)

/// A ustar header: what a backup writes, and the part of the format it reads back.
struct TarHeader {
    enum Kind { case file, directory }
    var path: String
    var size: Int
    var mode: Int
    var type: Kind

    /// Whether `path` is a relative path that stays inside the directory it is written under.
    static func safePath(_ path: String) -> Bool {
        !path.isEmpty && !path.hasPrefix("/")
            && !path.split(separator: "/", omittingEmptySubsequences: false).contains { $0 == ".." || $0.isEmpty }
    }

    /// The 512-byte header of a regular file.
    ///
    /// - Throws: `HubError` when the path does not fit ustar's 100 + 155 bytes.
    static func make(path: String, size: Int, mode: Int, mtime: Int) throws -> [UInt8] {
        var name = Array(path.utf8)
        var prefix: [UInt8] = []
        if name.count > 100 {
            guard let cut = name.indices.filter({ name[$0] == UInt8(ascii: "/") && $0 <= 155 && name.count - $0 - 1 <= 100 }).last else {
                throw HubError.failed("\(path): the name is too long for a tar entry (ustar: 255 bytes)")
            }
            prefix = Array(name[..<cut])
            name = Array(name[(cut + 1)...])
        }
        var block = [UInt8](repeating: 0, count: 512)
        func put(_ bytes: [UInt8], at offset: Int) { for (i, b) in bytes.enumerated() { block[offset + i] = b } }
        func octal(_ value: Int, width: Int) -> [UInt8] {
            let digits = String(value, radix: 8)
            return Array((String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits).utf8) + [0]
        }
        put(name, at: 0)
        put(octal(mode, width: 8), at: 100)
        put(octal(0, width: 8), at: 108)
        put(octal(0, width: 8), at: 116)
        put(octal(size, width: 12), at: 124)
        put(octal(mtime, width: 12), at: 136)
        put(Array("        ".utf8), at: 148)
        block[156] = UInt8(ascii: "0")
        put(Array("ustar".utf8) + [0] + Array("00".utf8), at: 257)
        put(prefix, at: 345)
        let sum = block.reduce(0) { $0 + Int($1) }
        put(octal(sum, width: 7) + [UInt8(ascii: " ")], at: 148)
        return block
    }
}

/// Reads a tar stream header by header.
final class TarReader {
    let fd: Int32
    let name: String
    private var offset = 0

    init(fd: Int32, name: String) {
        self.fd = fd
        self.name = name
    }

    /// Reads exactly `count` bytes, or fewer at the stream's end.
    private func read(_ count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { readFD(fd, $0.baseAddress! + done, count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw EventLogError.io(path: name, operation: "read", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        offset += done
        if done < count { bytes.removeLast(count - done) }
        return bytes
    }

    /// The next entry's header, or nil at the end of the archive.
    func next() throws -> TarHeader? {
        let at = offset
        let block = try read(512)
        guard block.count == 512 else {
            throw HubError.failed("\(name): the tar stream ends at byte \(offset) inside a header (cut short?)")
        }
        if block.allSatisfy({ $0 == 0 }) { return nil }
        func field(_ start: Int, _ length: Int) -> String {
            String(decoding: block[start..<(start + length)].prefix { $0 != 0 }, as: UTF8.self)
        }
        func number(_ start: Int, _ length: Int) -> Int? {
            Int(field(start, length).trimmingCharacters(in: CharacterSet(charactersIn: " ")), radix: 8)
        }
        var check = block
        for i in 148..<156 { check[i] = UInt8(ascii: " ") }
        guard let stored = number(148, 8), stored == check.reduce(0, { $0 + Int($1) }) else {
            throw HubError.failed("\(name): not a tar stream (the header at byte \(at) has a wrong checksum)")
        }
        var path = field(0, 100)
        let prefix = field(345, 155)
        if !prefix.isEmpty { path = prefix + "/" + path }
        while path.hasPrefix("./") { path.removeFirst(2) }
        if path.hasSuffix("/") { path.removeLast() }
        guard let size = number(124, 12) else { throw HubError.failed("\(name): the header at byte \(at) has no size") }
        let type: TarHeader.Kind
        switch block[156] {
        case 0, UInt8(ascii: "0"): type = .file
        case UInt8(ascii: "5"): type = .directory
        default:
            throw HubError.failed(
                "\(name): entry \(path) at byte \(at) is of tar type '\(String(UnicodeScalar(block[156])))': a backup holds only files and directories"
            )
        }
        if type == .directory && (path.isEmpty || path == ".") { return TarHeader(path: ".", size: 0, mode: 0, type: .directory) }
        guard TarHeader.safePath(path) else {
            throw HubError.failed("\(name): entry \(path) at byte \(at) is not a relative path inside the backup")
        }
        return TarHeader(path: path, size: size, mode: number(100, 8) ?? 0o600, type: type)
    }

    /// Reads an entry's content (and its padding), in pieces.
    func content(_ header: TarHeader, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        var left = header.size
        while left > 0 {
            let piece = try read(min(left, 1 << 20))
            guard !piece.isEmpty else { throw HubError.failed("\(name): the tar stream ends inside \(header.path) (cut short?)") }
            try piece.withUnsafeBytes { try body($0) }
            left -= piece.count
        }
        let padding = (512 - header.size % 512) % 512
        if padding > 0 { _ = try read(padding) }
    }
}

/// `read(2)`, under a name that a type's own `read` does not hide.
private func readFD(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Darwin.read(fd, buffer, count)
    #endif
}
