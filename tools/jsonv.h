/*
 * A small JSON reader for the text kiln_info_json() writes: `kiln info` renders it for
 * people, and the benchmark copies it into its results so every file says what machine and
 * library produced it.
 */
#ifndef KILN_TOOL_JSONV_H
#define KILN_TOOL_JSONV_H

#include <stddef.h>
#include <stdio.h>

#include "json.h"

typedef enum jv_type { JV_NULL, JV_BOOL, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT } jv_type;

typedef struct jv {
    jv_type type;
    char *key;  /* member name inside an object, else NULL */
    char *text; /* STRING: the decoded UTF-8 value; NUMBER: the literal */
    int boolean;
    struct jv *child, *next; /* ARRAY / OBJECT elements, in order */
} jv;

/* NULL on a syntax error, with its position written to err. */
jv *jv_parse(const char *text, char *err, size_t errcap);
void jv_free(jv *v);

/* Member of an object by name; NULL if v is not an object or has no such member. */
const jv *jv_get(const jv *v, const char *key);
/* The string or number text of a member, or NULL. */
const char *jv_get_text(const jv *v, const char *key);

/* "key: value" lines, nested objects and arrays indented by two spaces per level. */
void jv_print_text(FILE *f, const jv *v);
/* Writes v under key (NULL inside arrays) into an open kiln_json writer. */
void jv_emit(kiln_json *out, const char *key, const jv *v);
/* Indented JSON text of v ending in a newline, malloc'd (NULL when out of memory).
 * Fractions are written with 10 significant digits, enough for any measured figure and
 * free of binary round-off tails. */
char *jv_to_pretty_json(const jv *v);
/* The same for everything a kiln_json writer holds (NULL if it ran out of memory). */
char *jv_writer_to_pretty_json(const kiln_json *j);

#endif
