// Loading a system library when it is first used rather than when the process starts.
// libcurl alone brings some thirty more libraries (TLS, Kerberos, LDAP, IDN...), whose loading
// took about 4 ms of every `swarmgate` start, also of the commands that never fetch a byte
// (`rewrite`, `--help`). See README, Benchmarks.
#ifndef SWARMGATE_CLOADER_H
#define SWARMGATE_CLOADER_H

#include <pthread.h>
#include <stddef.h>

/// Opens shared library `soname` (as `dlopen` finds it) and resolves the `count` functions
/// `names` into `slots`, in order. Returns NULL when all are there, else a message saying
/// what is missing (written to `error`, `size` bytes); the library is then closed again.
const char *swarmgate_load_library(const char *soname, const char *const *names, void **slots, size_t count,
                                   char *error, size_t size);

/// Defines, in a library's C file, `f`: a struct with a pointer for each function `LIST` names
/// (`LIST(X)` expands `X(type, name, (parameters))` once per function), and `LOAD`, a
/// function that loads the library (`LINUX_SONAME`, or `APPLE_NAME` on Apple platforms) and
/// resolves them into `f`, once for the process: it returns NULL when they are all there, else
/// why not (the same answer every time). Calls through `f` are valid after `LOAD` said NULL.
#define SWARMGATE_LAZY_LIBRARY(LIST, LOAD, LINUX_SONAME, APPLE_NAME)                                            \
    static struct { LIST(SWARMGATE_LAZY_FIELD) } f;                                                           \
    static const char *const swarmgate_lazy_names[] = { LIST(SWARMGATE_LAZY_NAME) };                          \
    _Static_assert(sizeof f == sizeof swarmgate_lazy_names / sizeof *swarmgate_lazy_names * sizeof(void *),    \
                   "one slot per name");                                                                      \
    static pthread_once_t swarmgate_lazy_once = PTHREAD_ONCE_INIT;                                            \
    static const char *swarmgate_lazy_failure;                                                                \
    static char swarmgate_lazy_message[512];                                                                  \
    static void swarmgate_lazy_load(void) {                                                                   \
        swarmgate_lazy_failure = swarmgate_load_library(SWARMGATE_LAZY_SONAME(LINUX_SONAME, APPLE_NAME),      \
            swarmgate_lazy_names, (void **)&f, sizeof swarmgate_lazy_names / sizeof *swarmgate_lazy_names,    \
            swarmgate_lazy_message, sizeof swarmgate_lazy_message);                                           \
    }                                                                                                         \
    const char *LOAD(void) {                                                                                  \
        pthread_once(&swarmgate_lazy_once, swarmgate_lazy_load);                                              \
        return swarmgate_lazy_failure;                                                                        \
    }

#define SWARMGATE_LAZY_FIELD(type, name, parameters) type (*name) parameters;
#define SWARMGATE_LAZY_NAME(type, name, parameters) #name,
#ifdef __APPLE__
#define SWARMGATE_LAZY_SONAME(linux, apple) apple
#else
#define SWARMGATE_LAZY_SONAME(linux, apple) linux
#endif

#endif
