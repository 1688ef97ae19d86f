/* Logging: silent unless a callback is installed or KILN_LOG names a level. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "platform/platform.h"

static kiln_mutex *log_mutex;
static kiln_log_fn log_fn;
static void *log_user;
static kiln_log_level log_max = KILN_LOG_WARN;
static int log_env_level = -1; /* -1: KILN_LOG unset -> silent */
static kiln_once log_once = KILN_ONCE_INIT;

static void log_init(void)
{
    char v[32];
    log_mutex = kiln_mutex_create();
    if (kiln_env_get("KILN_LOG", v, sizeof v)) {
        if (!strcmp(v, "error")) log_env_level = KILN_LOG_ERROR;
        else if (!strcmp(v, "warn") || !strcmp(v, "1")) log_env_level = KILN_LOG_WARN;
        else if (!strcmp(v, "info")) log_env_level = KILN_LOG_INFO;
        else if (!strcmp(v, "debug")) log_env_level = KILN_LOG_DEBUG;
    }
}

void kiln_set_log_callback(kiln_log_fn fn, kiln_log_level max_level, void *user)
{
    kiln_once_run(&log_once, log_init);
    if (log_mutex) kiln_mutex_lock(log_mutex);
    log_fn = fn;
    log_user = user;
    log_max = max_level;
    if (log_mutex) kiln_mutex_unlock(log_mutex);
}

void kiln_log(kiln_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    char msg[1024];
    va_list ap;
    kiln_once_run(&log_once, log_init);
    if (log_mutex) kiln_mutex_lock(log_mutex);
    if (log_fn ? (int)level <= (int)log_max : (int)level <= log_env_level) {
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        if (log_fn) log_fn(level, msg, log_user);
        else fprintf(stderr, "kiln %s: %s\n", names[level], msg);
    }
    if (log_mutex) kiln_mutex_unlock(log_mutex);
}
