/*
 * JSON in the tool. Writing: kiln_json (src/core/json.h) indented for people
 * (tool_json_init / tool_json_print). Reading: a small parser for the text
 * kiln_info_json() writes, which `kiln info` renders as "key: value" lines.
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
/* A writer that indents by two spaces and writes fractions with 10 significant digits
 * (enough for any measured figure, free of binary round-off tails). */
void tool_json_init(kiln_json *j);
/* The writer's text and a newline on f; 1 after reporting on stderr that it ran out of
 * memory (what names the command), else 0. */
int tool_json_print(FILE *f, const kiln_json *j, const char *what);
/* The same text malloc'd (NULL when out of memory). */
char *tool_json_text(const kiln_json *j);

#endif
