#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void tool_usage_error(const tool_cmd *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "kiln %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'kiln %s --help' for usage.\n", cmd->name);
    exit(TOOL_EXIT_USAGE);
}

/* "a, b, c" into buf, for messages listing the allowed values. */
static const char *join_choices(const char *const *choices, char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; choices[i]; i++) {
        int n = snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", choices[i]);
        if (n < 0 || (size_t)n >= cap - len) break;
        len += (size_t)n;
    }
    return buf;
}

static int find_choice(const char *const *choices, const char *value) {
    for (int i = 0; choices[i]; i++)
        if (strcmp(choices[i], value) == 0) return i;
    return -1;
}

int tool_require_choice(const tool_cmd *cmd, const char *what, const char *value,
                        const char *const *choices) {
    char allowed[256];
    int i = find_choice(choices, value);
    if (i < 0)
        tool_usage_error(cmd, "unknown %s '%s' (allowed: %s)", what, value,
                         join_choices(choices, allowed, sizeof allowed));
    return i;
}

static int64_t parse_int(const tool_cmd *cmd, const tool_opt *o, const char *text,
                         const char *whole) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE)
        tool_usage_error(cmd, "--%s: '%s' is not an integer", o->name, whole);
    if (v < o->min || v > o->max)
        tool_usage_error(cmd, "--%s: %lld is out of range (allowed: %lld to %lld)", o->name, v,
                         (long long)o->min, (long long)o->max);
    return (int64_t)v;
}

/* Splits a comma-separated value into at most TOOL_LIST_MAX non-empty items. */
static int split_list(const tool_cmd *cmd, const tool_opt *o, const char *value,
                      char items[TOOL_LIST_MAX][64]) {
    int n = 0;
    const char *p = value;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) tool_usage_error(cmd, "--%s: empty item in '%s'", o->name, value);
        if (n == TOOL_LIST_MAX)
            tool_usage_error(cmd, "--%s: more than %d items in '%s'", o->name, TOOL_LIST_MAX,
                             value);
        if (len >= 64) tool_usage_error(cmd, "--%s: item too long in '%s'", o->name, value);
        memcpy(items[n], p, len);
        items[n][len] = '\0';
        n++;
        if (!comma) return n;
        p = comma + 1;
    }
}

static void set_value(const tool_cmd *cmd, const tool_opt *o, const char *value) {
    char allowed[256];
    char items[TOOL_LIST_MAX][64];
    switch (o->kind) {
    case TOOL_OPT_FLAG:
        *(int *)o->dest = 1;
        return;
    case TOOL_OPT_INT:
        *(int64_t *)o->dest = parse_int(cmd, o, value, value);
        return;
    case TOOL_OPT_INT_LIST: {
        tool_int_list *l = o->dest;
        l->n = split_list(cmd, o, value, items);
        for (int i = 0; i < l->n; i++) l->v[i] = parse_int(cmd, o, items[i], value);
        return;
    }
    case TOOL_OPT_CHOICE: {
        int i = find_choice(o->choices, value);
        if (i < 0)
            tool_usage_error(cmd, "--%s: unknown value '%s' (allowed: %s)", o->name, value,
                             join_choices(o->choices, allowed, sizeof allowed));
        *(int *)o->dest = i;
        return;
    }
    case TOOL_OPT_CHOICE_LIST: {
        tool_choice_list *l = o->dest;
        l->n = split_list(cmd, o, value, items);
        for (int i = 0; i < l->n; i++) {
            l->v[i] = find_choice(o->choices, items[i]);
            if (l->v[i] < 0)
                tool_usage_error(cmd, "--%s: unknown value '%s' (allowed: %s)", o->name,
                                 items[i], join_choices(o->choices, allowed, sizeof allowed));
        }
        return;
    }
    case TOOL_OPT_STRING:
        if (value[0] == '\0') tool_usage_error(cmd, "--%s: empty value", o->name);
        *(const char **)o->dest = value;
        return;
    }
}

static void print_usage(const tool_cmd *cmd) { fputs(cmd->usage, stdout); }

static void unknown_option(const tool_cmd *cmd, const char *arg, const tool_opt *opts) {
    char known[512];
    size_t len = 0;
    known[0] = '\0';
    for (const tool_opt *o = opts; o && o->name; o++) {
        int n = snprintf(known + len, sizeof known - len, "%s--%s", len ? ", " : "", o->name);
        if (n < 0 || (size_t)n >= sizeof known - len) break;
        len += (size_t)n;
    }
    if (len == 0)
        tool_usage_error(cmd, "unknown option '%s' (this command takes no options)", arg);
    tool_usage_error(cmd, "unknown option '%s' (allowed: %s, --help)", arg, known);
}

int tool_parse(const tool_cmd *cmd, int argc, char **argv, const tool_opt *opts,
               const char **pos, int max_pos) {
    int npos = 0, options_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_done && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
            print_usage(cmd);
            exit(TOOL_EXIT_OK);
        }
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (options_done || arg[0] != '-' || arg[1] == '\0') {
            if (npos == max_pos) {
                if (max_pos == 0)
                    tool_usage_error(cmd, "unexpected argument '%s' (this command takes none)",
                                     arg);
                tool_usage_error(cmd, "unexpected extra argument '%s'", arg);
            }
            pos[npos++] = arg;
            continue;
        }
        if (arg[1] != '-') unknown_option(cmd, arg, opts);

        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        const tool_opt *o = opts;
        for (; o && o->name; o++)
            if (strlen(o->name) == name_len && strncmp(o->name, name, name_len) == 0) break;
        if (!o || !o->name) unknown_option(cmd, arg, opts);

        if (o->kind == TOOL_OPT_FLAG) {
            if (eq) tool_usage_error(cmd, "--%s takes no value (got '%s')", o->name, eq + 1);
            set_value(cmd, o, NULL);
            continue;
        }
        const char *value = eq ? eq + 1 : NULL;
        if (!value) {
            if (i + 1 == argc) tool_usage_error(cmd, "--%s needs a value", o->name);
            value = argv[++i];
        }
        set_value(cmd, o, value);
    }
    return npos;
}
