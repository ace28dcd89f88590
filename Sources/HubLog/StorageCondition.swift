#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether the log can take appends now, as far as its disk goes: what `hub/status/storage`, the
/// operator's log lines and a readiness check show.
///
/// A store turns ``full(path:since:reason:)`` when a write finds no space
/// (``EventLogError/storageFull(path:operation:errno:)``) and back to ``ok`` when an append is
/// written again or when it sees enough free space on its own (``SegmentStore`` looks every
/// second while it is full). A failed fsync is not a storage condition: the writer stops for good
/// (``EventLogError/writerStopped(reason:)``).
public enum StorageCondition: Sendable, Equatable {
    /// Appends are being written (or nothing has failed for want of space).
    case ok
    /// The last write failed for want of space: every append is refused with
    /// ``EventLogError/storageFull(path:operation:errno:)`` until space is freed.
    ///
    /// - `path`: the file or directory that could not grow.
    /// - `since`: when it was first found full (µs since the epoch).
    /// - `reason`: the error in words.
    case full(path: String, since: Int64, reason: String)

    /// True while the disk is full.
    public var isFull: Bool { if case .full = self { return true } else { return false } }
}

extension FileIO {
    /// Whether `code` says the file system has no room (no space, or the quota is used up).
    static func isNoSpace(_ code: Int32) -> Bool { code == ENOSPC || code == EDQUOT }

    /// The error for a failed call that needed space: ``EventLogError/storageFull(path:operation:errno:)``
    /// for ENOSPC/EDQUOT, ``EventLogError/io(path:operation:errno:)`` otherwise.
    static func spaceFailure(path: String, operation: String, errno code: Int32) -> EventLogError {
        isNoSpace(code) ? .storageFull(path: path, operation: operation, errno: code) : .io(path: path, operation: operation, errno: code)
    }

    /// Bytes a writer may still use on the file system holding `path` (root may use the blocks
    /// reserved for it); nil when it cannot be asked.
    static func freeBytes(_ path: String) -> Int? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        let blocks = geteuid() == 0 ? st.f_bfree : st.f_bavail
        return Int(clamping: UInt64(blocks) &* UInt64(st.f_frsize))
    }

    /// Microseconds since the epoch (for ``StorageCondition/full(path:since:reason:)``).
    static func nowMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}

/// Files written whole or not at all, for the runtime's small files (owner-data keys): a temp file,
/// fsync, rename, fsync of the directory. A failure leaves no temp file behind; a full disk is
/// ``EventLogError/storageFull(path:operation:errno:)``.
public enum DurableFile {
    /// Writes `bytes` to `path` atomically, making `directory` (its parent) if needed.
    ///
    /// - Parameters:
    ///   - bytes: The file's content.
    ///   - path: Where it goes.
    ///   - directory: The directory holding `path` (made if missing, synced after the rename).
    ///   - mode: The file's permissions.
    ///   - directoryMode: The permissions of directories it makes.
    /// - Throws: ``EventLogError/storageFull(path:operation:errno:)`` when the disk is full,
    ///   ``EventLogError/io(path:operation:errno:)`` for any other failure.
    public static func write(
        _ bytes: [UInt8], to path: String, directory: String, mode: mode_t = 0o600,
        directoryMode: mode_t = 0o700
    ) throws {
        try FileIO.makeDirectory(directory, mode: directoryMode)
        try FileIO.writeAtomically(bytes, to: path, directory: directory, mode: mode)
    }
}
