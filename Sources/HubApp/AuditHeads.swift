import Crypto
import Foundation
import HubAudit
import HubEngine
import HubLog
import HubMQTT
import Logging
import ServiceLifecycle

/// Keeps the Merkle tree over the log (`<data-dir>/audit/tree`) up with the log, adding records in
/// memory as they become durable, and signs a tree head with the hub's key (made on first start)
/// at most every `audit_head_seconds` while records come (at the log's next write moment after
/// it), and when the hub stops: the tree's new nodes are written to its file, the head appended to
/// `audit/heads` and published retained on `<base>/audit/head` (docs/audit.md). A tree that is not this log's (a restored older backup) is
/// set aside and rebuilt, and said. The audit never stops the hub: a fault is said and the hub runs
/// on without new heads. The tree's work (rendering each record's leaf, hashing, writing) runs on
/// the ``LowPriorityExecutor``'s thread (nice 19): the tree follows the log with the CPU the hub
/// leaves, and takes little from an append or a command.
package struct AuditHeads: Service {
    let store: any EventStore
    let dataDirectory: String
    let every: Duration
    let surface: MQTTSurface?
    let logger: Logger

    /// `<base>/audit/head`.
    var topic: String? { surface.map { $0.topics.base + "/audit/head" } }

    package init(store: any EventStore, dataDirectory: String, every: Duration, surface: MQTTSurface?, logger: Logger) {
        self.store = store
        self.dataDirectory = dataDirectory
        self.every = every
        self.surface = surface
        self.logger = logger
    }

    package func run() async throws {
        try await withTaskExecutorPreference(LowPriorityExecutor.shared) { try await follow() }
    }

    private func follow() async throws {
        let signer: Signer
        do {
            let trail = try AuditTrail(dataDirectory: dataDirectory, readOnly: false)
            let key = try AuditKey.load(path: trail.keyPath, create: true)
            try await start(trail)
            signer = Signer(trail: trail, key: Array(key.rawRepresentation), store: store, surface: surface, topic: topic)
        } catch {
            logger.warning("audit: tree heads are not signed: \(error)")
            try? await gracefulShutdown()  // a service that returns would stop the hub
            return
        }
        do {
            try await cancelWhenGracefulShutdown { [every, store] in
                try await signer.publishNewest()  // a long log not in the tree yet is added here, and a stop cuts it short
                var lastSigned = ContinuousClock.now
                while true {
                    try await store.waitForDurable(after: signer.trail.tree.size)
                    // The tree follows every durable append in memory; a head is signed at most
                    // every `every`, and the tree's file written with it.
                    let due = lastSigned + every
                    while true {
                        try await signer.catchUp(write: false)
                        if ContinuousClock.now >= due { break }
                        // A batch at a time, at most every `treeBatch`: following each append alone
                        // halved a single writer's appends in release (`hub-bench audit`).
                        try await Task.sleep(until: min(due, .now + Self.treeBatch))
                        try await Self.appendOrTime(store, after: signer.trail.tree.size, until: due)
                    }
                    // At the log's next write moment when it holds records back: the tree's pages
                    // and the head's sync then share that moment's journal commit, instead of a
                    // commit of their own (docs/operations.md, What it costs an SD card).
                    if store.lastSequence > store.durableSequence { try await store.waitForDurable(after: store.durableSequence) }
                    lastSigned = ContinuousClock.now
                    try await signer.catchUpAndSign()
                }
            }
        } catch is CancellationError {
        } catch {
            logger.warning("audit: tree heads are not signed until the hub stops: \(error)")
            try? await gracefulShutdown()
        }
        // The hub stops: a last head over the records appended so far (at most 65,536 more added
        // first, so a stop is never held up; the next start adds the rest), the observations the
        // log holds for its next write moment written first (in a task of its own: this one may
        // be cancelled, and the log is still open).
        try? await Task { [store] in try await store.makeDurable() }.value
        do { try await signer.catchUpAndSign(limit: 65_536) } catch {
            logger.warning("audit: the tree head could not be signed at shutdown: \(error)")
        }
    }

    /// The tree adds the records appended meanwhile at most this often (and whenever a head is signed).
    static let treeBatch: Duration = .seconds(1)

    /// Returns when the log holds a record after `sequence`, or at `deadline`, whichever is first.
    static func appendOrTime(_ store: any EventStore, after sequence: UInt64, until deadline: ContinuousClock.Instant) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.waitForDurable(after: sequence) }
            group.addTask { try await Task.sleep(until: deadline) }
            try await group.next()
            group.cancelAll()
        }
    }

    /// A tree that is not this log's is set aside and rebuilt; heads signed over it no longer match
    /// the log, which `hub verify` names.
    private func start(_ trail: AuditTrail) async throws {
        guard let misfit = try await trail.misfit(store: store, leaf: AuditLeaf.bytes) else {
            if trail.tree.size == 0 && store.lastSequence > 0 {
                // A log written before the audit tree existed (or whose tree was removed).
                logger.info(
                    "audit: \(trail.directory) holds no Merkle tree yet: building it from the log's \(store.lastSequence) records")
            }
            return
        }
        let name = try trail.setAsideTree(unixSeconds: Int64(Date().timeIntervalSince1970))
        logger.warning(
            "audit: the Merkle tree in \(trail.directory) is not this log's (\(misfit)); set aside as \(name) and rebuilt from the log: heads signed before do not match it (hub verify names them)"
        )
    }

    /// Brings the tree up to the log a slice at a time (other tasks run between) and signs.
    private struct Signer: Sendable {
        let trail: AuditTrail
        /// The signing key's raw bytes (the key type is not Sendable).
        let key: [UInt8]
        let store: any EventStore
        let surface: MQTTSurface?
        let topic: String?

        /// Adds the log's new records to the tree (at most `limit`), 4,096 at a time with other
        /// tasks between, and writes them to its file unless `write` is false.
        func catchUp(limit: UInt64 = .max, write: Bool = true) async throws {
            var added: UInt64 = 0
            while added < limit {
                let step = try await trail.catchUp(store: store, leaf: AuditLeaf.bytes, limit: min(4096, limit - added), write: write)
                guard step > 0 else { return }
                added += step
                await Task.yield()
            }
        }

        /// Signs and publishes a head when the tree grew since the newest one.
        ///
        /// - Returns: Whether it signed one.
        @discardableResult
        func catchUpAndSign(limit: UInt64 = .max) async throws -> Bool {
            try await catchUp(limit: limit)
            let newest = try AuditTrail.newestHead(directory: trail.directory)
            guard trail.tree.size > 0, trail.tree.size != newest?.size else { return false }
            publish(
                try trail.signHead(
                    key: try Curve25519.Signing.PrivateKey(rawRepresentation: key), unixSeconds: Int64(Date().timeIntervalSince1970)))
            return true
        }

        /// At start: a head over what the log holds, or the newest one published again.
        func publishNewest() async throws {
            if try await catchUpAndSign() { return }
            if let newest = try AuditTrail.newestHead(directory: trail.directory) { publish(newest) }
        }

        func publish(_ head: SignedHead) {
            if let topic { surface?.publishOrLog(topic, Array(head.line.utf8)) }
        }
    }
}

/// Each record's leaf in the audit's Merkle tree: its `hub export` line, without the newline.
public enum AuditLeaf {
    /// The leaf bytes of `view`: its `hub export` line without the newline.
    public static func bytes(_ view: RecordView) -> [UInt8] { EventLines.exportLineBytes(view) }
}
