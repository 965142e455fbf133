/* SPDX-License-Identifier: MIT */
/*
 * lapict-bench: the parts of the benchmark and how main.c reaches them.
 * Every part prints human-readable tables and machine-readable lines that
 * start with "RESULT " (see README.md beside this file).
 */
#ifndef LAPICT_BENCH_H
#define LAPICT_BENCH_H

#include <stdbool.h>
#include <stdint.h>

struct bench_opts {
    /* Tiny iteration counts, no timing claims: for the test command. */
    bool smoke;
    /* Repetitions of each timed batch; the median is reported. */
    unsigned runs;
    /* Operations per timed batch. */
    unsigned iters;
    /* --tuning: write per-expiry data for plot.sh here (NULL: don't). */
    const char *dat;
    /* --tuning: seed of the random scenarios (0: the published one). */
    uint32_t seed;
};

/* Ranges of --runs and --iters (lapict-bench(1)). */
#define BENCH_RUNS_MAX 10000u
#define BENCH_ITERS_MAX 100000000u

/*
 * @s as the value of option @opt in @min..@max: decimal, or hexadecimal
 * after 0x; no sign, no space. Else a message naming the option and its
 * range on stderr, and -1 (the caller exits 2).
 */
int bench_parse_num(const char *opt, const char *s, uint64_t min, uint64_t max,
                    uint64_t *out);

/* Hot-path cost per operation, lapict against a division baseline. */
int bench_hotpath(const struct bench_opts *o);

/*
 * --callgrind=OP: run OP a fixed number of times (bench_callgrind_iters)
 * for valgrind --tool=callgrind; callgrind.sh divides the inclusive count
 * of the OP's entry function by that number. NULL or "list": print the
 * "op function iterations" table the script reads. Returns the exit
 * status: 0, 1 if the run failed, 2 for an unknown OP.
 */
int bench_callgrind(const char *op);
extern const unsigned bench_callgrind_iters;

/* Adaptive advance study on a simulated host. */
int bench_tuning(const struct bench_opts *o);

/* sizeof of the public structs and the stack high-water of the hot paths. */
int bench_memory(const struct bench_opts *o);

#endif /* LAPICT_BENCH_H */
