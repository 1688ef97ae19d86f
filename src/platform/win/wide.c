/* UTF-8 <-> UTF-16 conversion and error text for the Windows platform code. */
#include "platform/win/wide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

wchar_t *kiln_win_wide(const char *utf8)
{
    if (!utf8) return NULL;
    /* MB_ERR_INVALID_CHARS: a malformed name must fail, not silently turn into U+FFFD and
     * name some other file. */
    int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, NULL, 0);
    if (n <= 0) return NULL;
    wchar_t *w = malloc((size_t)n * sizeof *w);
    if (w && MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, utf8, -1, w, n) != n) {
        free(w);
        return NULL;
    }
    return w;
}

wchar_t *kiln_win_path(const char *utf8)
{
    wchar_t *w = kiln_win_wide(utf8);
    /* 248 rather than MAX_PATH: CreateDirectoryW's limit leaves room for an 8.3 name. */
    if (!w || wcslen(w) < 248 || wcsncmp(w, L"\\\\?\\", 4) == 0) return w;
    DWORD n = GetFullPathNameW(w, 0, NULL, NULL);
    wchar_t *full = n ? malloc(((size_t)n + 8) * sizeof *full) : NULL;
    if (!full) return w;
    DWORD got = GetFullPathNameW(w, n, full + 6, NULL);
    if (got == 0 || got >= n) {
        free(full);
        return w;
    }
    free(w);
    if (wcsncmp(full + 6, L"\\\\", 2) == 0) {
        /* \\server\share\x becomes \\?\UNC\server\share\x. */
        memcpy(full, L"\\\\?\\UN", 6 * sizeof *full);
        full[6] = L'C';
        return full;
    }
    memmove(full + 4, full + 6, ((size_t)got + 1) * sizeof *full);
    memcpy(full, L"\\\\?\\", 4 * sizeof *full);
    return full;
}

char *kiln_win_utf8(const wchar_t *wide)
{
    if (!wide) return NULL;
    int n = WideCharToMultiByte(CP_UTF8, 0, wide, -1, NULL, 0, NULL, NULL);
    if (n <= 0) return NULL;
    char *s = malloc((size_t)n);
    if (s && WideCharToMultiByte(CP_UTF8, 0, wide, -1, s, n, NULL, NULL) != n) {
        free(s);
        return NULL;
    }
    return s;
}

int kiln_win_utf8_into(const wchar_t *wide, char *buf, size_t cap)
{
    char *s = kiln_win_utf8(wide);
    size_t n = s ? strlen(s) : 0;
    if (!s || n >= cap) {
        if (cap) buf[0] = '\0';
        free(s);
        return -1;
    }
    memcpy(buf, s, n + 1);
    free(s);
    return 0;
}

void kiln_win_error(char *err, size_t errcap, const char *what, DWORD code)
{
    wchar_t *text = NULL;
    char *utf8 = NULL;
    if (!err || !errcap) return;
    DWORD n = FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM |
                                 FORMAT_MESSAGE_IGNORE_INSERTS,
                             NULL, code, 0, (LPWSTR)&text, 0, NULL);
    if (n && text) {
        /* The system text ends in ".\r\n"; the message continues after it. */
        while (n > 0 && (text[n - 1] == L'\r' || text[n - 1] == L'\n' || text[n - 1] == L' ' ||
                         text[n - 1] == L'.'))
            text[--n] = 0;
        utf8 = kiln_win_utf8(text);
    }
    if (utf8 && *utf8)
        snprintf(err, errcap, "%s: %s (error %lu)", what, utf8, (unsigned long)code);
    else
        snprintf(err, errcap, "%s: error %lu", what, (unsigned long)code);
    free(utf8);
    if (text) LocalFree(text);
}
