/* Shared libraries through LoadLibraryExW. */
#include "platform/platform.h"
#include "platform/win/wide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

kiln_dl *kiln_dl_open(const char *name, char *err, size_t errcap)
{
    DWORD old_mode = 0, flags = 0;
    if (!name || !*name) {
        if (errcap) snprintf(err, errcap, "empty library name");
        return NULL;
    }
    wchar_t *wname = kiln_win_path(name);
    if (!wname) {
        if (errcap) snprintf(err, errcap, "'%s' is not valid UTF-8", name);
        return NULL;
    }
    /* Given a full path, let the library's own dependencies resolve from its folder (as a
     * HIP SDK's amdhip64 needs), not from the folder of the program that loads kiln. */
    if ((wname[0] && wname[1] == L':') || wname[0] == L'\\' || wname[0] == L'/')
        flags = LOAD_WITH_ALTERED_SEARCH_PATH;
    /* Without SEM_FAILCRITICALERRORS a missing dependency opens a modal dialog box and the
     * calling program hangs until someone clicks it. The per-thread mode leaves other
     * threads' settings alone, which SetErrorMode (process-wide) would not. */
    BOOL mode_set = SetThreadErrorMode(SEM_FAILCRITICALERRORS, &old_mode);
    HMODULE h = LoadLibraryExW(wname, NULL, flags);
    DWORD code = GetLastError();
    if (mode_set) SetThreadErrorMode(old_mode, NULL);
    free(wname);
    if (!h) {
        char what[512];
        snprintf(what, sizeof what, "LoadLibraryExW(\"%s\")", name);
        kiln_win_error(err, errcap, what, code);
        return NULL;
    }
    return (kiln_dl *)h;
}

void *kiln_dl_sym(kiln_dl *lib, const char *symbol)
{
    void *p = NULL;
    if (!lib || !symbol) return NULL;
    FARPROC f = GetProcAddress((HMODULE)lib, symbol);
    /* A function pointer and void * have the same size on Windows; memcpy makes the
     * conversion without the non-standard cast that compilers warn about. */
    memcpy(&p, &f, sizeof p);
    return p;
}

void kiln_dl_close(kiln_dl *lib)
{
    if (lib) FreeLibrary((HMODULE)lib);
}

int kiln_dl_path(kiln_dl *lib, char *buf, size_t cap)
{
    DWORD size = MAX_PATH;
    if (!lib || !cap) return -1;
    for (;;) {
        wchar_t *w = malloc((size_t)size * sizeof *w);
        if (!w) return -1;
        DWORD n = GetModuleFileNameW((HMODULE)lib, w, size);
        /* A full buffer means the name was cut short: grow and ask again. */
        if (n > 0 && n < size) {
            int r = kiln_win_utf8_into(w, buf, cap);
            free(w);
            return r;
        }
        free(w);
        if (n == 0 || size >= 32768) return -1;
        size *= 2;
    }
}

int kiln_dl_self_dir(char *buf, size_t cap)
{
    HMODULE self = NULL;
    char *sep;
    if (!GetModuleHandleExW(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS |
                                GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                            (LPCWSTR)(void *)&kiln_dl_self_dir, &self))
        return -1;
    if (kiln_dl_path((kiln_dl *)self, buf, cap) != 0) return -1;
    sep = strrchr(buf, '\\');
    if (!sep) return -1;
    *sep = '\0';
    return 0;
}
