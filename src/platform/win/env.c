/* Environment variables through the UTF-16 process environment block. */
#include "platform/platform.h"
#include "platform/win/wide.h"

#include <stdlib.h>
#include <string.h>

/* The Win32 block (not the C runtime's narrow copy) is read and written because it is the
 * one every runtime shares: _putenv, Python's os.environ and child processes all see it,
 * and it holds the variable in UTF-16, so no code page can mangle a path. */
int kiln_env_get(const char *name, char *buf, size_t cap)
{
    wchar_t *wname = kiln_win_wide(name);
    int found = 0;
    if (cap) buf[0] = '\0';
    if (!wname) return 0;
    SetLastError(ERROR_SUCCESS);
    DWORD n = GetEnvironmentVariableW(wname, NULL, 0);
    if (n == 0) {
        /* A variable set to "" also reports 0; only this error means unset. */
        found = GetLastError() != ERROR_ENVVAR_NOT_FOUND;
    } else {
        wchar_t *w = malloc((size_t)n * sizeof *w);
        DWORD got = w ? GetEnvironmentVariableW(wname, w, n) : 0;
        if (w && got < n) {
            char *s = kiln_win_utf8(w);
            found = 1;
            if (s && cap) {
                size_t len = strlen(s);
                if (len >= cap) {
                    /* Truncate on a character boundary. */
                    len = cap - 1;
                    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80) len--;
                }
                memcpy(buf, s, len);
                buf[len] = '\0';
            }
            free(s);
        }
        free(w);
    }
    free(wname);
    return found;
}

int kiln_env_set(const char *name, const char *value)
{
    if (!name || !*name || strchr(name, '=')) return -1;
    wchar_t *wname = kiln_win_wide(name);
    wchar_t *wvalue = value ? kiln_win_wide(value) : NULL;
    BOOL ok = wname && (!value || wvalue) && SetEnvironmentVariableW(wname, wvalue);
    free(wname);
    free(wvalue);
    return ok ? 0 : -1;
}
