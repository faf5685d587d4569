// Loading a system library when it is first used rather than when the process starts.
// libcurl alone brings some thirty more libraries (TLS, Kerberos, LDAP, IDN...), whose loading
// took about 4 ms of every `swarmgate` start, also of the commands that never fetch a byte
// (`rewrite`, `--help`). See README, Benchmarks.
#ifndef SWARMGATE_CLOADER_H
#define SWARMGATE_CLOADER_H

#include <pthread.h>
#include <stddef.h>

/// Opens the first of the shared libraries `sonames` (NULL-terminated, as `dlopen` finds
/// them) that loads, and resolves the `count` symbols `names` into `table`, one pointer each,
/// in order. Returns NULL when all are there, else a message (written to `error`, `size`
/// bytes, starting "cannot load `label`") saying what is missing; `table` is then all NULL.
const char *swarmgate_load_library(const char *label, const char *const *sonames, const char *const *names, void *table,
                                   size_t count, char *error, size_t size);

/// Defines, in a library's C file, `f`: a struct with a pointer for each symbol `LIST` names
/// (`LIST(X)` expands `X(name)` once per symbol; each pointer has the type the library's
/// header declares), and `LOAD`, a function that loads the library (the first that loads of
/// `LINUX_SONAMES`, or `APPLE_NAMES` on Apple platforms, each a parenthesized list) and
/// resolves them into `f`, once for the process: it returns NULL when they are all there,
/// else why not (the same answer every time). Calls through `f` are valid after `LOAD` said
/// NULL. `LABEL` names the library in messages.
#define SWARMGATE_LAZY_LIBRARY(LIST, LOAD, LABEL, LINUX_SONAMES, APPLE_NAMES)                                   \
    static struct { LIST(SWARMGATE_LAZY_FIELD) } f;                                                           \
    static const char *const swarmgate_lazy_names[] = { LIST(SWARMGATE_LAZY_NAME) };                          \
    static const char *const swarmgate_lazy_sonames[] = { SWARMGATE_LAZY_PICK(LINUX_SONAMES, APPLE_NAMES), NULL }; \
    _Static_assert(sizeof f == sizeof swarmgate_lazy_names / sizeof *swarmgate_lazy_names * sizeof(void *),    \
                   "one slot per name");                                                                      \
    static pthread_once_t swarmgate_lazy_once = PTHREAD_ONCE_INIT;                                            \
    static const char *swarmgate_lazy_failure;                                                                \
    static char swarmgate_lazy_message[512];                                                                  \
    static void swarmgate_lazy_load(void) {                                                                   \
        swarmgate_lazy_failure = swarmgate_load_library(LABEL, swarmgate_lazy_sonames, swarmgate_lazy_names,  \
            &f, sizeof swarmgate_lazy_names / sizeof *swarmgate_lazy_names, swarmgate_lazy_message,           \
            sizeof swarmgate_lazy_message);                                                                   \
    }                                                                                                         \
    const char *LOAD(void) {                                                                                  \
        pthread_once(&swarmgate_lazy_once, swarmgate_lazy_load);                                              \
        return swarmgate_lazy_failure;                                                                        \
    }

#define SWARMGATE_LAZY_FIELD(name) __typeof__(name) *name;
#define SWARMGATE_LAZY_NAME(name) #name,
#define SWARMGATE_LAZY_UNPAREN(...) __VA_ARGS__
#ifdef __APPLE__
#define SWARMGATE_LAZY_PICK(linux, apple) SWARMGATE_LAZY_UNPAREN apple
#else
#define SWARMGATE_LAZY_PICK(linux, apple) SWARMGATE_LAZY_UNPAREN linux
#endif

#endif
