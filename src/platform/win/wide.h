/* UTF-8 <-> UTF-16 at the Windows system-call boundary, and system error text. */
#ifndef KILN_PLATFORM_WIN_WIDE_H
#define KILN_PLATFORM_WIN_WIDE_H

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>

#include <stddef.h>

/* malloc'd UTF-16 copy of a UTF-8 string; NULL if it is not valid UTF-8 or memory ran out. */
wchar_t *kiln_win_wide(const char *utf8);
/* Like kiln_win_wide, for a path: one too long for MAX_PATH gets the \\?\ prefix so the
 * system accepts it without the long-path registry setting. */
wchar_t *kiln_win_path(const char *utf8);
/* malloc'd UTF-8 copy of a UTF-16 string; NULL on failure. */
char *kiln_win_utf8(const wchar_t *wide);
/* UTF-8 copy into buf; -1 (buf untouched beyond a terminator) if it does not fit. */
int kiln_win_utf8_into(const wchar_t *wide, char *buf, size_t cap);
/* Writes "<what>: <FormatMessageW text of code> (error <code>)" into err as UTF-8. */
void kiln_win_error(char *err, size_t errcap, const char *what, DWORD code);

#endif
