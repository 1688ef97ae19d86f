/* Process ids, liveness and child processes. */
#define _POSIX_C_SOURCE 200809L
#include "platform/platform.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct kiln_child {
    pid_t pid;
    int reaped;
    int code;
};

uint64_t kiln_process_id(void) { return (uint64_t)getpid(); }

/* A zombie has exited but still answers kill(pid, 0) until its parent reaps it; it holds
 * nothing any more. /proc tells them apart on Linux; without /proc the process counts as
 * alive, the safe answer for a lock. */
static int is_zombie(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) S ...": comm may itself contain ") ", so the state follows the last ')'. */
    const char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

int kiln_process_alive(uint64_t pid)
{
    /* pid 0 and negative values address process groups in kill(); they are never a lock
     * owner, so they are not alive. */
    if (pid == 0 || pid > (uint64_t)INT32_MAX) return 0;
    if (kill((pid_t)pid, 0) == 0) return !is_zombie((pid_t)pid);
    /* EPERM: the process exists but belongs to another user. Only ESRCH means gone. */
    return errno == ESRCH ? 0 : 1;
}

kiln_child *kiln_process_spawn(const char *const *argv, char *err, size_t errcap)
{
    kiln_child *c;
    pid_t pid;
    if (!argv || !argv[0]) {
        if (errcap) snprintf(err, errcap, "no program to run");
        return NULL;
    }
    if (!(c = calloc(1, sizeof *c))) {
        if (errcap) snprintf(err, errcap, "out of memory");
        return NULL;
    }
    /* posix_spawn, not fork: fork in a process with other threads may copy a locked
     * allocator into the child. The casts follow POSIX's historical argv type. */
    int rc = strchr(argv[0], '/')
                 ? posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ)
                 : posix_spawnp(&pid, argv[0], NULL, NULL, (char *const *)argv, environ);
    if (rc != 0) {
        if (errcap) snprintf(err, errcap, "cannot run '%s': %s", argv[0], strerror(rc));
        free(c);
        return NULL;
    }
    c->pid = pid;
    return c;
}

uint64_t kiln_process_child_id(const kiln_child *child)
{
    return child ? (uint64_t)child->pid : 0;
}

int kiln_process_kill(kiln_child *child)
{
    if (!child) return -1;
    if (child->reaped) return 0;
    return kill(child->pid, SIGKILL) == 0 || errno == ESRCH ? 0 : -1;
}

static int try_reap(kiln_child *child, int options)
{
    int status;
    pid_t r;
    do r = waitpid(child->pid, &status, options);
    while (r < 0 && errno == EINTR);
    if (r < 0) return -1;
    if (r == 0) return 1;
    child->reaped = 1;
    child->code = WIFEXITED(status)     ? WEXITSTATUS(status)
                  : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                        : -1;
    return 0;
}

int kiln_process_wait(kiln_child *child, unsigned timeout_ms, int *code)
{
    if (!child) return -1;
    if (!child->reaped) {
        int r;
        if (timeout_ms == KILN_WAIT_FOREVER) {
            r = try_reap(child, 0);
        } else {
            /* waitpid has no timeout; poll, which is fine for the short waits this serves. */
            uint64_t deadline = kiln_time_ns() + (uint64_t)timeout_ms * 1000000u;
            while ((r = try_reap(child, WNOHANG)) == 1 && kiln_time_ns() < deadline)
                kiln_sleep_ms(2);
        }
        if (r != 0) return r;
    }
    if (code) *code = child->code;
    return 0;
}

void kiln_process_free(kiln_child *child) { free(child); }

char **kiln_process_utf8_args(int argc, char **argv)
{
    (void)argc;
    return argv;
}
