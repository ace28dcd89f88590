import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Browser {
    /// Starts `arguments[0]` in a process group of its own with two pipes as its fd 3 (what it
    /// reads: our commands) and fd 4 (what it writes: its answers), standard input from /dev/null
    /// and standard output and error to `log`. Foundation's `Process` cannot place descriptors at
    /// chosen numbers, so this is `posix_spawn`.
    /// - Returns: the child's pid, the write end of its fd 3 and the read end of its fd 4.
    static func spawn(_ arguments: [String], log: String) throws -> (pid: pid_t, toBrowser: Int32, fromBrowser: Int32) {
        let commands = try pipePair(), answers = try pipePair()  // [read, write], close-on-exec
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec on the copies at 3 and 4; the originals (all above 9) close at exec.
        posix_spawn_file_actions_adddup2(&actions, commands[0], 3)
        posix_spawn_file_actions_adddup2(&actions, answers[1], 4)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), defaults = sigset_t()
        sigemptyset(&noSignals)
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)  // ignored here (see launch); an ignored signal stays ignored across exec
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
        Glibc.close(commands[0])
        Glibc.close(answers[1])
        guard result == 0 else {
            Glibc.close(commands[1])
            Glibc.close(answers[0])
            throw BrowserError("cannot start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        return (pid, commands[1], answers[0])
    }

    /// A pipe whose two ends are close-on-exec (moved there at once after `pipe`) and numbered 10 or above (so neither is 3 or 4,
    /// which the child's dup2 would otherwise leave close-on-exec).
    private static func pipePair() throws -> [Int32] {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { throw BrowserError("pipe: \(String(cString: strerror(errno)))") }
        return try fds.map { fd in
            let high = fcntl(fd, F_DUPFD_CLOEXEC, 10)
            Glibc.close(fd)
            guard high >= 0 else { throw BrowserError("fcntl(F_DUPFD_CLOEXEC): \(String(cString: strerror(errno)))") }
            return high
        }
    }
}
