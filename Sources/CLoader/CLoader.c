#include "CLoader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

const char *swarmgate_load_library(const char *label, const char *const *sonames, const char *const *names, void *table,
                                   size_t count, char *error, size_t size) {
    void *library = NULL;
    // dlerror's text names the file (and a dependency that failed, if that was it).
    char first[384] = "";
    for (const char *const *soname = sonames; *soname != NULL && library == NULL; soname++) {
        library = dlopen(*soname, RTLD_NOW | RTLD_LOCAL);
        const char *why = library == NULL ? dlerror() : NULL;
        if (why != NULL && first[0] == 0) snprintf(first, sizeof first, "%s", why);
    }
    if (library == NULL) {
        snprintf(error, size, "cannot load %s (%s)", label, first[0] ? first : "not found");
        return error;
    }
    for (size_t i = 0; i < count; i++) {
        void *symbol = dlsym(library, names[i]);
        if (symbol == NULL) {
            snprintf(error, size, "cannot load %s: it has no %s (too old a version?)", label, names[i]);
            memset(table, 0, count * sizeof symbol);
            dlclose(library);
            return error;
        }
        // Copied, not stored through a `void **`: the table's slots are function pointers.
        memcpy((char *)table + i * sizeof symbol, &symbol, sizeof symbol);
    }
    return NULL;
}
