#include "jsonv.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *s, *start;
    char *err;
    size_t errcap;
    int failed;
} parser;

static void fail(parser *p, const char *what) {
    if (!p->failed)
        snprintf(p->err, p->errcap, "%s at offset %ld", what, (long)(p->s - p->start));
    p->failed = 1;
}

static void skip_ws(parser *p) {
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r') p->s++;
}

static jv *new_node(parser *p, jv_type type) {
    jv *v = calloc(1, sizeof *v);
    if (!v) fail(p, "out of memory");
    else v->type = type;
    return v;
}

static int hex4(const char *s, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the string at p->s (on its opening quote); the result is never longer than the
 * escaped text, so one allocation of that size suffices. */
static char *parse_string(parser *p) {
    const char *q = ++p->s;
    while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
    if (*q != '"') {
        fail(p, "unterminated string");
        return NULL;
    }
    char *out = malloc((size_t)(q - p->s) + 1), *o = out;
    if (!out) {
        fail(p, "out of memory");
        return NULL;
    }
    while (*p->s != '"') {
        unsigned char c = (unsigned char)*p->s;
        if (c < 0x20) {
            fail(p, "control character in string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            *o++ = *p->s++;
            continue;
        }
        char e = p->s[1];
        p->s += 2;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(p->s, &cp) != 0) {
                fail(p, "bad \\u escape");
                free(out);
                return NULL;
            }
            p->s += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && p->s[0] == '\\' && p->s[1] == 'u' &&
                hex4(p->s + 2, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p->s += 6;
            }
            o += put_utf8(o, cp);
            break;
        }
        default:
            fail(p, "bad escape in string");
            free(out);
            return NULL;
        }
    }
    p->s++;
    *o = '\0';
    return out;
}

static jv *parse_value(parser *p, int depth);

static jv *parse_container(parser *p, int depth, jv_type type) {
    char close = type == JV_OBJECT ? '}' : ']';
    jv *v = new_node(p, type), **tail;
    if (!v) return NULL;
    tail = &v->child;
    p->s++;
    skip_ws(p);
    if (*p->s == close) {
        p->s++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(p);
        if (type == JV_OBJECT) {
            if (*p->s != '"') {
                fail(p, "expected a member name");
                break;
            }
            key = parse_string(p);
            if (!key) break;
            skip_ws(p);
            if (*p->s != ':') {
                free(key);
                fail(p, "expected ':'");
                break;
            }
            p->s++;
        }
        jv *item = parse_value(p, depth + 1);
        if (!item) {
            free(key);
            break;
        }
        item->key = key;
        *tail = item;
        tail = &item->next;
        skip_ws(p);
        if (*p->s == ',') {
            p->s++;
            continue;
        }
        if (*p->s == close) {
            p->s++;
            return v;
        }
        fail(p, type == JV_OBJECT ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    jv_free(v);
    return NULL;
}

static jv *parse_number(parser *p) {
    const char *b = p->s;
    if (*p->s == '-') p->s++;
    if (!(*p->s >= '0' && *p->s <= '9')) {
        fail(p, "unexpected character");
        return NULL;
    }
    while ((*p->s >= '0' && *p->s <= '9') || *p->s == '.' || *p->s == 'e' || *p->s == 'E' ||
           *p->s == '+' || *p->s == '-')
        p->s++;
    jv *v = new_node(p, JV_NUMBER);
    if (!v) return NULL;
    v->text = malloc((size_t)(p->s - b) + 1);
    if (!v->text) {
        fail(p, "out of memory");
        jv_free(v);
        return NULL;
    }
    memcpy(v->text, b, (size_t)(p->s - b));
    v->text[p->s - b] = '\0';
    return v;
}

static jv *parse_literal(parser *p, const char *word, jv_type type, int boolean) {
    size_t n = strlen(word);
    if (strncmp(p->s, word, n) != 0) {
        fail(p, "unexpected character");
        return NULL;
    }
    p->s += n;
    jv *v = new_node(p, type);
    if (v) v->boolean = boolean;
    return v;
}

static jv *parse_value(parser *p, int depth) {
    if (depth > 64) {
        fail(p, "nested too deeply");
        return NULL;
    }
    skip_ws(p);
    switch (*p->s) {
    case '{': return parse_container(p, depth, JV_OBJECT);
    case '[': return parse_container(p, depth, JV_ARRAY);
    case '"': {
        char *s = parse_string(p);
        if (!s) return NULL;
        jv *v = new_node(p, JV_STRING);
        if (!v) free(s);
        else v->text = s;
        return v;
    }
    case 't': return parse_literal(p, "true", JV_BOOL, 1);
    case 'f': return parse_literal(p, "false", JV_BOOL, 0);
    case 'n': return parse_literal(p, "null", JV_NULL, 0);
    case '\0': fail(p, "unexpected end of text"); return NULL;
    default: return parse_number(p);
    }
}

jv *jv_parse(const char *text, char *err, size_t errcap) {
    parser p = {text, text, err, errcap, 0};
    jv *v = parse_value(&p, 0);
    if (v) {
        skip_ws(&p);
        if (*p.s != '\0') {
            fail(&p, "text after the value");
            jv_free(v);
            v = NULL;
        }
    }
    return v;
}

void jv_free(jv *v) {
    while (v) {
        jv *next = v->next;
        jv_free(v->child);
        free(v->key);
        free(v->text);
        free(v);
        v = next;
    }
}

const jv *jv_get(const jv *v, const char *key) {
    if (!v || v->type != JV_OBJECT) return NULL;
    for (const jv *c = v->child; c; c = c->next)
        if (strcmp(c->key, key) == 0) return c;
    return NULL;
}

const char *jv_get_text(const jv *v, const char *key) {
    const jv *m = jv_get(v, key);
    return m && (m->type == JV_STRING || m->type == JV_NUMBER) ? m->text : NULL;
}

static int is_scalar(const jv *v) { return v->type != JV_ARRAY && v->type != JV_OBJECT; }

static void print_scalar(FILE *f, const jv *v) {
    switch (v->type) {
    case JV_NULL: fputs("-", f); break;
    case JV_BOOL: fputs(v->boolean ? "yes" : "no", f); break;
    default: fputs(v->text, f); break;
    }
}

/* Arrays of scalars print on one line ("a, b, c"); anything else as an indented block. */
static int flat_array(const jv *v) {
    for (const jv *c = v->child; c; c = c->next)
        if (!is_scalar(c)) return 0;
    return 1;
}

/* hang: the first line continues a "- " already printed by the enclosing array. */
static void print_block(FILE *f, const jv *v, int indent, int hang) {
    for (const jv *c = v->child; c; c = c->next) {
        if (!hang || c != v->child) fprintf(f, "%*s", indent, "");
        if (c->key) fprintf(f, "%s:", c->key);
        else fputs("-", f);
        if (is_scalar(c)) {
            fputc(' ', f);
            print_scalar(f, c);
            fputc('\n', f);
        } else if (!c->child) {
            fputs(c->type == JV_ARRAY ? " (none)\n" : " {}\n", f);
        } else if (c->type == JV_ARRAY && flat_array(c)) {
            for (const jv *e = c->child; e; e = e->next) {
                fputs(e == c->child ? " " : ", ", f);
                print_scalar(f, e);
            }
            fputc('\n', f);
        } else if (!c->key && c->type == JV_OBJECT) {
            fputc(' ', f);
            print_block(f, c, indent + 2, 1);
        } else {
            fputc('\n', f);
            print_block(f, c, indent + 2, 0);
        }
    }
}

void jv_print_text(FILE *f, const jv *v) {
    if (is_scalar(v)) {
        print_scalar(f, v);
        fputc('\n', f);
        return;
    }
    print_block(f, v, 0, 0);
}

void tool_json_init(kiln_json *j) {
    kiln_json_init(j);
    j->indent = 2;
    j->digits = 10;
}

char *tool_json_text(const kiln_json *j) {
    if (j->oom || !j->buf) return NULL;
    char *text = malloc(j->len + 2);
    if (!text) return NULL;
    memcpy(text, j->buf, j->len);
    text[j->len] = '\n';
    text[j->len + 1] = '\0';
    return text;
}

int tool_json_print(FILE *f, const kiln_json *j, const char *what) {
    if (j->oom || !j->buf) {
        fprintf(stderr, "%s: out of memory writing JSON\n", what);
        return 1;
    }
    fputs(j->buf, f);
    fputc('\n', f);
    return 0;
}
