/* Environment variables; the environment is already UTF-8 (or bytes) on Unix. */
#define _POSIX_C_SOURCE 200809L
#include "platform/platform.h"

#include <stdlib.h>
#include <string.h>

/* Copies at most cap - 1 bytes without cutting a UTF-8 sequence in half. */
static void copy_truncated(char *buf, size_t cap, const char *value)
{
    size_t n = strlen(value);
    if (n >= cap) {
        n = cap - 1;
        while (n > 0 && ((unsigned char)value[n] & 0xC0) == 0x80) n--;
    }
    memcpy(buf, value, n);
    buf[n] = '\0';
}

int kiln_env_get(const char *name, char *buf, size_t cap)
{
    const char *value = name ? getenv(name) : NULL;
    if (!value) {
        if (cap) buf[0] = '\0';
        return 0;
    }
    if (cap) copy_truncated(buf, cap, value);
    return 1;
}

int kiln_env_set(const char *name, const char *value)
{
    if (!name || !*name || strchr(name, '=')) return -1;
    if (value) return setenv(name, value, 1) == 0 ? 0 : -1;
    return unsetenv(name) == 0 ? 0 : -1;
}
