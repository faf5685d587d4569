#ifndef SWARMGATE_CLINUX_SHIM_H
#define SWARMGATE_CLINUX_SHIM_H
// Linux calls that Glibc's Swift module does not export (they need _GNU_SOURCE).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <errno.h>

/// Frees the blocks of [offset, offset+length) of a file, keeping its size. 0 on success.
static inline int swarmgate_punch_hole(int fd, long long offset, long long length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length);
}

/// A sealed memfd holding a copy of [bytes, bytes+length): nobody, this process included, can
/// change, grow or shrink it afterwards (F_SEAL_WRITE, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL),
/// so what was verified before sealing is what any later read or sendfile sees. -1 on failure.
static inline int swarmgate_sealed_memfd(const void *bytes, size_t length) {
    int fd = memfd_create("swarmgate-piece", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    size_t done = 0;
    while (done < length) {
        ssize_t n = pwrite(fd, (const char *)bytes + done, length - done, (off_t)done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { close(fd); return -1; }
        done += (size_t)n;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) { close(fd); return -1; }
    return fd;
}
#endif
