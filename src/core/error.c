/* Status names and the thread-local last-error message. */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"
#include "platform/platform.h"

static KILN_THREAD_LOCAL char last_error[1024];

const char *kiln_status_string(kiln_status status)
{
    switch (status) {
#define KILN_XX_(name, value, text)                                                          \
    case KILN_##name:                                                                        \
        return text;
        KILN_STATUS_MAP(KILN_XX_)
#undef KILN_XX_
    }
    return "unknown status";
}

const char *kiln_status_name(kiln_status status)
{
    switch (status) {
#define KILN_XX_(name, value, text)                                                          \
    case KILN_##name:                                                                        \
        return #name;
        KILN_STATUS_MAP(KILN_XX_)
#undef KILN_XX_
    }
    return "UNKNOWN";
}

const char *kiln_last_error(void)
{
    return last_error;
}

void kiln_error_clear(void)
{
    last_error[0] = '\0';
}

kiln_status kiln_fail(kiln_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    kiln_log(KILN_LOG_DEBUG, "%s: %s", kiln_status_name(status), last_error);
    return status;
}
