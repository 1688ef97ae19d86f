/*
 * The parts of a stand-in runtime compiler (kiln_rtc_entries, src/gpu/gpu.h) that the tests
 * standing one in share: every compile yields the same 16-byte image, every error has one
 * name and loading the compiler succeeds. Each test adds its own version, create, destroy,
 * compile and log entries and fills the table.
 */
#ifndef KILN_TESTS_STAND_IN_RTC_H
#define KILN_TESTS_STAND_IN_RTC_H

#include <string.h>

#include "gpu/gpu.h"

static int rtc_code_size(void *prog, size_t *size) { (void)prog; *size = 16; return 0; }
static int rtc_code(void *prog, char *code) { (void)prog; memset(code, 0x5a, 16); return 0; }
static const char *rtc_error(int result) { (void)result; return "stand-in error"; }
static kiln_status rtc_load(void) { return KILN_OK; }

#endif
