/* Logging: silent unless a callback is installed or KILN_LOG names a level. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "platform/platform.h"

#if !defined(__STDC_NO_ATOMICS__)
#include <stdatomic.h>
typedef atomic_int kiln_log_threshold_t;
#define THRESHOLD_LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define THRESHOLD_STORE(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)
#else
typedef volatile int kiln_log_threshold_t;
#define THRESHOLD_LOAD(x) (x)
#define THRESHOLD_STORE(x, v) ((x) = (v))
#endif

/* The callback, its data and its level change together under log_mutex. threshold is the
 * most verbose level anything would print (-1: nothing), read without the lock so that a
 * message nobody wants costs one load. The callback is called with no lock held: it may
 * call kiln itself (a failing call logs at debug level), and may even install another. */
static kiln_mutex *log_mutex;
static kiln_log_fn log_fn;
static void *log_user;
static kiln_log_level log_max = KILN_LOG_WARN;
static int log_env_level = -1; /* -1: KILN_LOG unset -> silent */
static kiln_log_threshold_t log_threshold = -1;
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
    THRESHOLD_STORE(log_threshold, log_env_level);
}

void kiln_set_log_callback(kiln_log_fn fn, kiln_log_level max_level, void *user)
{
    kiln_once_run(&log_once, log_init);
    if (log_mutex) kiln_mutex_lock(log_mutex);
    log_fn = fn;
    log_user = user;
    log_max = max_level;
    THRESHOLD_STORE(log_threshold, fn ? (int)max_level : log_env_level);
    if (log_mutex) kiln_mutex_unlock(log_mutex);
}

void kiln_log(kiln_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    char msg[1024];
    va_list ap;
    kiln_log_fn fn;
    void *user;
    int wanted;
    kiln_once_run(&log_once, log_init);
    if ((int)level > THRESHOLD_LOAD(log_threshold)) return;
    if (log_mutex) kiln_mutex_lock(log_mutex);
    fn = log_fn;
    user = log_user;
    wanted = fn ? (int)level <= (int)log_max : (int)level <= log_env_level;
    if (log_mutex) kiln_mutex_unlock(log_mutex);
    if (!wanted) return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (fn) fn(level, msg, user);
    else fprintf(stderr, "kiln %s: %s\n", names[level], msg);
}
