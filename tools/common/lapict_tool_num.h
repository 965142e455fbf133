/* SPDX-License-Identifier: MIT */
/*
 * The tools' one reader of numbers (command-line options, trace fields):
 * unsigned decimal, or hexadecimal after 0x; no sign, no space, nothing
 * after it, and no value past 2^64 - 1. Each tool words its own error and
 * checks its own range.
 */
#ifndef LAPICT_TOOL_NUM_H
#define LAPICT_TOOL_NUM_H

#include <stdint.h>

enum lapict_tool_num {
    LAPICT_TOOL_NUM_OK,
    LAPICT_TOOL_NUM_MALFORMED,
    LAPICT_TOOL_NUM_RANGE, /* above 2^64 - 1 */
};

static inline enum lapict_tool_num lapict_tool_num(const char *s, uint64_t *out)
{
    const char *p = s;
    uint64_t v = 0, base = 10, d;

    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    if (!*p)
        return LAPICT_TOOL_NUM_MALFORMED;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9')
            d = (uint64_t)(*p - '0');
        else if (base == 16 && *p >= 'a' && *p <= 'f')
            d = (uint64_t)(*p - 'a' + 10);
        else if (base == 16 && *p >= 'A' && *p <= 'F')
            d = (uint64_t)(*p - 'A' + 10);
        else
            return LAPICT_TOOL_NUM_MALFORMED;
        if (v > (UINT64_MAX - d) / base)
            return LAPICT_TOOL_NUM_RANGE;
        v = v * base + d;
    }
    *out = v;
    return LAPICT_TOOL_NUM_OK;
}

#endif /* LAPICT_TOOL_NUM_H */
