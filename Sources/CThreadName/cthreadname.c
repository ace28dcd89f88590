#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <fcntl.h>
#include "cthreadname.h"

int hub_name_this_thread(const char *name) {
    char shortened[16];
    strncpy(shortened, name, sizeof shortened - 1);
    shortened[sizeof shortened - 1] = '\0';
#if defined(__APPLE__)
    return pthread_setname_np(shortened);
#else
    return pthread_setname_np(pthread_self(), shortened);
#endif
}

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

int hub_this_thread_id(void) {
#if defined(__linux__)
    return (int)syscall(SYS_gettid);
#else
    return -1;
#endif
}

int hub_start_writeback(int fd) {
#if defined(__linux__)
    return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd;
    return 0;
#endif
}
