#include "CLoader.h"

#include <dlfcn.h>
#include <stdio.h>

const char *swarmgate_load_library(const char *soname, const char *const *names, void **slots, size_t count,
                                   char *error, size_t size) {
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(error, size, "cannot load %s: %s", soname, why ? why : "not found");
        return error;
    }
    for (size_t i = 0; i < count; i++) {
        slots[i] = dlsym(library, names[i]);
        if (slots[i] == NULL) {
            snprintf(error, size, "%s has no %s (too old a version?)", soname, names[i]);
            dlclose(library);
            return error;
        }
    }
    return NULL;
}
