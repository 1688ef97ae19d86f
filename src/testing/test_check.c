/* The assertion tally and its reports (test_check.h). */
#include "test_check.h"

check_state check_state_;

void check_case(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(check_state_.label, sizeof check_state_.label, fmt, ap);
    va_end(ap);
}

void check_fail_(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    check_state_.failures++;
    fprintf(stderr, "FAIL %s:%d [%s]: ", file, line, check_state_.label);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void check_note_skip(const char *fmt, ...) {
    va_list ap;
    check_state_.skipped++;
    printf("SKIP ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

int check_has_word_(const char *s, const char *word) {
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

int check_finish(const char *program) {
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

int check_strict(void) {
    const char *s = getenv("KILN_TEST_STRICT");
    return s && *s && strcmp(s, "0") != 0;
}

void check_skip_tool(const char *fmt, ...) {
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
