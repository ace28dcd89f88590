import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubAudit
import HubBench
import HubEngine
import HubHTTP
import HubHistory
import HubLog
import HubMQTT
import Logging

/// `hub-bench audit`: what the Merkle tree over the log costs (docs/audit.md): appends with the
/// running hub's tree follower beside them against appends without, the follower's own rate, and
/// inclusion and consistency proofs from a tree of millions of records.
struct AuditBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "The audit tree's costs: appends with and without it, leaves a second, proof times at a large size, bytes a record.")

    @Option(help: "Appends by one writer, one event each, awaited one at a time (as hub-bench log).") var sequential = 5_000
    @Option(help: "Appends by the concurrent writers in total (as hub-bench log).") var concurrent = 20_000
    @Option(help: "Concurrent writers.") var writers = 64
    @Option(help: "Runs of the append phases with and without the tree, alternating.") var runs = 3
    @Option(help: "Records whose leaves are rendered and hashed for the follower's rate.") var leaves = 200_000
    @Option(help: "Leaves of the synthetic tree the proofs are timed on.") var size = 10_000_000
    @Option(help: "Proofs of each kind timed.") var proofs = 2_000
    @Option(help: "Where to put the logs and the tree (removed afterwards).") var dir = "./hub-bench-audit"
    @Option(help: "Keep the synthetic tree in this file (made when missing, used when it holds --size leaves) instead of in --dir.")
    var tree: String?

    func run() async throws {
        try await Console.guarded {
            let root = try Bench.freshDirectory(dir)
            defer { try? FileManager.default.removeItem(atPath: root) }
            print(machineDescription(dataDirectory: root) + "\n")
            if runs > 0 { try await appends(root) }
            if leaves > 0 { try await follower(root) }
            if size > 0 { try proofTimes(root) }
        }
    }

    /// Phases a) and b) of `hub-bench log` on a fresh segment log, alternately without and with
    /// a tree follower doing what the running hub's `AuditHeads` does.
    func appends(_ root: String) async throws {
        let config = LogBenchmark.Configuration(
            replayEventCount: sequential + concurrent, sequentialAppends: sequential,
            concurrentWriters: writers, concurrentAppendsTotal: concurrent, bulkBatchSize: 100)
        var rows: [(Bool, LogBenchmarkResult)] = []
        for run in 0..<runs * 2 {
            let withTree = run % 2 == 1
            let directory = root + "/log-\(run)"
            let store = try SegmentStore(directory: directory + "/log")
            // The running hub's own follower (tree on the idle thread, heads at most every 300 s
            // as the default audit_head_seconds, and one when it stops).
            let follower =
                withTree
                ? Task {
                    try await AuditHeads(
                        store: store, dataDirectory: directory, every: .seconds(300), surface: nil,
                        logger: Logger(label: "hub-bench.audit")
                    ).run()
                } : nil
            let result = try await LogBenchmark(configuration: config, workload: DomainWorkload.make()).run(
                store: store, label: withTree ? "with tree" : "without", progress: { _ in }, replay: { _ in })
            if let follower {
                // Stopping it adds what the tree lacks and signs a head over the whole log.
                follower.cancel()
                try await follower.value
                let size = try AuditTrail.newestHead(directory: AuditTrail(dataDirectory: directory, readOnly: true).directory)?.size
                guard size == store.lastSequence else {
                    throw ValidationError("the tree follower stopped at \(size ?? 0) of \(store.lastSequence) records")
                }
            }
            store.close()
            rows.append((withTree, result))
        }
        func rate(_ value: Double?) -> String { value.map { String(format: "%.0f", $0) } ?? "-" }
        print(
            "Appends (hub-bench log's phases a and b, --sequential \(sequential) --concurrent \(concurrent) --writers \(writers)), alternating:\n"
        )
        print("| Run | Tree | 1 writer, appends/s | \(writers) writers, appends/s |")
        print("|---|---|---:|---:|")
        for (i, (withTree, result)) in rows.enumerated() {
            print(
                "| \(i + 1) | \(withTree ? "yes" : "no") | \(rate(result.sequential.appendsPerSecond)) | \(rate(result.concurrent.appendsPerSecond)) |"
            )
        }
        func median(_ values: [Double]) -> Double {
            let sorted = values.sorted(), mid = sorted.count / 2
            return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
        }
        for (name, pick) in [
            ("1 writer", { (r: LogBenchmarkResult) in r.sequential.appendsPerSecond ?? 0 }),
            ("\(writers) writers", { (r: LogBenchmarkResult) in r.concurrent.appendsPerSecond ?? 0 })
        ] {
            let without = median(rows.filter { !$0.0 }.map { pick($0.1) }), with = median(rows.filter { $0.0 }.map { pick($0.1) })
            // Each run with the tree against the mean of the runs without it just before and after:
            // the machine's drift over the whole series cancels out.
            var paired: [Double] = []
            for (i, row) in rows.enumerated() where row.0 {
                let beside = [i - 1, i + 1].filter { rows.indices.contains($0) && !rows[$0].0 }.map { pick(rows[$0].1) }
                guard !beside.isEmpty else { continue }
                paired.append(pick(row.1) / (beside.reduce(0, +) / Double(beside.count)) - 1)
            }
            let interval = Self.medianInterval(paired).map {
                String(format: ", 95 %% confidence interval of that median %+.1f to %+.1f %%", $0.low * 100, $0.high * 100)
            }
            print(
                "\(name): median \(rate(with)) appends/s with the tree, \(rate(without)) without: "
                    + String(format: "%+.1f %%", (with / without - 1) * 100)
                    + (paired.isEmpty
                        ? ""
                        : String(
                            format: "; against the runs beside each: median %+.1f %% (%d runs, %+.1f to %+.1f %%)",
                            median(paired) * 100, paired.count, paired.min()! * 100, paired.max()! * 100)
                            + (interval ?? "")))
        }
        print("")
    }

    /// The follower's own rate: leaves a second when it catches up with a log it has not seen.
    func follower(_ root: String) async throws {
        let directory = root + "/follower"
        let store = try SegmentStore(directory: directory + "/log")
        let config = LogBenchmark.Configuration(
            replayEventCount: leaves, sequentialAppends: 0, concurrentWriters: 1,
            concurrentAppendsTotal: 0, bulkBatchSize: 100)
        _ = try await LogBenchmark(configuration: config, workload: DomainWorkload.make()).run(
            store: store, label: "follower", progress: { _ in }, replay: { _ in })
        let trail = try AuditTrail(dataDirectory: directory, readOnly: false)
        let start = ContinuousClock.now
        try await trail.catchUp(store: store, leaf: AuditLeaf.bytes)
        let seconds = Self.seconds(ContinuousClock.now - start)
        let treeBytes = trail.tree.bytes
        store.close()
        print(
            "Tree follower: \(leaves) records rendered (export line), hashed and written in "
                + String(
                    format: "%.2f s: %.0f records/s, %.1f µs a record", seconds, Double(leaves) / seconds, seconds / Double(leaves) * 1e6))
        print(
            "Tree file: \(treeBytes) bytes for \(leaves) records: "
                + String(format: "%.1f bytes a record", Double(treeBytes) / Double(leaves)) + "\n")
    }

    /// A tree of `size` synthetic leaves, then random inclusion and consistency proofs from a fresh
    /// read-only open of it, each verified.
    func proofTimes(_ root: String) throws {
        let path = tree ?? root + "/big.tree"
        let total = UInt64(size)
        let buildStart = ContinuousClock.now
        let existing = FileManager.default.fileExists(atPath: path) ? try TreeFile(path: path, readOnly: true).size : 0
        if existing != total {
            try? FileManager.default.removeItem(atPath: path)
            let tree = try TreeFile(path: path)
            var leaf = [UInt8](repeating: 0, count: 8)
            for i in 0..<total {
                withUnsafeBytes(of: i.littleEndian) { leaf.replaceSubrange(0..<8, with: $0) }
                tree.append(leafHash: Merkle.leafHash(leaf))
                if i % 65_536 == 65_535 { try tree.flush() }
            }
            try tree.flush()
        }
        let buildSeconds = Self.seconds(ContinuousClock.now - buildStart)
        let bytes = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        print(
            "Synthetic tree: \(size) leaves "
                + (existing == total ? "(kept from an earlier run)" : "built in " + String(format: "%.1f s", buildSeconds))
                + ", \(bytes) bytes (" + String(format: "%.2f", Double(bytes) / Double(size)) + " bytes a leaf)")
        let openStart = ContinuousClock.now
        let tree = try TreeFile(path: path, readOnly: true)
        let root = try tree.root()
        print(
            "Opened read-only in " + String(format: "%.2f ms", Self.seconds(ContinuousClock.now - openStart) * 1000)
                + "; root \(Hex.string(root))")
        var generator = SystemRandomNumberGenerator()
        var inclusion: [Double] = [], consistency: [Double] = [], pathLengths: [Int] = []
        var inclusionCPU: [Double] = [], consistencyCPU: [Double] = []
        for _ in 0..<proofs {
            let index = UInt64.random(in: 0..<total, using: &generator)
            let start = ContinuousClock.now
            let cpu = Self.threadCPU()
            let path = try Merkle.inclusionProof(index: index, size: total, tree)
            inclusionCPU.append(Self.threadCPU() - cpu)
            inclusion.append(Self.seconds(ContinuousClock.now - start))
            pathLengths.append(path.count)
            var leaf = [UInt8](repeating: 0, count: 8)
            withUnsafeBytes(of: index.littleEndian) { leaf.replaceSubrange(0..<8, with: $0) }
            guard Merkle.rootFromInclusion(leafHash: Merkle.leafHash(leaf), index: index, size: total, path: path) == root else {
                throw HubError.failed("the inclusion proof of leaf \(index) does not verify")
            }
            let old = UInt64.random(in: 1..<total, using: &generator)
            let cStart = ContinuousClock.now
            let cCPU = Self.threadCPU()
            let proof = try Merkle.consistencyProof(old: old, new: total, tree)
            let oldRoot = try tree.root(size: old)
            consistencyCPU.append(Self.threadCPU() - cCPU)
            consistency.append(Self.seconds(ContinuousClock.now - cStart))
            guard Merkle.verifyConsistency(old: old, new: total, oldRoot: oldRoot, newRoot: root, path: proof) else {
                throw HubError.failed("the consistency proof \(old) -> \(total) does not verify")
            }
        }
        func describe(_ values: [Double]) -> String {
            let sorted = values.sorted()
            func at(_ q: Double) -> String { String(format: "%.1f", sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] * 1e6) }
            return "median \(at(0.5)) µs, p99 \(at(0.99)) µs, max " + String(format: "%.1f", sorted.last! * 1e6) + " µs"
        }
        print(
            "Inclusion proofs at \(size) leaves (\(proofs), random leaves, \(pathLengths.min()!)-\(pathLengths.max()!) hashes each): "
                + describe(inclusion)
                + "; CPU time " + describe(inclusionCPU))
        print(
            "Consistency proofs to \(size) from a random older size (\(proofs), with the old root): " + describe(consistency)
                + "; CPU time " + describe(consistencyCPU))
    }

    /// The distribution-free 95 % confidence interval of the median of `values` (order statistics:
    /// the k-th smallest and k-th largest, k the largest with P(Binomial(n, 1/2) < k) <= 2.5 %);
    /// nil below 6 values, where no such k exists. It assumes only that the values are independent
    /// draws of one distribution: nothing about its shape.
    static func medianInterval(_ values: [Double]) -> (low: Double, high: Double)? {
        let n = values.count
        guard n >= 6 else { return nil }
        // P(X = i) for X ~ Binomial(n, 1/2), summed from i = 0 while it stays within 2.5 %.
        let logAll: Double = lgamma(Double(n + 1)) - Double(n) * log(2.0)
        var k = 0, below = 0.0
        while k < n {
            let logChoice: Double = lgamma(Double(k + 1)) + lgamma(Double(n - k + 1))
            let next = below + exp(logAll - logChoice)
            if next > 0.025 { break }
            below = next
            k += 1
        }
        guard k >= 1 else { return nil }
        let sorted = values.sorted()
        return (sorted[k - 1], sorted[n - k])
    }

    /// This thread's CPU time in seconds (what a proof costs, without the time other processes
    /// hold the core).
    static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
