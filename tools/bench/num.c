/* SPDX-License-Identifier: MIT */
/*
 * lapict-bench's numeric options, for main.c and mux.c alike: the tools'
 * one number reader, with this tool's wording and a range per option.
 */
#include <inttypes.h>
#include <stdio.h>

#include "../common/lapict_tool_num.h"
#include "bench.h"

int bench_parse_num(const char *opt, const char *s, uint64_t min, uint64_t max,
                    uint64_t *out)
{
    enum lapict_tool_num rc;
    uint64_t v = 0;

    rc = lapict_tool_num(s, &v);
    if (rc == LAPICT_TOOL_NUM_OK && v >= min && v <= max) {
        *out = v;
        return 0;
    }
    fprintf(stderr, "lapict-bench: %s: '%s' %s (%" PRIu64 " to %" PRIu64 ")\n",
            opt, s,
            rc == LAPICT_TOOL_NUM_MALFORMED ? "is not a number"
                                            : "is out of range",
            min, max);
    return -1;
}
