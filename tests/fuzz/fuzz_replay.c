/* SPDX-License-Identifier: MIT */
/*
 * fuzz_replay: the trace parser and driver of tools/replay/replay.c,
 * in-process.
 *
 * replay.c keeps its parser inside main(), exits with exit(2) on the first
 * bad line, and holds its state in a function-local static. Until the
 * parser is split out of main() (asked for in the fuzzing report), this
 * file compiles replay.c into the fuzzer unchanged, with a few names
 * redirected by the preprocessor:
 *   main                  -> rp_replay_main, called with no FILE argument
 *   stdin                 -> an fmemopen() stream over the fuzz input
 *   stdout, stderr,
 *   printf                -> a fopencookie() stream that checks the output
 *   exit                  -> rp_exit(): records the status, longjmp()s back
 *   lapict_config_default -> records &r.cfg, i.e. the address of main()'s
 *                            static struct replay (cfg is its first member),
 *                            so that it can be freed and zeroed between runs
 *   lapict_init           -> rp_init(): binds the instance through a
 *                            struct lapict_sim_wrap around the ops and host
 *                            replay.c names, whose trace counts host timer
 *                            arms and stops a run after RP_MAX_ARMS of
 *                            them: a trace of a few bytes can legitimately
 *                            ask for 10^9 expiries ("at" far ahead of a
 *                            short period)
 *
 * Checked: no crash, no UB, no leak (LeakSanitizer), the exit status is 0
 * or 2 (1, a run that cannot finish, is a failure: the budget keeps memory
 * small and the host must never livelock), and the output follows
 * docs/spec/replay.md: every line that starts with a digit is "T inject V"
 * (16 <= V <= 255) or "T read REG V" with a known REG, and T never
 * decreases.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <lapict/lapict.h>

#include "fuzz_common.h"
#include "lapict_sim.h"

#ifndef FUZZ_REPLAY_ENTRY
#define FUZZ_REPLAY_ENTRY LLVMFuzzerTestOneInput
#endif

#define RP_CHECK(...) FZ_CHECK("fuzz_replay", __VA_ARGS__)

#define RP_MAX_ARMS 100000u
#define RP_BUDGET_STATUS 1000

static jmp_buf rp_jmp;
static int rp_status;
static void *rp_state;
static FILE *rp_in, *rp_out;
static unsigned long rp_arms;
static struct lapict_sim_wrap rp_wrap;

/* Output checker state. */
static char rp_line[96];
static size_t rp_len;
static bool rp_long;
static unsigned long long rp_last_t;

static _Noreturn void rp_exit(int status)
{
    rp_status = status;
    longjmp(rp_jmp, 1);
}

static void rp_config_default(struct lapict_config *c)
{
    rp_state = c;
    lapict_config_default(c);
}

/* Before each op: a host timer arm over the budget ends the run there. */
static void rp_trace(void *arg, enum lapict_sim_op op, uint64_t host_ns)
{
    (void)arg;
    (void)host_ns;
    if (op != LAPICT_SIM_OP_SW_ARM && op != LAPICT_SIM_OP_HV_ARM)
        return;
    if (++rp_arms > RP_MAX_ARMS)
        rp_exit(RP_BUDGET_STATUS);
}

/*
 * lapict_init() as replay.c calls it, through the wrapper. A save_restore
 * binds a new instance to the same host once the old one is gone, so one
 * wrapper serves both; the budget counts over the whole run.
 */
static int rp_init(struct lapict_timer *t, const struct lapict_config *cfg,
                   const struct lapict_ops *ops, void *ctx)
{
    lapict_sim_wrap_init(&rp_wrap, ops, ctx, 0);
    rp_wrap.trace = rp_trace;
    return lapict_init(t, cfg, &rp_wrap.ops, &rp_wrap);
}

/* One complete output line (without its newline). */
static void rp_check_line(const char *s, bool truncated)
{
    unsigned long long t, v;
    char what[16], reg[16];
    int n = 0;

    if (s[0] < '0' || s[0] > '9')
        return; /* free-form lines must not start with a digit */
    RP_CHECK(!truncated, "over-long event line '%.40s...'", s);
    if (sscanf(s, "%llu inject %llu%n", &t, &v, &n) == 2 && !s[n]) {
        RP_CHECK(v >= 16 && v <= 255, "injected vector %llu", v);
    } else if (sscanf(s, "%llu %15s %15s %llu%n", &t, what, reg, &v, &n) == 4 &&
               !s[n] && !strcmp(what, "read")) {
        RP_CHECK(!strcmp(reg, "lvtt") || !strcmp(reg, "tdcr") ||
                     !strcmp(reg, "tmict") || !strcmp(reg, "tmcct") ||
                     !strcmp(reg, "tsc_deadline"),
                 "read of '%s'", reg);
        RP_CHECK(!strcmp(reg, "tsc_deadline") || v <= UINT32_MAX,
                 "32-bit register %s read %llu", reg, v);
    } else {
        RP_CHECK(0, "malformed event line '%s'", s);
    }
    RP_CHECK(t >= rp_last_t,
             "time goes backwards in the output: %llu after "
             "%llu",
             t, rp_last_t);
    rp_last_t = t;
}

static ssize_t rp_out_write(void *cookie, const char *buf, size_t size)
{
    size_t i;

    (void)cookie;
    for (i = 0; i < size; i++) {
        if (buf[i] == '\n') {
            rp_line[rp_len] = '\0';
            rp_check_line(rp_line, rp_long);
            rp_len = 0;
            rp_long = false;
        } else if (rp_len + 1 < sizeof(rp_line)) {
            rp_line[rp_len++] = buf[i];
        } else {
            rp_long = true;
        }
    }
    return (ssize_t)size;
}

/* clang-format off */
#undef stdin
#undef stdout
#undef stderr
#define stdin rp_in
#define stdout rp_out
#define stderr rp_out
#define printf(...) fprintf(rp_out, __VA_ARGS__)
#define main rp_replay_main
#define exit rp_exit
#define lapict_config_default rp_config_default
#define lapict_init rp_init
#include "../../tools/replay/replay.c"
#undef lapict_init
#undef lapict_config_default
#undef exit
#undef main
#undef printf
#undef stderr
#undef stdout
#undef stdin
#define stdin stdin
#define stdout stdout
#define stderr stderr
/* clang-format on */

_Static_assert(offsetof(struct replay, cfg) == 0,
               "fuzz_replay finds main()'s state through its cfg member");

int FUZZ_REPLAY_ENTRY(const uint8_t *data, size_t size);
int FUZZ_REPLAY_ENTRY(const uint8_t *data, size_t size)
{
    static char empty[] = "\n";
    static char *argv[] = {"lapict-replay", NULL};
    cookie_io_functions_t io = {NULL, rp_out_write, NULL, NULL};
    volatile bool exited = false;
    int status;

    rp_arms = 0;
    rp_len = 0;
    rp_long = false;
    rp_last_t = 0;
    /* An empty trace and a blank line are the same trace. */
    rp_in = size ? fmemopen((void *)data, size, "r") : fmemopen(empty, 1, "r");
    rp_out = fopencookie(NULL, "w", io);
    RP_CHECK(rp_in && rp_out, "cannot set up the streams");

    if (setjmp(rp_jmp) == 0) {
        status = rp_replay_main(1, argv);
    } else {
        exited = true;
        status = rp_status;
    }
    fclose(rp_out);
    fclose(rp_in);
    if (exited) {
        /* main() did not get to free it. */
        if (rp_state)
            free(((struct replay *)rp_state)->q);
    }
    if (rp_state)
        memset(rp_state, 0, sizeof(struct replay));
    RP_CHECK(status == 0 || status == 2 || status == RP_BUDGET_STATUS,
             "exit status %d", status);
    return 0;
}
