import ArgumentParser
import CLISupport
import Foundation
import HubApp
import HubAudit
import HubEngine

/// `hub backup`: a live, point-in-time copy of the whole data directory (docs/operations.md,
/// Backups), or with `--check` the check of one.
struct BackupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract:
            "Copy the whole data directory, beside a running hub, into DEST: a new directory, a .tar file, or - (a tar stream on stdout); --check checks a backup.",
        discussion: """
            The log is copied up to the record that was its last when the backup began; the audit heads and tree are cut \
            to that record. MANIFEST.json names every file's size and SHA-256, the log's head sequence and head hash, and \
            when it was taken. Left out, rebuilt by the restored hub: the snapshots (not snapshots/seal.key), history/, log/commands.idx, \
            log/recovery.ckpt, the LOCK files. With --log (PostgreSQL) the backup holds the data directory only: back the \
            log up with pg_dump, after this.
            """)

    @OptionGroup var data: DataOptions
    @Flag(help: "Check the backup DEST (a directory, a .tar file, or - for a tar stream on stdin) instead of taking one; opens no hub.")
    var check = false
    @Option(
        name: .customLong("head"),
        help: ArgumentHelp(
            "With --check: a file of signed heads (JSON lines) kept elsewhere (an auditor's, the broker's retained <base>/audit/head): each is checked against the backup, one past its head named as missing from it.",
            valueName: "file"))
    var heads: [String] = []
    @Argument(help: "Where to write the backup (or, with --check, the backup to check).")
    var destination: String

    func run() async throws {
        try await Console.guarded {
            if check {
                let report = try await Backup.check(destination, heads: try readHeads(heads))
                try finish(report, named: destination)
                return
            }
            guard heads.isEmpty else { throw HubError.usage("--head goes with --check (or with hub restore)") }
            let manifest = try await Backup.take(paths: try data.paths(), to: destination)
            let bytes = manifest.files.reduce(0) { $0 + $1.size }
            let log =
                manifest.postgres == nil
                ? "the log up to record \(manifest.headSequence)"
                : "the data directory only (the log is in PostgreSQL at record \(manifest.headSequence): back it up with pg_dump now)"
            Console.note(
                "hub: backup of \(data.dataDir) written to \(destination == "-" ? "standard output" : destination): \(manifest.files.count) files, \(bytes) bytes, \(log); head hash \(manifest.headHash)"
            )
        }
    }
}

/// `hub restore`: a checked backup written into a new or empty data directory.
struct RestoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Check a backup (as hub backup --check does) and write it into DATADIR, which must be new or empty.")

    @Argument(help: "The backup: a directory, a .tar file, or - (a tar stream on stdin).")
    var backup: String
    @Argument(help: "The data directory to make (new, or an empty directory).")
    var dataDir: String
    @Option(
        name: .customLong("head"),
        help: ArgumentHelp(
            "A file of signed heads (JSON lines) kept elsewhere: each is checked against the backup, and one past its head is named as missing from it.",
            valueName: "file"))
    var heads: [String] = []

    func run() async throws {
        try await Console.guarded {
            let restored = try await Backup.restore(backup, into: dataDir, heads: try readHeads(heads))
            for note in restored.check.notes { print("note: \(note)") }
            guard let manifest = restored.check.manifest else { return }
            let bytes = manifest.files.reduce(0) { $0 + $1.size }
            if manifest.postgres != nil {
                print(
                    "restored the data directory (\(manifest.files.count) files, \(bytes) bytes) into \(dataDir), taken \(manifest.taken); restore its PostgreSQL log from the pg_dump taken after it (it must hold record \(manifest.headSequence) with chain hash \(manifest.headHash)), then `hub run --data-dir \(dataDir) --log <url>`"
                )
            } else {
                print(
                    "restored \(manifest.files.count) files (\(bytes) bytes) into \(dataDir): the log up to record \(manifest.headSequence) (head hash \(manifest.headHash)), taken \(manifest.taken); `hub run --data-dir \(dataDir)` rebuilds the snapshots, history files, command index and recovery checkpoint"
                )
            }
        }
    }
}

/// Every signed head in the files named (one JSON line each; blank lines skipped).
func readHeads(_ files: [String]) throws -> [SignedHead] {
    try files.flatMap { file -> [SignedHead] in
        guard let contents = FileManager.default.contents(atPath: file) else { throw HubError.usage("--head \(file) cannot be read") }
        return try String(decoding: contents, as: UTF8.self).split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }.map { line in
            do { return try SignedHead(line: line) } catch { throw HubError.usage("--head \(file): not a signed head: \(error)") }
        }
    }
}

/// Prints a check's notes and its one sound line, or names each problem and fails.
func finish(_ report: Backup.CheckReport, named: String) throws {
    for note in report.notes { print("note: \(note)") }
    if let line = report.soundLine {
        print(line)
        return
    }
    for problem in report.problems.dropFirst() { Console.note("hub: \(problem)") }
    let more = report.problems.count > 1 ? " (and \(report.problems.count - 1) more, named above)" : ""
    throw HubError.failed("the backup \(named) is not sound: \(report.problems.first ?? "no manifest")\(more)")
}
