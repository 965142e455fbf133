/* SPDX-License-Identifier: MIT */
/*
 * lapict-bench: hot-path cost, advance tuning study, memory figures and
 * (when tools/bench/mux.c is built in) the multiplexing benchmark.
 *
 *   lapict-bench [--hotpath] [--tuning] [--memory] [--mux [ARGS...]]
 *                [--smoke] [--runs=N] [--iters=N] [--dat=FILE] [--seed=S]
 *   lapict-bench --callgrind=OP | --callgrind=list
 *   lapict-bench --version | --help
 *
 * No mode: --hotpath --tuning --memory. See README.md beside this file.
 */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapict/version.h>

/* Defined by mux.c when it is part of the build; NULL otherwise. */
__attribute__((weak)) int lapict_bench_mux(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(f,
            "usage: lapict-bench [--hotpath] [--tuning] [--memory] [--smoke]\n"
            "                    [--runs=N] [--iters=N] [--dat=FILE] "
            "[--seed=S]\n"
            "       lapict-bench --mux [ARGS...]   (the rest goes to mux)\n"
            "       lapict-bench --callgrind=OP|list\n"
            "       lapict-bench --version\n"
            "no mode given: --hotpath --tuning --memory\n");
}

int main(int argc, char **argv)
{
    struct bench_opts o = {false, 0, 0, NULL, 0};
    int hot = 0, tun = 0, mem = 0, i, rc = 0;
    uint64_t v;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--hotpath")) {
            hot = 1;
        } else if (!strcmp(a, "--tuning")) {
            tun = 1;
        } else if (!strcmp(a, "--memory")) {
            mem = 1;
        } else if (!strcmp(a, "--smoke")) {
            o.smoke = true;
        } else if (!strncmp(a, "--runs=", 7)) {
            if (bench_parse_num("--runs", a + 7, 1, BENCH_RUNS_MAX, &v))
                return 2;
            o.runs = (unsigned)v;
        } else if (!strncmp(a, "--iters=", 8)) {
            if (bench_parse_num("--iters", a + 8, 1, BENCH_ITERS_MAX, &v))
                return 2;
            o.iters = (unsigned)v;
        } else if (!strncmp(a, "--seed=", 7)) {
            if (bench_parse_num("--seed", a + 7, 0, UINT32_MAX, &v))
                return 2;
            o.seed = (uint32_t)v;
        } else if (!strncmp(a, "--dat=", 6)) {
            if (!a[6]) {
                fprintf(stderr, "lapict-bench: --dat: no FILE\n");
                return 2;
            }
            o.dat = a + 6;
        } else if (!strcmp(a, "--callgrind")) {
            return bench_callgrind(NULL);
        } else if (!strncmp(a, "--callgrind=", 12)) {
            return bench_callgrind(a + 12);
        } else if (!strcmp(a, "--mux")) {
            if (!lapict_bench_mux) {
                fprintf(stderr, "lapict-bench: mux benchmark not built "
                                "(mux.c is not part of this build)\n");
                return 2;
            }
            /* mux gets its own argv: program name plus what follows. */
            argv[i] = argv[0];
            return lapict_bench_mux(argc - i, argv + i);
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("lapict-bench %s\n", LAPICT_VERSION_STRING);
            return 0;
        } else {
            goto bad;
        }
    }
    if (!hot && !tun && !mem)
        hot = tun = mem = 1;
    if (hot && bench_hotpath(&o))
        rc = 1;
    if (tun && bench_tuning(&o))
        rc = 1;
    if (mem && bench_memory(&o))
        rc = 1;
    return rc;
bad:
    /* Every part is an option: a word that is none is a stray. */
    if (argv[i][0] == '-')
        fprintf(stderr, "lapict-bench: unknown option '%s'\n", argv[i]);
    else
        fprintf(stderr, "lapict-bench: unexpected argument '%s'\n", argv[i]);
    usage(stderr);
    return 2;
}
