/* SPDX-License-Identifier: MIT */
/*
 * --test=migrate: the VMM stops the guest at chosen points, saves the VM,
 * destroys it and continues on a new one (or in a new process), while the
 * guest checks every timer interrupt across the moves. The driver is a
 * program of its own beside the latency tests, so it has its file.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "vmm.h"

/*
 * The VMM stops the vCPU at seeded random points of the kinds below, saves
 * the VM (vm.c: RAM, registers, events, the LAPIC model and the timer),
 * destroys it (VM and vCPU fds closed), makes a new one (with --exec in a
 * new process, through --save's file) and continues it. The guest checks
 * every interrupt (guest.c, "migrate").
 */
enum stop_kind {
    K_PENDING, /* a timer interrupt owed, the guest in a cli section */
    K_ADVANCE, /* injected ahead (advance), before the entry that waits */
    K_HALTED,  /* the guest halted, its wait not begun */
    K_MODE,    /* right after the guest switched the timer's mode */
    K_RANDOM,  /* anywhere between exits */
    K_TMCCT,   /* between two TMCCT samples of a running one-shot */
    K_N
};
static const char *const kind_names[K_N] = {"pending",    "advance", "halted",
                                            "modeswitch", "random",  "tmcct"};

#define MIG_STOP 1000 /* lapict_vmm_vm_run_points(): stop for a migration */
#define MIG_MAGIC 0x4D49475354415445ull

/* What the VMM carries across migrations (and execs: plain bytes). */
struct mig_state {
    uint64_t magic, target, done, seed, rng;
    uint64_t kinds[K_N], fallbacks, irr_first, timer_first, execs;
    uint64_t max_downtime_ns, sum_downtime_ns;
    uint64_t carried_missed; /* coalesced + dropped of instances gone */
    uint64_t silent_drops;   /* pending ticks a register write dropped */
    /* lapict's counters summed over the instances gone: expiries,
     * injections, refused, coalesced, dropped, masked; adapter injections. */
    uint64_t sum_st[7];
    uint64_t want, earliest_ns, give_up_ns, start_ns, stop_sent, serviced;
};

struct mig_ctx {
    struct lapict_vmm_vm *v;
    const struct vmm_opts *o;
    struct vmm_result *res;
    struct mig_state *m;
    bool mode_exit, tmcct_exit;
    int kind;
    /* The timer's pending count and injections as of the last stop point
     * (see note_silent_drops()). */
    uint64_t last_pending, last_injections;
};

static uint64_t mig_rnd(struct mig_state *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

static struct mailbox *mig_mb(struct lapict_vmm_vm *v)
{
    return (struct mailbox *)(v->mem + MB_ADDR);
}

static uint64_t timer_missed(struct lapict_vmm_vm *v)
{
    struct lapict_stats ts;
    lapict_stats_get(&v->k->timer, &ts, sizeof(ts));
    return ts.coalesced + ts.dropped;
}

/*
 * A TMICT write (or a mask, a mode switch) drops a tick held pending
 * (docs/spec/timer.md sections 3-5) and no counter shows it: the periodic count
 * check needs it, and the VMM sees it between two stop points as a
 * pending count that fell by more than the injections rose.
 */
static void note_silent_drops(struct mig_ctx *c)
{
    struct lapict_stats ts;
    uint64_t fell, inj;

    lapict_stats_get(&c->v->k->timer, &ts, sizeof(ts));
    fell = c->last_pending > ts.pending ? c->last_pending - ts.pending : 0;
    inj = ts.injections - c->last_injections;
    if (fell > inj)
        c->m->silent_drops += fell - inj;
    c->last_pending = ts.pending;
    c->last_injections = ts.injections;
}

/* After a restore: a new instance, its own counters. */
static void note_reset(struct mig_ctx *c)
{
    struct lapict_stats ts;

    lapict_stats_get(&c->v->k->timer, &ts, sizeof(ts));
    c->last_pending = ts.pending;
    c->last_injections = ts.injections;
}

/*
 * The next stop: its kind in turn (advance only with an advance), after a
 * random 0-3 ms; a kind that does not come within 30 ms is taken anywhere.
 * A TMCCT stop waits for the guest's next one-shot phase, which its
 * periodic and deadline phases put at most about 600 ms away: it is given
 * 5 s, so that every run checks TMCCT across migrations however slow the
 * host, and a guest that never asks is a fallback the result shows.
 */
static void mig_next(struct mig_state *m, const struct vmm_opts *o)
{
    do
        m->want = (m->want + 1) % K_N;
    while (m->want == K_ADVANCE && o->advance_mode == LAPICT_ADVANCE_OFF);
    m->earliest_ns = lapict_vmm_mono_ns() + mig_rnd(m) % 3000000u;
    m->give_up_ns =
        m->earliest_ns + (m->want == K_TMCCT ? 5000000000ull : 30000000u);
}

/* A timer interrupt owed and not taken: in IRR, or held by lapict (LVTT
 * delivery status, docs/spec/timer.md section 2). */
static bool timer_owed(struct lapict_vmm_vm *v)
{
    uint32_t lvtt = 0;
    lapict_xapic_read(&v->k->timer, 0x320, &lvtt);
    return lapict_apic_irr_test(&v->k->apic, 0x40) || (lvtt & 0x1000u);
}

/* Serve a due host timer as pre_run would; injected ahead (blob flag 5)? */
static bool injected_ahead(struct lapict_vmm_vm *v)
{
    uint8_t b[LAPICT_STATE_SIZE];

    lapict_kvm_poll(v->k);
    if (lapict_state_save(&v->k->timer, b, sizeof(b)) != LAPICT_OK)
        return false;
    return b[20] & 0x20u;
}

/*
 * lapict_state_save() settles due expiries on its copy: when more than one
 * periodic tick is due or held at the save (coalesce), they fold into one
 * pending there, and neither instance's counters ever show the coalesced
 * ones, so the guest's count check could not tell them from lost ones
 * (a library gap: the blob has no count of them). A periodic timer is
 * therefore serviced before the save, as the vCPU loop would before the
 * next entry (lapict_irq_window_open(): with IF clear its offer is refused
 * and the ticks stay pending, counted; with IF set the tick goes to IRR).
 * One-shot and deadline timers have one expiry to fold: they are saved as
 * they are, a due expiry travelling in the blob as pending.
 */
static bool timer_periodic(struct lapict_vmm_vm *v)
{
    uint32_t lvtt = 0;

    lapict_xapic_read(&v->k->timer, 0x320, &lvtt);
    return ((lvtt >> 17) & 3u) == 1u;
}

static int mig_point(void *arg)
{
    struct mig_ctx *c = arg;
    struct mig_state *m = c->m;
    struct lapict_vmm_vm *v = c->v;
    bool mode = c->mode_exit, tmcct = c->tmcct_exit;
    uint64_t now;
    int kind = -1;

    c->mode_exit = false;
    c->tmcct_exit = false;
    note_silent_drops(c);
    if (m->done >= m->target) {
        if (!m->stop_sent)
            mig_mb(v)->mig.stop = 1;
        m->stop_sent = 1;
        return -1;
    }
    now = lapict_vmm_mono_ns();
    if (now < m->earliest_ns)
        return -1;
    switch (m->want) {
    case K_PENDING:
        if (!v->halted && !v->run->if_flag && timer_owed(v))
            kind = K_PENDING;
        break;
    case K_ADVANCE:
        if (!v->halted && v->run->if_flag && injected_ahead(v))
            kind = K_ADVANCE;
        break;
    case K_HALTED:
        if (v->halted)
            kind = K_HALTED;
        break;
    case K_MODE:
        if (mode)
            kind = K_MODE;
        break;
    case K_TMCCT:
        mig_mb(v)->mig.tmcct_req = 1;
        if (tmcct)
            kind = K_TMCCT;
        break;
    default:
        kind = K_RANDOM;
        break;
    }
    if (kind < 0 && now > m->give_up_ns) {
        kind = K_RANDOM;
        m->fallbacks++;
    }
    if (kind < 0)
        return -1;
    mig_mb(v)->mig.tmcct_req = 0;
    c->kind = kind;
    return MIG_STOP;
}

static int mig_exit(void *arg, struct kvm_run *r)
{
    struct mig_ctx *c = arg;

    if (r->exit_reason == KVM_EXIT_IO && r->io.direction == KVM_EXIT_IO_OUT &&
        r->io.port == PORT_MODE) {
        c->mode_exit = true;
        return -1;
    }
    if (r->exit_reason == KVM_EXIT_IO && r->io.direction == KVM_EXIT_IO_OUT &&
        r->io.port == PORT_TMCCT) {
        c->tmcct_exit = true;
        return -1;
    }
    if (r->exit_reason == KVM_EXIT_IO && r->io.direction == KVM_EXIT_IO_OUT &&
        r->io.port == PORT_SYNC) {
        note_silent_drops(c);
        mig_mb(c->v)->mig.missed_ticks =
            c->m->carried_missed + timer_missed(c->v) + c->m->silent_drops;
        return -1;
    }
    {
        struct vmm_run_ctx rc = {.v = c->v, .o = c->o, .res = c->res};
        return vmm_guest_exit(&rc, r);
    }
}

static void add_stats(uint64_t *sum, struct lapict_vmm_vm *v)
{
    struct lapict_stats ts;

    lapict_stats_get(&v->k->timer, &ts, sizeof(ts));
    sum[0] += ts.expiries;
    sum[1] += ts.injections;
    sum[2] += ts.refused;
    sum[3] += ts.coalesced;
    sum[4] += ts.dropped;
    sum[5] += ts.masked;
    sum[6] += v->k->st.interrupts;
}

static void mig_fail(const char *what, const char *err)
{
    fprintf(stderr, "lapict-vmm: migrate: %s: %s\n", what, err);
    exit(2);
}

/* A new VM with the snapshot; the guest learns how long the timer stood
 * still (bounds) and the migration count. */
static void mig_resume(struct lapict_vmm_vm *v, const struct vmm_opts *o,
                       struct mig_state *m, struct lapict_vmm_snap *s)
{
    struct lapict_kvm_config kc;
    uint64_t restore_ns, after, down;
    struct mailbox *mb;
    char err[256];

    vmm_lib_config(o, &kc);
    if (lapict_vmm_vm_create(v, GUEST_RAM, false, false, err, sizeof(err)) < 0)
        mig_fail("create", err);
    if (lapict_vmm_vm_restore(v, s, &kc, &restore_ns, err, sizeof(err)) < 0)
        mig_fail("restore", err);
    after = lapict_vmm_mono_ns();
    lapict_vmm_snap_free(s);
    mb = mig_mb(v);
    mb->mig.frozen_lo_ns += restore_ns - s->stop_ns;
    mb->mig.frozen_hi_ns += after - s->stop_ns;
    m->done++;
    mb->mig.seq0 = mb->mig.seq1 = m->done;
    down = after - s->stop_ns;
    m->sum_downtime_ns += down;
    if (down > m->max_downtime_ns)
        m->max_downtime_ns = down;
    mig_next(m, o);
}

static void mig_exec(const struct vmm_opts *o, const char *file)
{
    char **argv = calloc((size_t)o->argc + 2, sizeof(char *));
    char *arg;
    int n = 0;

    if (!argv || asprintf(&arg, "--restore=%s", file) < 0)
        vmm_die("exec");
    for (int i = 0; i < o->argc; i++)
        if (strncmp(o->argv[i], "--restore", 9) != 0)
            argv[n++] = o->argv[i];
    argv[n++] = arg;
    argv[n] = NULL;
    execv("/proc/self/exe", argv);
    vmm_die("execv /proc/self/exe");
}

static void migrate_once(struct mig_ctx *c)
{
    struct lapict_vmm_vm *v = c->v;
    struct mig_state *m = c->m;
    struct lapict_vmm_snap s;
    bool irr_first = m->done % 2 == 0, service = timer_periodic(v);
    char err[256];

    if (service)
        m->serviced++;
    /* Alternate: the model (IRR) before the timer, then after. */
    if (lapict_vmm_vm_save(v, &s, irr_first, service, err, sizeof(err)) < 0)
        mig_fail("save", err);
    m->kinds[c->kind]++;
    if (irr_first)
        m->irr_first++;
    else
        m->timer_first++;
    m->carried_missed += timer_missed(v);
    add_stats(m->sum_st, v);
    lapict_vmm_vm_destroy(v);
    if (c->o->downtime_us) {
        struct timespec ts = {.tv_sec = (time_t)(c->o->downtime_us / 1000000u),
                              .tv_nsec =
                                  (long)(c->o->downtime_us % 1000000u) * 1000};
        nanosleep(&ts, NULL);
    }
    if (c->o->exec) {
        m->execs++;
        if (lapict_vmm_snap_write(c->o->save, &s, m, sizeof(*m)) < 0)
            vmm_die(c->o->save);
        lapict_vmm_snap_free(&s);
        fflush(stdout);
        mig_exec(c->o, c->o->save);
    }
    mig_resume(v, c->o, m, &s);
    note_reset(c);
}

/*
 * The state --restore names, checked as far as it can be before a VM
 * exists: the file's framing, the test's own state, and a snapshot that
 * fits the VM it goes into. The LAPIC and timer states in it are checked
 * by their restore. Exits 2 on the first fault.
 */
static void mig_read_state(const struct vmm_opts *o, struct lapict_vmm_snap *s,
                           struct mig_state *m)
{
    char err[256], why[320];

    /* snap_read() names the file in its messages. */
    if (lapict_vmm_snap_read(o->restore, s, m, sizeof(*m), err, sizeof(err)) <
        0)
        mig_fail("--restore", err);
    if (m->magic != MIG_MAGIC || m->want >= K_N || m->done > m->target)
        snprintf(err, sizeof(err), "not a migrate test's state");
    else if (lapict_vmm_snap_check(s, GUEST_RAM, err, sizeof(err)) == 0)
        return;
    snprintf(why, sizeof(why), "%s: %s", o->restore, err);
    mig_fail("--restore", why);
}

int vmm_check_migrate(const struct vmm_opts *o)
{
    if (o->restore) {
        struct lapict_vmm_snap s;
        struct mig_state m;

        mig_read_state(o, &s, &m);
        lapict_vmm_snap_free(&s);
    } else {
        vmm_check_guest(o->guest);
    }
    return 0;
}

int vmm_run_migrate(const struct vmm_opts *o)
{
    struct lapict_vmm_vm v;
    struct mig_state m;
    struct vmm_result res;
    struct mig_ctx c = {.v = &v, .o = o, .res = &res, .m = &m};
    struct mailbox *mb;
    char err[256];
    int st;

    memset(&res, 0, sizeof(res));
    if (o->restore) {
        struct lapict_vmm_snap s;
        mig_read_state(o, &s, &m);
        mig_resume(&v, o, &m, &s);
    } else {
        struct lapict_kvm_config kc;
        memset(&m, 0, sizeof(m));
        m.magic = MIG_MAGIC;
        m.target = o->migrations;
        m.seed = o->seed;
        m.rng = o->seed * 0x9E3779B97F4A7C15ull | 1;
        m.start_ns = lapict_vmm_mono_ns();
        m.want = K_N - 1;
        if (!o->quiet)
            printf("migrate: seed=%" PRIu64 " migrations=%" PRIu64
                   " advance=%s%s\n",
                   o->seed, o->migrations,
                   o->advance_mode == LAPICT_ADVANCE_OFF        ? "off"
                   : o->advance_mode == LAPICT_ADVANCE_ADAPTIVE ? "adaptive"
                                                                : "fixed",
                   o->exec ? " exec" : "");
        mig_next(&m, o);
        if (lapict_vmm_vm_create(&v, GUEST_RAM, false, false, err,
                                 sizeof(err)) < 0)
            mig_fail("create", err);
        vmm_load_guest(&v, o->guest);
        mb = mig_mb(&v);
        memset(mb, 0, sizeof(*mb));
        mb->magic = MB_MAGIC;
        mb->test = T_MIGRATE;
        mb->tsc_khz = (uint64_t)ioctl(v.vcpu, KVM_GET_TSC_KHZ, 0);
        mb->bus_hz = 1000000000ull;
        mb->mig.seed = mig_rnd(&m);
        vmm_lib_config(o, &kc);
        if (lapict_vmm_vm_lapic(&v, &kc, err, sizeof(err)) < 0)
            mig_fail("LAPIC", err);
    }
    /* One timeout for the whole run, whatever the execs. */
    {
        uint64_t el = (lapict_vmm_mono_ns() - m.start_ns) / 1000000000u;
        lapict_vmm_timeout(el < o->timeout_s ? (unsigned)(o->timeout_s - el)
                                             : 1,
                           "the migrate test did not finish");
    }
    note_reset(&c);
    while ((st = lapict_vmm_vm_run_points(&v, mig_exit, mig_point, &c)) ==
           MIG_STOP)
        migrate_once(&c);
    lapict_vmm_timeout(0, NULL);
    if (st < 0)
        return 2;
    mb = mig_mb(&v);
    printf("RESULT test=migrate migrations=%" PRIu64 " interrupts=%" PRIu64
           " lost=%" PRIu64 " doubled=%" PRIu64 " early=%" PRIu64
           " max_downtime_us=%" PRIu64,
           m.done, mb->mig.interrupts, mb->mig.lost, mb->mig.doubled,
           mb->mig.early, m.max_downtime_ns / 1000u);
    for (int k = 0; k < K_N; k++)
        printf(" stops_%s=%" PRIu64, kind_names[k], m.kinds[k]);
    printf(" fallbacks=%" PRIu64 " irr_first=%" PRIu64 " timer_first=%" PRIu64
           " tmcct_checks=%" PRIu64 " tmcct_across=%" PRIu64
           " tmcct_bad=%" PRIu64 " periodic_ticks=%" PRIu64 " oneshots=%" PRIu64
           " deadlines=%" PRIu64 " missed_ticks=%" PRIu64 " phases=%" PRIu64
           " serviced=%" PRIu64 " silent_drops=%" PRIu64
           " mean_downtime_us=%" PRIu64 " execs=%" PRIu64 " seed=%" PRIu64 "\n",
           m.fallbacks, m.irr_first, m.timer_first, mb->mig.tmcct_checks,
           mb->mig.tmcct_across, mb->mig.tmcct_bad, mb->mig.periodic_ticks,
           mb->mig.oneshots, mb->mig.deadlines,
           m.carried_missed + timer_missed(&v), mb->mig.phases, m.serviced,
           m.silent_drops, m.done ? m.sum_downtime_ns / m.done / 1000u : 0,
           m.execs, m.seed);
    if (!o->quiet) {
        add_stats(m.sum_st, &v);
        printf("migrate: lapict over all instances: expiries=%" PRIu64
               " injections=%" PRIu64 " refused=%" PRIu64 " coalesced=%" PRIu64
               " dropped=%" PRIu64 " masked=%" PRIu64
               "; adapter injections=%" PRIu64 "\n",
               m.sum_st[0], m.sum_st[1], m.sum_st[2], m.sum_st[3], m.sum_st[4],
               m.sum_st[5], m.sum_st[6]);
    }
    if (mb->mig.bad_detail[0])
        printf("migrate: first failure: check %" PRIu64 " got %" PRIu64
               " want %" PRIu64 " phase %" PRIu64 "\n",
               mb->mig.bad_detail[0], mb->mig.bad_detail[1],
               mb->mig.bad_detail[2], mb->mig.bad_detail[3]);
    if (mb->mig.early_detail[0])
        printf("migrate: first early interrupt: check %" PRIu64
               " came at %" PRIu64 ", not before %" PRIu64
               " (TSC; periodic: since arming), phase %" PRIu64 "\n",
               mb->mig.early_detail[0], mb->mig.early_detail[1],
               mb->mig.early_detail[2], mb->mig.early_detail[3]);
    fflush(stdout);
    st = res.status || m.done < m.target || mb->mig.lost || mb->mig.doubled ||
                 mb->mig.early || mb->mig.tmcct_bad || !mb->mig.interrupts
             ? 1
             : 0;
    lapict_vmm_vm_destroy(&v);
    return st;
}
