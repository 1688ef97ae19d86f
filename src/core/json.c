/* A tiny JSON writer into a growing buffer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

void kiln_json_init(kiln_json *j)
{
    memset(j, 0, sizeof *j);
    j->first[0] = 1;
}

void kiln_json_free(kiln_json *j)
{
    free(j->buf);
    memset(j, 0, sizeof *j);
}

static void put(kiln_json *j, const char *s, size_t n)
{
    if (j->oom) return;
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 256;
        char *b;
        while (cap < j->len + n + 1) cap *= 2;
        b = realloc(j->buf, cap);
        if (!b) {
            j->oom = 1;
            return;
        }
        j->buf = b;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(kiln_json *j, const char *s)
{
    put(j, s, strlen(s));
}

static void quoted(kiln_json *j, const char *s)
{
    put(j, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(j, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            puts_(j, esc);
        } else {
            put(j, (const char *)&c, 1);
        }
    }
    put(j, "\"", 1);
}

/* With indent: a line break and the indentation of the current depth. */
static void newline(kiln_json *j, int depth)
{
    static const char spaces[] = "                                ";
    if (!j->indent) return;
    put(j, "\n", 1);
    for (int n = depth * j->indent; n > 0; n -= (int)sizeof spaces - 1)
        put(j, spaces, (size_t)(n < (int)sizeof spaces - 1 ? n : (int)sizeof spaces - 1));
}

static void member(kiln_json *j, const char *key)
{
    if (!j->first[j->depth]) put(j, ",", 1);
    if (j->len > 0) newline(j, j->depth);
    j->first[j->depth] = 0;
    if (key) {
        quoted(j, key);
        put(j, j->indent ? ": " : ":", j->indent ? 2 : 1);
    }
}

static void close_(kiln_json *j, const char *br)
{
    int had_members = !j->first[j->depth];
    if (j->depth > 0) j->depth--;
    if (had_members) newline(j, j->depth);
    put(j, br, 1);
}

static void open_(kiln_json *j, const char *key, const char *br)
{
    member(j, key);
    puts_(j, br);
    if (j->depth + 1 < (int)sizeof j->first) j->depth++;
    j->first[j->depth] = 1;
}

void kiln_json_object_begin(kiln_json *j, const char *key) { open_(j, key, "{"); }
void kiln_json_array_begin(kiln_json *j, const char *key) { open_(j, key, "["); }

void kiln_json_object_end(kiln_json *j) { close_(j, "}"); }
void kiln_json_array_end(kiln_json *j) { close_(j, "]"); }

void kiln_json_string(kiln_json *j, const char *key, const char *value)
{
    member(j, key);
    if (value) quoted(j, value);
    else puts_(j, "null");
}

void kiln_json_int(kiln_json *j, const char *key, int64_t value)
{
    char b[32];
    member(j, key);
    snprintf(b, sizeof b, "%lld", (long long)value);
    puts_(j, b);
}

void kiln_json_number(kiln_json *j, const char *key, double value)
{
    char b[64];
    member(j, key);
    if (!isfinite(value)) {
        puts_(j, "null");
        return;
    }
    snprintf(b, sizeof b, "%.*g", j->digits > 0 && j->digits < 17 ? j->digits : 17, value);
    puts_(j, b);
}

void kiln_json_bool(kiln_json *j, const char *key, int value)
{
    member(j, key);
    puts_(j, value ? "true" : "false");
}

void kiln_json_null(kiln_json *j, const char *key)
{
    member(j, key);
    puts_(j, "null");
}
