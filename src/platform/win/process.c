/* Process ids, liveness and child processes. */
#include "platform/platform.h"
#include "platform/win/wide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

struct kiln_child {
    HANDLE process;
    DWORD id;
};

uint64_t kiln_process_id(void) { return GetCurrentProcessId(); }

/* Windows has no signal 0. Opening the process asks the kernel whether the id names a
 * process object; the exit code tells a running process from one that has exited but whose
 * object is still held open by someone. Access denied (a process of another user, or a
 * protected one) still proves the process exists, so it counts as alive: a live owner's lock
 * must never be broken. */
int kiln_process_alive(uint64_t pid)
{
    if (pid == 0 || pid > 0xffffffffu) return 0;
    HANDLE h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, (DWORD)pid);
    if (!h) return GetLastError() == ERROR_INVALID_PARAMETER ? 0 : 1;
    DWORD code = 0;
    int alive = !GetExitCodeProcess(h, &code) || code == STILL_ACTIVE;
    CloseHandle(h);
    return alive;
}

/* Appends one argument quoted so that CommandLineToArgvW and the C runtime give it back
 * unchanged: backslashes double only where they precede a quote. */
static size_t quote_arg(wchar_t *out, const wchar_t *arg)
{
    size_t n = 0;
    int plain = arg[0] != 0 && wcspbrk(arg, L" \t\n\v\"") == NULL;
    if (plain) {
        size_t len = wcslen(arg);
        if (out) memcpy(out, arg, len * sizeof *out);
        return len;
    }
    if (out) out[n] = L'"';
    n++;
    for (const wchar_t *p = arg;; p++) {
        size_t slashes = 0;
        while (*p == L'\\') p++, slashes++;
        size_t copies = *p == 0 ? slashes * 2 : *p == L'"' ? slashes * 2 + 1 : slashes;
        for (size_t i = 0; i < copies; i++, n++)
            if (out) out[n] = L'\\';
        if (*p == 0) break;
        if (out) out[n] = *p;
        n++;
    }
    if (out) out[n] = L'"';
    return n + 1;
}

static wchar_t *command_line(const char *const *argv)
{
    size_t count = 0, total = 1;
    while (argv[count]) count++;
    wchar_t **wide = calloc(count + 1, sizeof *wide);
    wchar_t *line = NULL;
    if (!wide) return NULL;
    for (size_t i = 0; i < count; i++) {
        wide[i] = kiln_win_wide(argv[i]);
        if (!wide[i]) goto done;
        total += quote_arg(NULL, wide[i]) + 1;
    }
    line = malloc(total * sizeof *line);
    if (!line) goto done;
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (i) line[n++] = L' ';
        n += quote_arg(line + n, wide[i]);
    }
    line[n] = 0;
done:
    for (size_t i = 0; i < count; i++) free(wide[i]);
    free(wide);
    return line;
}

/* Runs the command line with the standard handles passed on and no other handle: the
 * handle list keeps anything else inheritable in this process (a C runtime file, say) out of
 * the child, where it could hold a lock file or pipe open after we close ours. */
static BOOL create_with_std_handles(wchar_t *line, PROCESS_INFORMATION *pi)
{
    STARTUPINFOEXW si;
    HANDLE list[3];
    DWORD count = 0;
    SIZE_T size = 0;
    BOOL ok = FALSE, listed = FALSE;
    memset(&si, 0, sizeof si);
    si.StartupInfo.cb = sizeof si;
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    si.StartupInfo.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
    si.StartupInfo.hStdError = GetStdHandle(STD_ERROR_HANDLE);
    HANDLE std[3] = {si.StartupInfo.hStdInput, si.StartupInfo.hStdOutput,
                     si.StartupInfo.hStdError};
    for (int i = 0; i < 3; i++) {
        int seen = 0;
        if (!std[i] || std[i] == INVALID_HANDLE_VALUE) continue;
        for (DWORD j = 0; j < count; j++) seen |= list[j] == std[i];
        /* A handle must be inheritable to be listed; the list still limits what goes. */
        if (!seen && SetHandleInformation(std[i], HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT))
            list[count++] = std[i];
    }
    InitializeProcThreadAttributeList(NULL, 1, 0, &size);
    si.lpAttributeList = count && size ? malloc(size) : NULL;
    if (si.lpAttributeList && InitializeProcThreadAttributeList(si.lpAttributeList, 1, 0, &size)) {
        listed = UpdateProcThreadAttribute(si.lpAttributeList, 0,
                                           PROC_THREAD_ATTRIBUTE_HANDLE_LIST, list,
                                           count * sizeof *list, NULL, NULL);
        if (listed)
            ok = CreateProcessW(NULL, line, NULL, NULL, TRUE, EXTENDED_STARTUPINFO_PRESENT, NULL,
                                NULL, &si.StartupInfo, pi);
        DeleteProcThreadAttributeList(si.lpAttributeList);
    }
    free(si.lpAttributeList);
    if (!listed) {
        /* Without a handle list nothing is inherited, standard handles included. */
        si.StartupInfo.cb = sizeof si.StartupInfo;
        si.StartupInfo.dwFlags = 0;
        ok = CreateProcessW(NULL, line, NULL, NULL, FALSE, 0, NULL, NULL, &si.StartupInfo, pi);
    }
    return ok;
}

kiln_child *kiln_process_spawn(const char *const *argv, char *err, size_t errcap)
{
    PROCESS_INFORMATION pi;
    kiln_child *c;
    wchar_t *line;
    if (!argv || !argv[0]) {
        if (errcap) snprintf(err, errcap, "no program to run");
        return NULL;
    }
    line = command_line(argv);
    c = line ? calloc(1, sizeof *c) : NULL;
    if (!c) {
        free(line);
        if (errcap) snprintf(err, errcap, "cannot run '%s': bad argument or out of memory",
                             argv[0]);
        return NULL;
    }
    /* No application name: CreateProcessW then takes the program from the quoted first
     * argument and adds ".exe" when it has no extension, as a shell would. */
    if (!create_with_std_handles(line, &pi)) {
        DWORD code = GetLastError();
        char what[512];
        snprintf(what, sizeof what, "cannot run '%s'", argv[0]);
        kiln_win_error(err, errcap, what, code);
        free(line);
        free(c);
        return NULL;
    }
    free(line);
    CloseHandle(pi.hThread);
    c->process = pi.hProcess;
    c->id = pi.dwProcessId;
    return c;
}

uint64_t kiln_process_child_id(const kiln_child *child) { return child ? child->id : 0; }

int kiln_process_kill(kiln_child *child)
{
    if (!child) return -1;
    /* 137 = 128 + SIGKILL, the code a shell reports for a killed process on Unix. */
    if (TerminateProcess(child->process, 137)) return 0;
    /* Access is denied once the process has already exited; that is success here. */
    return WaitForSingleObject(child->process, 0) == WAIT_OBJECT_0 ? 0 : -1;
}

int kiln_process_wait(kiln_child *child, unsigned timeout_ms, int *code)
{
    DWORD exit_code = 0;
    if (!child) return -1;
    DWORD r = WaitForSingleObject(child->process,
                                  timeout_ms == KILN_WAIT_FOREVER ? INFINITE : timeout_ms);
    if (r == WAIT_TIMEOUT) return 1;
    if (r != WAIT_OBJECT_0 || !GetExitCodeProcess(child->process, &exit_code)) return -1;
    if (code) *code = (int)exit_code;
    return 0;
}

void kiln_process_free(kiln_child *child)
{
    if (!child) return;
    CloseHandle(child->process);
    free(child);
}

/* One argument of a command line by the C runtime's rules: 2n backslashes before a quote
 * give n and the quote opens or closes quoting, 2n + 1 give n and a literal quote, "" inside
 * quotes is a literal quote, other backslashes are literal. Returns the end of the argument;
 * out (if non-NULL) receives it. */
static const wchar_t *next_arg(const wchar_t *p, wchar_t *out, size_t *len)
{
    int quoted = 0;
    size_t n = 0;
    while (*p && (quoted || (*p != L' ' && *p != L'\t'))) {
        size_t slashes = 0;
        while (*p == L'\\') p++, slashes++;
        if (*p == L'"') {
            for (size_t i = 0; i < slashes / 2; i++, n++)
                if (out) out[n] = L'\\';
            if (slashes % 2) {
                if (out) out[n] = L'"';
                n++;
            } else if (quoted && p[1] == L'"') {
                if (out) out[n] = L'"';
                n++;
                p++;
            } else {
                quoted = !quoted;
            }
            p++;
            continue;
        }
        for (size_t i = 0; i < slashes; i++, n++)
            if (out) out[n] = L'\\';
        if (!slashes) {
            if (out) out[n] = *p;
            n++;
            p++;
        }
    }
    *len = n;
    return p;
}

char **kiln_process_utf8_args(int argc, char **argv)
{
    static char **cached;
    const wchar_t *line = GetCommandLineW(), *p = line;
    size_t count = 0, len = 0;
    (void)argc;
    if (cached) return cached;
    if (!line) return argv;
    /* The program name is special: it ends at the closing quote or the first blank, and
     * backslashes in it are never escapes. */
    const wchar_t *name_end;
    if (*p == L'"') {
        name_end = wcschr(p + 1, L'"');
        if (!name_end) name_end = p + wcslen(p);
    } else {
        name_end = p + wcscspn(p, L" \t");
    }
    for (const wchar_t *q = *name_end == L'"' ? name_end + 1 : name_end;;) {
        while (*q == L' ' || *q == L'\t') q++;
        if (!*q) break;
        q = next_arg(q, NULL, &len);
        count++;
    }
    char **args = calloc(count + 2, sizeof *args);
    wchar_t *buf = malloc((wcslen(line) + 1) * sizeof *buf);
    if (!args || !buf) goto fail;
    size_t name_len = (size_t)(name_end - p) - (*p == L'"');
    memcpy(buf, p + (*p == L'"'), name_len * sizeof *buf);
    buf[name_len] = 0;
    args[0] = kiln_win_utf8(buf);
    if (!args[0]) goto fail;
    size_t i = 1;
    for (const wchar_t *q = *name_end == L'"' ? name_end + 1 : name_end;;) {
        while (*q == L' ' || *q == L'\t') q++;
        if (!*q) break;
        q = next_arg(q, buf, &len);
        buf[len] = 0;
        args[i] = kiln_win_utf8(buf);
        if (!args[i++]) goto fail;
    }
    free(buf);
    cached = args;
    return args;
fail:
    if (args)
        for (size_t j = 0; j < count + 1; j++) free(args[j]);
    free(args);
    free(buf);
    return argv;
}
