/* Monotonic time and sleeping. */
#include "platform/platform.h"
#include "platform/win/wide.h"

uint64_t kiln_time_ns(void)
{
    static LARGE_INTEGER freq; /* constant after boot, so a benign race at most */
    LARGE_INTEGER now;
    if (freq.QuadPart == 0) QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&now);
    /* Split into whole seconds and remainder so the multiplication cannot overflow. */
    uint64_t f = (uint64_t)freq.QuadPart, t = (uint64_t)now.QuadPart;
    return t / f * 1000000000u + t % f * 1000000000u / f;
}

void kiln_sleep_ms(unsigned ms) { Sleep(ms); }
