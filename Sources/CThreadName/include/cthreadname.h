#ifndef CTHREADNAME_H
#define CTHREADNAME_H

/// Names the calling thread for `top -H`, `ps -L` and profilers (Linux keeps the first 15 bytes).
/// Returns 0, or an errno value. Swift's Glibc module does not show `pthread_setname_np`, and
/// Foundation's `Thread.name` does not reach the system's name on Linux.
int hub_name_this_thread(const char *name);

/// The calling thread's kernel id on Linux (what `setpriority(PRIO_PROCESS, id, ...)` takes to
/// change that thread alone); -1 elsewhere. Swift's Glibc module does not show `gettid`.
int hub_this_thread_id(void);

/// Starts writing a file's dirty pages without waiting (`sync_file_range` with
/// `SYNC_FILE_RANGE_WRITE`, Linux); returns 0 or -1 with errno (elsewhere 0, doing nothing).
/// Swift's Glibc module does not show `sync_file_range` either.
int hub_start_writeback(int fd);

#endif
