#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
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
