/* Monotonic time and sleeping. */
#define _POSIX_C_SOURCE 200809L
#include "platform/platform.h"

#include <errno.h>
#include <time.h>

uint64_t kiln_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void kiln_sleep_ms(unsigned ms)
{
    struct timespec left = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    /* A signal handler elsewhere in the process must not shorten the sleep. */
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}
