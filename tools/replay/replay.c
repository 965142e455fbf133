/* SPDX-License-Identifier: MIT */
/*
 * lapict-replay: drive one lapict instance on the simulated host through a
 * trace and print what the guest sees (docs/spec/replay.md).
 *
 * Bad input never runs: the first bad line prints
 * "lapict-replay: LINE: message" on stderr and exits 2. So does a line that
 * would take the run past --max-events host timer events: the bound is
 * checked before the work wherever the timer says how much is coming, and
 * after each event otherwise. A run that cannot finish for another reason
 * (memory, output, a livelocked host) exits 1: a short run never exits 0.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lapict/lapict.h>

#include "../common/lapict_tool_num.h"
#include "lapict_sim.h"

#define MAX_WORDS 64
/* Bytes of a line before its newline (lapict-replay(1)). */
#define MAX_LINE 4096

/* Exit statuses (lapict-replay(1)). */
#define STATUS_CANNOT_RUN 1
#define STATUS_BAD_INPUT 2

/*
 * Host timer events a run may take without --max-events (lapict-replay(1)
 * says why this many).
 */
#define MAX_EVENTS_DEFAULT 1000000u

#define USAGE "usage: lapict-replay [--max-events=N] [--version] [--] [FILE]\n"

struct out_line {
    uint64_t when;
    uint8_t vector;
};

struct replay {
    struct lapict_config cfg;
    struct lapict_sim_config scfg;
    struct lapict_sim sim;
    struct lapict_timer timers[2];
    struct lapict_timer *t;
    bool started;
    uint64_t last_time;  /* latest time a command asked for */
    uint64_t max_events; /* --max-events: host timer callbacks in all */
    unsigned long line;
    /* Deliveries not yet printed (time-ordered: times never decrease). */
    struct out_line *q;
    size_t nq, cap, head;
};

/* What earlier lines produced is still shown, then the error. */
static _Noreturn void vfail(struct replay *r, int status, const char *fmt,
                            va_list ap)
{
    size_t i;

    for (i = r->head; i < r->nq; i++)
        printf("%llu inject %u\n", (unsigned long long)r->q[i].when,
               r->q[i].vector);
    fflush(stdout);
    fprintf(stderr, "lapict-replay: %lu: ", r->line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    exit(status);
}

/* Bad input: exit 2. */
static _Noreturn void die(struct replay *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfail(r, STATUS_BAD_INPUT, fmt, ap);
    va_end(ap);
}

/* The run cannot go on for a reason other than its input: exit 1. */
static _Noreturn void fail(struct replay *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vfail(r, STATUS_CANNOT_RUN, fmt, ap);
    va_end(ap);
}

static void on_deliver(void *arg, uint64_t when, uint8_t vector)
{
    struct replay *r = arg;
    if (r->nq == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        struct out_line *q = cap <= SIZE_MAX / sizeof(*q)
                                 ? realloc(r->q, cap * sizeof(*q))
                                 : NULL;
        if (!q)
            fail(r, "out of memory (%zu deliveries held)", r->nq);
        r->q = q;
        r->cap = cap;
    }
    r->q[r->nq].when = when;
    r->q[r->nq].vector = vector;
    r->nq++;
}

/* Print deliveries at or before @until; all of them with @all. */
static void flush(struct replay *r, uint64_t until, bool all)
{
    while (r->head < r->nq && (all || r->q[r->head].when <= until)) {
        printf("%llu inject %u\n", (unsigned long long)r->q[r->head].when,
               r->q[r->head].vector);
        r->head++;
    }
    if (r->head == r->nq)
        r->head = r->nq = 0;
}

static uint64_t parse_u64(struct replay *r, const char *s, const char *what)
{
    uint64_t v = 0;

    switch (lapict_tool_num(s, &v)) {
    case LAPICT_TOOL_NUM_OK:
        return v;
    case LAPICT_TOOL_NUM_RANGE:
        die(r, "number '%s' out of range for %s", s, what);
        break;
    default:
        die(r, "malformed number '%s' for %s", s, what);
        break;
    }
    return 0;
}

static uint32_t parse_u32(struct replay *r, const char *s, const char *what)
{
    uint64_t v = parse_u64(r, s, what);
    if (v > UINT32_MAX)
        die(r, "value '%s' does not fit the 32-bit %s", s, what);
    return (uint32_t)v;
}

static bool parse_bool(struct replay *r, const char *s, const char *what)
{
    uint64_t v = parse_u64(r, s, what);
    if (v > 1)
        die(r, "%s must be 0 or 1, not '%s'", what, s);
    return v == 1;
}

static void config_key(struct replay *r, char *kv)
{
    char *eq = strchr(kv, '=');
    const char *k = kv, *v;
    int rc;

    if (!eq || eq == kv || !eq[1])
        die(r, "config expects KEY=VALUE, got '%s'", kv);
    *eq = '\0';
    v = eq + 1;
    if (!strcmp(k, "bus_hz")) {
        r->cfg.bus_hz = parse_u64(r, v, k);
    } else if (!strcmp(k, "tsc_khz")) {
        r->cfg.tsc_khz = parse_u32(r, v, k);
        r->scfg.tsc_khz = r->cfg.tsc_khz;
    } else if (!strcmp(k, "tsc_offset")) {
        r->scfg.tsc_offset = parse_u64(r, v, k);
    } else if (!strcmp(k, "tsc_deadline")) {
        r->cfg.tsc_deadline = parse_bool(r, v, k);
    } else if (!strcmp(k, "min_period_ns")) {
        r->cfg.min_period_ns = parse_u32(r, v, k);
    } else if (!strcmp(k, "hv_timer")) {
        r->scfg.hv_timer = parse_bool(r, v, k);
    } else if (!strcmp(k, "hv_shift")) {
        uint32_t sh = parse_u32(r, v, k);
        if (sh > 63)
            die(r, "hv_shift must be at most 63");
        r->scfg.hv_shift = sh;
    } else if (!strcmp(k, "hv_max")) {
        r->scfg.hv_max = parse_u64(r, v, k);
    } else if (!strcmp(k, "advance")) {
        if (!strcmp(v, "off")) {
            r->cfg.advance_mode = LAPICT_ADVANCE_OFF;
            r->cfg.advance_ns = 0;
        } else if (!strcmp(v, "adaptive")) {
            r->cfg.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
            r->cfg.advance_ns = 0;
        } else {
            r->cfg.advance_mode = LAPICT_ADVANCE_FIXED;
            r->cfg.advance_ns = parse_u32(r, v, k);
        }
    } else if (!strcmp(k, "missed")) {
        if (!strcmp(v, "coalesce"))
            r->cfg.missed_policy = LAPICT_MISSED_COALESCE;
        else if (!strcmp(v, "catch_up"))
            r->cfg.missed_policy = LAPICT_MISSED_CATCH_UP;
        else if (!strcmp(v, "drop"))
            r->cfg.missed_policy = LAPICT_MISSED_DROP;
        else
            die(r, "missed must be coalesce, catch_up or drop, not '%s'", v);
    } else if (!strcmp(k, "host_latency_ns")) {
        r->scfg.host_latency_ns = parse_u64(r, v, k);
    } else if (!strcmp(k, "entry_latency_ns")) {
        r->scfg.entry_latency_ns = parse_u64(r, v, k);
    } else {
        die(r, "unknown config key '%s'", k);
    }
    rc = lapict_config_check(&r->cfg);
    if (rc != LAPICT_OK)
        die(r, "invalid configuration: %s", lapict_strerror(rc));
}

static void start(struct replay *r)
{
    int rc;

    if (r->started)
        return;
    lapict_sim_init(&r->sim, &r->scfg, on_deliver, r);
    r->t = &r->timers[0];
    rc = lapict_init(r->t, &r->cfg, &lapict_sim_ops, &r->sim);
    if (rc != LAPICT_OK)
        die(r, "invalid configuration: %s", lapict_strerror(rc));
    lapict_sim_attach(&r->sim, r->t);
    r->started = true;
}

static void need_args(struct replay *r, int nw, int want, const char *cmd)
{
    if (nw != want)
        die(r, "'%s' takes %d argument%s, got %d", cmd, want - 1,
            want == 2 ? "" : "s", nw - 1);
}

/*
 * The line in hand would take the run past --max-events. As for any bad
 * line, nothing of it shows: the deliveries it queued (from @mark on) are
 * dropped; those of earlier lines are printed.
 */
static _Noreturn void over_bound(struct replay *r, size_t mark)
{
    if (mark < r->nq)
        r->nq = mark;
    die(r,
        "the trace needs more than %llu host timer events (--max-events); "
        "raise the bound with --max-events=N",
        (unsigned long long)r->max_events);
}

/*
 * After host events ran: a simulated host that stopped on a livelock
 * cannot finish the trace, and the run stays within --max-events (@mark:
 * the deliveries queued before the line).
 */
static void ran(struct replay *r, bool ok, size_t mark)
{
    if (!ok)
        fail(r,
             "the simulated host stopped at %llu ns: its timers ran %u "
             "times in a row without the clock moving",
             (unsigned long long)r->sim.now_ns, LAPICT_SIM_STUCK);
    if (r->sim.expire_calls > r->max_events)
        over_bound(r, mark);
    /* Later events are never earlier than now: print what is due. */
    flush(r, r->sim.now_ns, false);
}

/* How far @at is ahead of the host's now; 0 if it is due. */
static uint64_t sim_ahead(const struct lapict_sim *s, uint64_t at)
{
    return (int64_t)(at - s->now_ns) > 0 ? at - s->now_ns : 0;
}

/*
 * ns until the simulated host runs its next timer callback, UINT64_MAX
 * when none is armed: the software timer at its firing instant, the
 * hardware timer at its instant plus the latency while the vCPU is not
 * blocked (adapters/sim/README.md, "Model").
 */
static uint64_t next_callback_in(const struct lapict_sim *s)
{
    uint64_t in = UINT64_MAX;

    if (s->sw_armed)
        in = sim_ahead(s, s->sw_fire_ns);
    if (s->hv_armed && !s->blocked) {
        uint64_t hv = sim_ahead(s, s->hv_at_ns + s->cfg.host_latency_ns);
        if (hv < in)
            in = hv;
    }
    return in;
}

/*
 * The fewest host timer callbacks that moving the clock @span ns ahead
 * runs, from what the timer says of itself (lapict_countdown_get() calls
 * no op). A running periodic count-down has grid points at most P =
 * max(ceil(TMICT x divide / bus), min_period_ns) apart (docs/spec/timer.md
 * section 3), and each callback arms the host timer for the next one,
 * whatever becomes of its interrupt (masked, refused, coalesced); that
 * timer fires at most host_latency_ns late, and a wait at guest entry (the
 * advance) moves the clock at most the advance. So the callbacks are at
 * most P + host_latency_ns + advance apart, the first one at most
 * host_latency_ns after the next grid point. One-shot and deadline timers
 * fire once or twice: 0. Two fewer than that count stay a floor whatever a
 * wait does at either end of the span.
 */
static uint64_t events_at_least(const struct replay *r, uint64_t span)
{
    struct lapict_countdown cd;
    unsigned __int128 period, gap, first, n;
    unsigned shift;
    uint32_t advance = 0;

    lapict_countdown_get(r->t, r->sim.now_ns, &cd);
    if ((cd.lvtt & LAPICT_LVTT_MODE) != LAPICT_LVTT_PERIODIC || !cd.tmict ||
        cd.next_ns == LAPICT_COUNTDOWN_NONE || !r->cfg.bus_hz)
        return 0;
    /* TDCR bits 3, 1, 0 select 2, 4, ..., 128, 1: log2 is index + 1 mod 8. */
    shift = ((((cd.tdcr >> 1) & 4u) | (cd.tdcr & 3u)) + 1u) & 7u;
    period = ((unsigned __int128)cd.tmict << shift) * 1000000000u;
    period = (period + r->cfg.bus_hz - 1u) / r->cfg.bus_hz;
    if (period < r->cfg.min_period_ns)
        period = r->cfg.min_period_ns;
    if (r->cfg.advance_mode != LAPICT_ADVANCE_OFF)
        advance = r->cfg.advance_ns > r->cfg.advance_max_ns
                      ? r->cfg.advance_ns
                      : r->cfg.advance_max_ns;
    gap = period + r->scfg.host_latency_ns + advance;
    first = (unsigned __int128)sim_ahead(&r->sim, cd.next_ns) +
            r->scfg.host_latency_ns;
    if (first > span)
        return 0;
    n = (span - first) / gap + 1u;
    if (n <= 2u)
        return 0;
    return n - 2u > UINT64_MAX ? UINT64_MAX : (uint64_t)(n - 2u);
}

/*
 * Move the clock to @to, never behind the trace's time (a wait at guest
 * entry may have passed it). A line that must take the run past
 * --max-events fails before it runs; otherwise the clock moves one host
 * event at a time, so that the run stops at the event that goes past the
 * bound, never later.
 */
static void move_to(struct replay *r, uint64_t to)
{
    size_t mark = r->nq;
    uint64_t left = to > r->sim.now_ns ? to - r->sim.now_ns : 0;
    bool ok;

    if (events_at_least(r, left) > r->max_events - r->sim.expire_calls)
        over_bound(r, mark);
    for (;;) {
        uint64_t step = next_callback_in(&r->sim);
        uint64_t calls = r->sim.expire_calls, at = r->sim.now_ns;

        ok = lapict_sim_advance(&r->sim, step < left ? step : left);
        if (!ok || r->sim.expire_calls > r->max_events || r->sim.now_ns >= to)
            break;
        if (r->sim.expire_calls == calls && r->sim.now_ns == at) {
            /* No progress would loop for ever: should the host's rule
             * ever differ from next_callback_in(), go the rest of the way
             * at once (the bound is then checked after it). */
            ok = lapict_sim_advance(&r->sim, to - r->sim.now_ns);
            break;
        }
        left = to - r->sim.now_ns;
    }
    ran(r, ok, mark);
    r->last_time = to;
}

static void cmd_write(struct replay *r, const char *reg, const char *val)
{
    struct lapict_timer *t = r->t;

    if (!strcmp(reg, "tsc_deadline")) {
        lapict_tsc_deadline_write(t, parse_u64(r, val, reg));
    } else {
        uint32_t v;
        if (strcmp(reg, "lvtt") && strcmp(reg, "tdcr") &&
            strcmp(reg, "tmict") && strcmp(reg, "svr"))
            die(r, "unknown register '%s' for write", reg);
        v = parse_u32(r, val, reg);
        if (!strcmp(reg, "lvtt"))
            lapict_lvtt_write(t, v);
        else if (!strcmp(reg, "tdcr"))
            lapict_tdcr_write(t, v);
        else if (!strcmp(reg, "tmict"))
            lapict_tmict_write(t, v);
        else
            lapict_svr_write(t, (v >> 8) & 1u);
    }
    lapict_sim_enter(&r->sim);
}

static void cmd_read(struct replay *r, const char *reg)
{
    struct lapict_timer *t = r->t;
    uint64_t v = 0;

    if (!strcmp(reg, "lvtt"))
        v = lapict_lvtt_read(t);
    else if (!strcmp(reg, "tdcr"))
        v = lapict_tdcr_read(t);
    else if (!strcmp(reg, "tmict"))
        v = lapict_tmict_read(t);
    else if (!strcmp(reg, "tmcct"))
        v = lapict_tmcct_read(t);
    else if (!strcmp(reg, "tsc_deadline"))
        v = lapict_tsc_deadline_read(t);
    else
        die(r, "unknown register '%s' for read", reg);
    /* A read may process a due expiry: its delivery comes first. */
    lapict_sim_enter(&r->sim);
    flush(r, r->sim.now_ns, false);
    printf("%llu read %s %llu\n", (unsigned long long)r->sim.now_ns, reg,
           (unsigned long long)v);
}

static void cmd_save_restore(struct replay *r)
{
    uint8_t blob[LAPICT_STATE_SIZE];
    struct lapict_timer *next =
        r->t == &r->timers[0] ? &r->timers[1] : &r->timers[0];
    int rc;

    rc = lapict_state_save(r->t, blob, sizeof(blob));
    lapict_sim_enter(&r->sim);
    if (rc == LAPICT_OK) {
        /* The old instance is gone with its host timers. */
        lapict_sim_drop_timers(&r->sim);
        rc = lapict_init(next, &r->cfg, &lapict_sim_ops, &r->sim);
    }
    if (rc == LAPICT_OK) {
        lapict_sim_attach(&r->sim, next);
        /* The blob has no vCPU run state: tell the new instance first. */
        if (r->sim.blocked)
            rc = lapict_vcpu_blocking(next);
    }
    if (rc == LAPICT_OK)
        rc = lapict_state_restore(next, blob, sizeof(blob));
    /* Restore never injects: offer what it holds pending (state.h). */
    if (rc == LAPICT_OK && r->sim.window_open)
        rc = lapict_irq_window_open(next);
    if (rc != LAPICT_OK)
        die(r, "save_restore failed: %s", lapict_strerror(rc));
    r->t = next;
    lapict_sim_enter(&r->sim);
}

static void run_line(struct replay *r, char *s)
{
    char *w[MAX_WORDS], *hash = strchr(s, '#');
    int nw = 0, i;

    if (hash)
        *hash = '\0';
    for (char *tok = strtok(s, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
        if (nw == MAX_WORDS)
            die(r, "too many words");
        w[nw++] = tok;
    }
    if (!nw)
        return;
    if (!strcmp(w[0], "config")) {
        if (r->started)
            die(r, "config after the first command");
        if (nw < 2)
            die(r, "config needs at least one KEY=VALUE");
        for (i = 1; i < nw; i++)
            config_key(r, w[i]);
        return;
    }
    /* Validate the words before anything runs. */
    if (!strcmp(w[0], "at") || !strcmp(w[0], "advance") ||
        !strcmp(w[0], "stall")) {
        uint64_t v, to;
        need_args(r, nw, 2, w[0]);
        v = parse_u64(r, w[1], w[0]);
        start(r);
        if (!strcmp(w[0], "at")) {
            if (v < r->last_time)
                die(r, "time goes backwards (%llu < %llu)",
                    (unsigned long long)v, (unsigned long long)r->last_time);
            move_to(r, v);
        } else if (!strcmp(w[0], "advance")) {
            if (v > UINT64_MAX - r->sim.now_ns)
                die(r, "advance %s overflows the 64-bit clock", w[1]);
            to = r->sim.now_ns + v;
            move_to(r, to);
        } else {
            if (v > UINT64_MAX - r->sim.now_ns)
                die(r, "stall %s overflows the 64-bit clock", w[1]);
            size_t mark = r->nq;
            ran(r, lapict_sim_stall(&r->sim, v), mark);
            r->last_time = r->sim.now_ns;
        }
    } else if (!strcmp(w[0], "write")) {
        need_args(r, nw, 3, w[0]);
        start(r);
        cmd_write(r, w[1], w[2]);
    } else if (!strcmp(w[0], "read")) {
        need_args(r, nw, 2, w[0]);
        start(r);
        cmd_read(r, w[1]);
    } else if (!strcmp(w[0], "block") || !strcmp(w[0], "unblock")) {
        need_args(r, nw, 1, w[0]);
        start(r);
        if (w[0][0] == 'b') {
            lapict_sim_block(&r->sim);
        } else {
            uint64_t stuck = r->sim.livelocks;
            size_t mark = r->nq;
            lapict_sim_unblock(&r->sim);
            ran(r, r->sim.livelocks == stuck, mark);
        }
    } else if (!strcmp(w[0], "window")) {
        bool open;
        need_args(r, nw, 2, w[0]);
        if (strcmp(w[1], "0") && strcmp(w[1], "1"))
            die(r, "window takes 0 or 1, not '%s'", w[1]);
        open = w[1][0] == '1';
        start(r);
        lapict_sim_window(&r->sim, open);
    } else if (!strcmp(w[0], "save_restore")) {
        need_args(r, nw, 1, w[0]);
        start(r);
        cmd_save_restore(r);
    } else if (!strcmp(w[0], "reset")) {
        need_args(r, nw, 1, w[0]);
        start(r);
        lapict_reset(r->t);
        lapict_sim_enter(&r->sim);
    } else {
        die(r, "unknown command '%s'", w[0]);
    }
}

/*
 * Read one line into @buf (MAX_LINE + 1 bytes) without its newline; false
 * at the end of the input. Never holds more than a line's limit, whatever
 * the input: a longer line, a NUL byte or a read error ends the run.
 */
static bool read_line(struct replay *r, FILE *in, char *buf)
{
    size_t n = 0;
    int c;

    while ((c = getc(in)) != EOF && c != '\n') {
        if (n == MAX_LINE) {
            r->line++;
            die(r, "line longer than %d bytes", MAX_LINE);
        }
        if (c == '\0') {
            r->line++;
            die(r, "NUL byte in line");
        }
        buf[n++] = (char)c;
    }
    if (c == EOF && ferror(in)) {
        r->line++;
        die(r, "read error: %s", strerror(errno));
    }
    if (c == EOF && n == 0)
        return false;
    buf[n] = '\0';
    r->line++;
    return true;
}

/* --max-events=@s, an untrusted number: 1 to 2^64 - 1, else exit 2. */
static uint64_t parse_max_events(const char *s)
{
    enum lapict_tool_num rc;
    uint64_t v = 0;

    rc = lapict_tool_num(s, &v);
    if (rc == LAPICT_TOOL_NUM_OK && v >= 1)
        return v;
    fprintf(
        stderr, "lapict-replay: --max-events: '%s' %s (1 to %llu)\n" USAGE, s,
        rc == LAPICT_TOOL_NUM_MALFORMED ? "is not a number" : "is out of range",
        (unsigned long long)UINT64_MAX);
    exit(STATUS_BAD_INPUT);
}

int main(int argc, char **argv)
{
    static struct replay r;
    static char buf[MAX_LINE + 1];
    const char *path = NULL;
    uint64_t max_events = MAX_EVENTS_DEFAULT;
    bool options = true;
    FILE *in = stdin;
    int i;

    /* Options and FILE in any order; after "--" only FILE. */
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (options && !strcmp(a, "--")) {
            options = false;
        } else if (options && a[0] == '-') {
            if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                printf(USAGE "replays a trace (standard input without "
                             "FILE); see lapict-replay(1)\n");
                return 0;
            }
            if (!strcmp(a, "--version")) {
                printf("lapict-replay %s\n", LAPICT_VERSION_STRING);
                return 0;
            }
            if (!strncmp(a, "--max-events=", 13)) {
                max_events = parse_max_events(a + 13);
            } else if (!strcmp(a, "--max-events")) {
                fprintf(stderr, "lapict-replay: --max-events needs a value, "
                                "as --max-events=N\n" USAGE);
                return STATUS_BAD_INPUT;
            } else {
                fprintf(stderr, "lapict-replay: unknown option '%s'\n" USAGE,
                        a);
                return STATUS_BAD_INPUT;
            }
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr,
                    "lapict-replay: unexpected argument '%s': one FILE at "
                    "most\n" USAGE,
                    a);
            return STATUS_BAD_INPUT;
        }
    }
    if (path) {
        in = fopen(path, "r");
        if (!in) {
            fprintf(stderr, "lapict-replay: %s: %s\n", path, strerror(errno));
            return STATUS_BAD_INPUT;
        }
    }
    lapict_config_default(&r.cfg);
    /* The trace format's default rate (docs/spec/replay.md). */
    r.cfg.tsc_khz = 1000000u;
    lapict_sim_config_default(&r.scfg);
    r.max_events = max_events;
    while (read_line(&r, in, buf))
        run_line(&r, buf);
    start(&r);
    flush(&r, 0, true);
    if (in != stdin)
        fclose(in);
    free(r.q);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        /* ferror() may stand for an earlier write whose errno is gone. */
        fprintf(stderr, "lapict-replay: standard output: %s\n",
                errno ? strerror(errno) : "write error");
        return STATUS_CANNOT_RUN;
    }
    return 0;
}
