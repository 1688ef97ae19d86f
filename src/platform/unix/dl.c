/* Shared libraries through the dynamic loader. */
#define _GNU_SOURCE /* dlinfo */
#include "platform/platform.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

kiln_dl *kiln_dl_open(const char *name, char *err, size_t errcap)
{
    if (!name || !*name) {
        if (errcap) snprintf(err, errcap, "empty library name");
        return NULL;
    }
    /* RTLD_LOCAL keeps a vendor library's symbols out of the global namespace, so two
     * libraries that both export, say, an LLVM symbol cannot capture each other's calls.
     * RTLD_NOW makes a missing dependency fail here, with the loader's text, rather than at
     * the first call into the library. */
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        if (errcap) snprintf(err, errcap, "%s", why ? why : "dlopen failed");
        return NULL;
    }
    return (kiln_dl *)h;
}

void *kiln_dl_sym(kiln_dl *lib, const char *symbol)
{
    if (!lib || !symbol) return NULL;
    return dlsym((void *)lib, symbol);
}

void kiln_dl_close(kiln_dl *lib)
{
    if (lib) dlclose((void *)lib);
}

int kiln_dl_path(kiln_dl *lib, char *buf, size_t cap)
{
    struct link_map *map = NULL;
    if (!lib || !cap) return -1;
    /* The link map holds the path the loader actually resolved, which is what a user needs
     * when a library was found through the search path rather than named in full. */
    if (dlinfo((void *)lib, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name ||
        !map->l_name[0])
        return -1;
    if (strlen(map->l_name) >= cap) return -1;
    memcpy(buf, map->l_name, strlen(map->l_name) + 1);
    return 0;
}

int kiln_dl_self_dir(char *buf, size_t cap)
{
    Dl_info info;
    const char *slash;
    size_t n;
    if (!cap || !dladdr((void *)&kiln_dl_self_dir, &info) || !info.dli_fname) return -1;
    slash = strrchr(info.dli_fname, '/');
    if (!slash) return -1;
    n = (size_t)(slash - info.dli_fname);
    if (n + 1 > cap) return -1;
    memcpy(buf, info.dli_fname, n);
    buf[n] = '\0';
    return 0;
}
