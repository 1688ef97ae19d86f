/* A tiny JSON writer into a growing buffer, for kiln_info_json() and the tool. */
#ifndef KILN_CORE_JSON_H
#define KILN_CORE_JSON_H

#include <stddef.h>
#include <stdint.h>

typedef struct kiln_json {
    char *buf;
    size_t len, cap;
    int depth;
    unsigned char first[32]; /* per depth: no element written yet */
    int oom;
    int indent; /* spaces per level, one member per line; 0: compact, on one line */
    int digits; /* significant digits of non-integer numbers; 0: 17 (exact round trip) */
} kiln_json;

/* A compact writer; set indent (and digits) afterwards for text meant for people. */
void kiln_json_init(kiln_json *j);
void kiln_json_free(kiln_json *j);
/* key is NULL inside arrays and for the top-level value. */
void kiln_json_object_begin(kiln_json *j, const char *key);
void kiln_json_object_end(kiln_json *j);
void kiln_json_array_begin(kiln_json *j, const char *key);
void kiln_json_array_end(kiln_json *j);
void kiln_json_string(kiln_json *j, const char *key, const char *value); /* NULL -> null */
void kiln_json_int(kiln_json *j, const char *key, int64_t value);
void kiln_json_number(kiln_json *j, const char *key, double value);      /* NaN/inf -> null */
void kiln_json_bool(kiln_json *j, const char *key, int value);
void kiln_json_null(kiln_json *j, const char *key);

#endif
