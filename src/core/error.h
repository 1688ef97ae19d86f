/* Internal error reporting: set the thread-local message and return a status. */
#ifndef KILN_CORE_ERROR_H
#define KILN_CORE_ERROR_H

#include <stdio.h> /* defines __MINGW_PRINTF_FORMAT under MinGW */

#include "kiln.h"

/* MinGW checks printf formats against the old msvcrt rules unless told the C99 ones. */
#if defined(__MINGW_PRINTF_FORMAT)
#define KILN_PRINTF_FORMAT __MINGW_PRINTF_FORMAT
#else
#define KILN_PRINTF_FORMAT printf
#endif

/* Formats the thread-local last-error message and returns status (printf-style). */
kiln_status kiln_fail(kiln_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(KILN_PRINTF_FORMAT, 2, 3)))
#endif
    ;

/* Clears the thread-local message (called at the start of every public entry point). */
void kiln_error_clear(void);

/* Return early with a message when cond holds. */
#define KILN_FAIL_IF(cond, status, ...)                                                      \
    do {                                                                                     \
        if (cond) return kiln_fail((status), __VA_ARGS__);                                   \
    } while (0)

/* Propagate a non-OK status (message already set by the callee). */
#define KILN_FORWARD(expr)                                                                   \
    do {                                                                                     \
        kiln_status kiln_fwd_st_ = (expr);                                                   \
        if (kiln_fwd_st_ != KILN_OK) return kiln_fwd_st_;                                    \
    } while (0)

/* Logging through the callback / KILN_LOG (src/core/log.c). */
void kiln_log(kiln_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(KILN_PRINTF_FORMAT, 2, 3)))
#endif
    ;

#endif
