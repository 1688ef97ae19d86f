/*
 * Assertions for kiln's C tests. A failed check prints where it is (file:line), the case
 * being run (check_case()), the expression and both operands' values, then lets the test
 * go on so one run reports every failure. check_finish() turns the tally into the exit
 * code ctest reads: 0 pass, 1 fail, 77 skipped (nothing ran).
 *
 * Two kinds of skip: check_note_skip() for what the machine lacks (a GPU, a kernel
 * feature), check_skip_tool() for an optional tool that is not installed (a clang that knows
 * a target, NVRTC, a C compiler). KILN_TEST_STRICT=1 (set by .ci/run) turns the second kind
 * into a failure, so a green strict run means nothing was skipped for want of a package.
 *
 * Single-header and per-program: each test is one .c file that includes this once.
 */
#ifndef KILN_TESTS_CHECK_H
#define KILN_TESTS_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

#define CHECK_SKIP_CODE 77

static struct {
    long checks, failures, ran, skipped;
    char label[256];
} check_state_;

/* Names the case now running; printed with every failure until the next call. */
static inline void check_case(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(check_state_.label, sizeof check_state_.label, fmt, ap);
    va_end(ap);
}

static inline void check_fail_(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    check_state_.failures++;
    fprintf(stderr, "FAIL %s:%d [%s]: ", file, line, check_state_.label);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

static inline void check_note_ran(void) { check_state_.ran++; }

static inline void check_note_skip(const char *fmt, ...) {
    va_list ap;
    check_state_.skipped++;
    printf("SKIP ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* KILN_TEST_STRICT set to anything but "" or "0". */
static inline int check_strict(void) {
    const char *s = getenv("KILN_TEST_STRICT");
    return s && *s && strcmp(s, "0") != 0;
}

/* A case that needs an optional tool that is absent: fmt names the tool and how to get it.
 * A skip normally; a failure under KILN_TEST_STRICT=1. */
static inline void check_skip_tool(const char *fmt, ...) {
    va_list ap;
    FILE *f = check_strict() ? stderr : stdout;
    if (check_strict())
        check_state_.failures++;
    else
        check_state_.skipped++;
    fputs(check_strict() ? "FAIL (KILN_TEST_STRICT=1: a missing tool is a failure) " : "SKIP ", f);
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fflush(f);
}

/* Whole word: the name is not part of a longer identifier in s ("q" in "q's", not "seq"). */
static inline int check_has_word_(const char *s, const char *word) {
    size_t n = strlen(word);
    if (!s || n == 0) return 0;
    for (const char *p = strstr(s, word); p; p = strstr(p + 1, word)) {
        int before = p > s && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                               (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'));
        char c = p[n];
        int after = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9');
        if (!before && !after) return 1;
    }
    return 0;
}

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        check_state_.checks++;                                                               \
        if (!(cond)) check_fail_(__FILE__, __LINE__, "expected %s", #cond);                 \
    } while (0)

#define CHECK_INT_(a, op, b)                                                                 \
    do {                                                                                     \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                      \
        check_state_.checks++;                                                               \
        if (!(check_a_ op check_b_))                                                         \
            check_fail_(__FILE__, __LINE__, "%s %s %s: %lld vs %lld", #a, #op, #b, check_a_, \
                        check_b_);                                                           \
    } while (0)
#define CHECK_EQ(a, b) CHECK_INT_(a, ==, b)
#define CHECK_NE(a, b) CHECK_INT_(a, !=, b)
#define CHECK_GE(a, b) CHECK_INT_(a, >=, b)
#define CHECK_LE(a, b) CHECK_INT_(a, <=, b)
#define CHECK_GT(a, b) CHECK_INT_(a, >, b)

#define CHECK_STR_EQ(a, b)                                                                   \
    do {                                                                                     \
        const char *check_a_ = (a), *check_b_ = (b);                                         \
        check_state_.checks++;                                                               \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0)                       \
            check_fail_(__FILE__, __LINE__, "%s == %s: \"%s\" vs \"%s\"", #a, #b,            \
                        check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");     \
    } while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                                      \
    do {                                                                                     \
        const char *check_h_ = (hay), *check_n_ = (needle);                                  \
        check_state_.checks++;                                                               \
        if (!check_h_ || !strstr(check_h_, check_n_))                                        \
            check_fail_(__FILE__, __LINE__, "%s contains \"%s\": \"%s\"", #hay, check_n_,    \
                        check_h_ ? check_h_ : "(null)");                                     \
    } while (0)

/* |a - b| <= tol, and both NaN-free. */
#define CHECK_NEAR(a, b, tol)                                                                \
    do {                                                                                     \
        double check_a_ = (double)(a), check_b_ = (double)(b), check_t_ = (double)(tol);     \
        check_state_.checks++;                                                               \
        if (!(fabs(check_a_ - check_b_) <= check_t_))                                        \
            check_fail_(__FILE__, __LINE__, "%s ~= %s: %.9g vs %.9g (|diff| %.3g > %.3g)",   \
                        #a, #b, check_a_, check_b_, fabs(check_a_ - check_b_), check_t_);    \
    } while (0)

/* A kiln call returned the expected status; on mismatch shows both names and the message. */
#define CHECK_STATUS(expr, want)                                                             \
    do {                                                                                     \
        kiln_status check_got_ = (expr), check_want_ = (want);                               \
        check_state_.checks++;                                                               \
        if (check_got_ != check_want_)                                                       \
            check_fail_(__FILE__, __LINE__, "%s returned %s, expected %s (last error: \"%s\")", \
                        #expr, kiln_status_name(check_got_), kiln_status_name(check_want_),  \
                        kiln_last_error());                                                  \
    } while (0)

#define CHECK_OK(expr) CHECK_STATUS(expr, KILN_OK)

/* Bytes equal; on mismatch shows the first differing offset and bytes. */
#define CHECK_MEM_EQ(a, b, n)                                                                \
    do {                                                                                     \
        const unsigned char *check_a_ = (const unsigned char *)(a);                          \
        const unsigned char *check_b_ = (const unsigned char *)(b);                          \
        size_t check_n_ = (n), check_i_ = 0;                                                 \
        check_state_.checks++;                                                               \
        while (check_i_ < check_n_ && check_a_[check_i_] == check_b_[check_i_]) check_i_++;  \
        if (check_i_ < check_n_)                                                             \
            check_fail_(__FILE__, __LINE__,                                                  \
                        "%s == %s over %zu bytes: byte %zu differs (0x%02x vs 0x%02x)", #a,  \
                        #b, check_n_, check_i_, check_a_[check_i_], check_b_[check_i_]);     \
    } while (0)

/* Ends a test program: prints the tally and returns the exit code for ctest. */
static inline int check_finish(const char *program) {
    if (check_state_.failures) {
        printf("%s: %ld of %ld checks FAILED (%ld cases ran, %ld skipped)\n", program,
               check_state_.failures, check_state_.checks, check_state_.ran,
               check_state_.skipped);
        return 1;
    }
    if (check_state_.ran == 0 && check_state_.checks == 0) {
        printf("%s: skipped (%ld cases skipped)\n", program, check_state_.skipped);
        return CHECK_SKIP_CODE;
    }
    printf("%s: %ld checks passed (%ld cases ran, %ld skipped)\n", program,
           check_state_.checks, check_state_.ran, check_state_.skipped);
    return 0;
}

#endif
