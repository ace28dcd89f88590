import HubDomain
import HubLog

/// `hub verify`'s check of the snapshots: each must read soundly, carry the data directory's seal,
/// record the chain hash the log has at its sequence, and hold exactly the read models that folding
/// the log up to that sequence gives. The last check catches even a forgery made with the seal key
/// and a correct chain hash. Nothing is changed: a bad snapshot is named, and the hub sets it aside
/// when it next starts (or, for one only the re-fold catches, the operator does).
public enum SnapshotAudit {
    /// What the check found for one snapshot file.
    public struct Finding: Sendable {
        /// The snapshot file's name in `<data-dir>/snapshots`.
        public var name: String
        /// The sequence it covers, when the file could be read.
        public var sequence: UInt64?
        /// Why it does not match the log, or nil when it does (or was not compared: see ``skipped``).
        public var problem: String?
        /// Why its content was not compared with the log (a read-model format this hub version
        /// ignores), or nil when it was.
        public var skipped: String? = nil
    }

    /// Checks every snapshot in the data directory against the log.
    ///
    /// - Parameters:
    ///   - paths: The data directory.
    ///   - openStore: Opens the log (read-only). It is called after the snapshot files are listed,
    ///     so beside a running hub the log holds every sequence a listed snapshot covers.
    /// - Returns: One finding per snapshot file, oldest first, and whether seals were checked (a
    ///   read-only look needs a readable `seal.key`).
    /// - Throws: What reading the log throws; ``EventLogError/io(path:operation:errno:)`` naming
    ///   the snapshots directory when it is there and cannot be listed (never read as "no snapshots").
    public static func check(
        paths: HubPaths, openStore: () async throws -> any EventStore
    ) async throws -> (findings: [Finding], sealsChecked: Bool) {
        guard FileIO.exists(paths.snapshots) else { return ([], true) }
        let snapshots = try SnapshotStore(directory: paths.snapshots, readOnly: true)
        let names = try snapshots.names()
        guard !names.isEmpty else { return ([], true) }
        let store = try await openStore()
        var findings: [Finding] = []
        var folded = HubState(foldsHistory: false)
        for name in names {
            let snapshot: SnapshotStore.Snapshot
            switch snapshots.read(name) {
            case .failure(.unreadable) where !FileIO.exists(paths.snapshots + "/" + name):
                continue  // pruned by a running hub meanwhile
            case .failure(let problem): findings.append(Finding(name: name, problem: problem.description)); continue
            case .success(let read): snapshot = read
            }
            var finding = Finding(name: name, sequence: snapshot.sequence)
            if let problem = SnapshotStore.bindingProblem(snapshot, logHash: try await store.chainHash(at: snapshot.sequence)) {
                finding.problem = problem
            } else if let restored = Hub.decodeSnapshot(snapshot.bytes) {
                if folded.lastSequence > snapshot.sequence { folded = HubState(foldsHistory: false) }
                try await Hub.fold(store: store, into: &folded, through: snapshot.sequence)
                if restored != folded {
                    finding.problem =
                        "its read models differ from the log folded to sequence \(snapshot.sequence) "
                        + "(the content was altered, and the seal and chain hash made to fit)"
                }
            } else {
                finding.skipped = "another read-model format, which this hub version ignores"
            }
            findings.append(finding)
        }
        return (findings, snapshots.checksSeals)
    }
}
