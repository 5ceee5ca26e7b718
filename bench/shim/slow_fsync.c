/* A disk whose syncs are slow, for the load bench: preloaded (LD_PRELOAD) into the server,
 * it sleeps SLOW_FSYNC_MS milliseconds (2 by default: a cloud disk) before each fsync and
 * fdatasync, then makes the real one. Nothing else is changed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static void slow_disk(void) {
    const char *ms = getenv("SLOW_FSYNC_MS");
    long wait = ms ? atol(ms) : 2;
    struct timespec t = {wait / 1000, (wait % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    slow_disk();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    slow_disk();
    return real(fd);
}
