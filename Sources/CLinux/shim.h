#ifndef SWARMGATE_CLINUX_SHIM_H
#define SWARMGATE_CLINUX_SHIM_H
// Linux calls that Glibc's Swift module does not export (they need _GNU_SOURCE).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <malloc.h>

/// Frees the blocks of [offset, offset+length) of a file, keeping its size. 0 on success.
static inline int swarmgate_punch_hole(int fd, long long offset, long long length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length);
}

/// Has glibc's allocator give the free memory it keeps back to the system (malloc_trim(3)).
/// 1 if some was given back.
static inline int swarmgate_malloc_trim(void) {
    return malloc_trim(0);
}
#endif
