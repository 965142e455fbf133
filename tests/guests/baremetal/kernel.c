/* SPDX-License-Identifier: MIT */
/*
 * lapict-baremetal: a freestanding x86-64 guest kernel that plays the type-1
 * hypervisor of adapters/baremetal. Its "physical" local APIC is the one KVM
 * emulates in the kernel (lapict-vmm --lapic=kernel). On its one TSC-deadline
 * timer it multiplexes K virtual LAPIC timers (lapict instances of imaginary
 * vCPUs: one-shot, periodic and TSC-deadline, divides 1..128, guest TSC at 1x
 * and 0.5x), takes the real timer interrupts and checks every virtual
 * delivery against an expectation it keeps itself:
 *
 * - count-down timers: the instant is anchor + ns_for(n) (docs/spec/timer.md:
 * the   anchor is the host clock reading of the TMICT write, seen through the
 *   now_ns op; ns_for(n) = n x divide ns at the 1 GHz bus), compared with
 *   the host clock at delivery; periodic timers deliver grid point k + 1
 *   after grid point k (catch-up policy: a host stall delays ticks but
 *   drops none);
 * - TSC-deadline timers: the guest TSC at delivery, computed here from the
 *   raw TSC with the vCPU's ratio and offset, against the deadline written.
 *
 * A delivery before its instant, or one with no instant outstanding (a
 * double), counts as early; an instant that passed without a delivery
 * counts as lost. The kernel ends with
 *   RESULT test=baremetal timers=<K> deliveries=<n> early=<e> lost=<l>
 *          median_late=<c> p99_late=<c>
 * (lateness in host TSC cycles) and PORT_DONE 0 when all is well.
 *
 * Ownership (adapters/baremetal README): the multiplexer and the lapict
 * instances are touched by the main loop with interrupts disabled, or by
 * the timer interrupt handler; interrupts are enabled only in sti; hlt.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lapict/lapict.h>

#include "lapict_baremetal.h"
#include "runtime.h"

#define PHYS_VEC 0x40u
#define MSR_APIC_BASE 0x1Bu
#define APIC_BASE_X2APIC (1u << 10)
#define APIC_BASE_ENABLE (1u << 11)
#define X2APIC_EOI 0x80Bu
#define X2APIC_SVR 0x80Fu
#define X2APIC_LVTT 0x832u
#define XAPIC_EOI 0xB0u
#define XAPIC_SVR 0xF0u
#define SVR_ENABLE_SPURIOUS_FF 0x1FFu

#define TIMERS_DEFAULT 64u
#define TIMERS_MAX 16384u
/*
 * Time unit of periods and distances (1 ms to 0.2 s: more on a slow CPU
 * or with many timers, see calibrate()), and the run (at least 1 s, at
 * least 40 units); then the bound on waiting for the last instants.
 */
#define UNIT_MIN_NS 1000000ull
#define UNIT_MAX_NS 200000000ull /* 20 units at divide 1 fit TMICT */
#define RUN_MIN_NS 1000000000ull
#define GRACE_UNITS 20u
#define DRAIN_EXTEND_MAX_NS 2000000000ull
/* ns_for(n) = n x divide: the virtual timers count at KVM's 1 GHz bus. */
#define BUS_HZ 1000000000ull
_Static_assert(BUS_HZ == LAPICT_BUS_HZ_DEFAULT, "ns_for() assumes 1 GHz");

enum vt_mode { M_ONESHOT, M_PERIODIC, M_DEADLINE };

/* One virtual timer: the lapict instance, its node, what is expected. */
struct vt {
    struct lapict_timer t;
    struct lapict_bm_node node;
    uint8_t mode, vec, half;
    uint32_t div, count;
    /* One-shot / deadline: an instant is outstanding. */
    bool armed;
    /* Count-down: anchor (host ns) and grid points delivered since. */
    uint64_t anchor_ns, k;
    /* TSC-deadline: the guest TSC value written; guest TSC offset. */
    uint64_t deadline, tsc_offset;
};

/*
 * From SAMPLES_ADDR up: vts[K], slots[LAPICT_BM_SLOTS(K)], then the
 * lateness log. Not in .bss, which entry.S clears whole at boot: clearing
 * megabytes takes seconds where the guest runs under software
 * virtualisation, thousands of host cycles per guest instruction.
 */
static struct vt *vts;
static struct lapict_bm_slot *slots;
static uint32_t ring[TIMERS_MAX];
static uint32_t ring_head, ring_tail;
/* Lateness of every delivery, host TSC cycles, saturated at 2^32 - 1. */
static uint32_t *late_log;
static uint64_t late_max;

static struct mailbox *const mb = (struct mailbox *)(uintptr_t)MB_ADDR;
static struct lapict_bm_clock clk;
static struct lapict_bm_cpu cpu;
static struct lapict_ops vops;
static uint64_t (*bm_now_ns)(void *ctx);
static bool x2apic, capture, stopping;
static uint64_t captured_ns, khz;
static uint64_t deliveries, early, doubled, lost, bad_vector, nlate;
static uint64_t per_mode[3];
/* Where the losses were counted: a periodic timer's TMICT rewrite, the end. */
static uint64_t lost_rewrite, lost_end;

static const uint32_t tdcr_of[8] = {0xB, 0x0, 0x1, 0x2, 0x3, 0x8, 0x9, 0xA};
static const uint32_t div_of[8] = {1, 2, 4, 8, 16, 32, 64, 128};

/* ---- libc for lib/ and the adapter (no libgcc, no libc) -------------- */

void *memcpy(void *d, const void *s, size_t n)
{
    void *r = d;
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n)::"memory");
    return r;
}

void *memmove(void *d, const void *s, size_t n)
{
    if ((uintptr_t)d - (uintptr_t)s >= n)
        return memcpy(d, s, n);
    /* Overlap with the destination above: copy backwards. */
    void *de = (char *)d + n - 1;
    const void *se = (const char *)s + n - 1;
    __asm__ volatile("std; rep movsb; cld"
                     : "+D"(de), "+S"(se), "+c"(n)::"memory");
    return d;
}

void *memset(void *d, int c, size_t n)
{
    void *r = d;
    __asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
    return r;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x < *y ? -1 : 1;
    return 0;
}

/* Report and stop: the VMM ends the run at PORT_DONE. */
__attribute__((noreturn)) static void fail(const char *why, uint32_t code)
{
    out("baremetal: %s", why);
    outl(PORT_DONE, code);
    for (;;)
        __asm__ volatile("cli; hlt");
}

/* ---- the physical LAPIC ------------------------------------------------ */

static uint64_t hw_read_tsc(void *ctx)
{
    (void)ctx;
    return rdtsc();
}

static void hw_write_deadline(void *ctx, uint64_t tsc)
{
    (void)ctx;
    wrmsr(LAPICT_MSR_TSC_DEADLINE, tsc);
}

static void hw_eoi(void *ctx)
{
    (void)ctx;
    if (x2apic)
        wrmsr(X2APIC_EOI, 0);
    else
        *(volatile uint32_t *)(uintptr_t)(APIC + XAPIC_EOI) = 0;
}

static const struct lapict_bm_hw hw = {
    .version = LAPICT_BM_HW_VERSION,
    .read_tsc = hw_read_tsc,
    .write_tsc_deadline = hw_write_deadline,
    .eoi = hw_eoi,
};

static void lvtt_write(uint32_t v)
{
    if (x2apic)
        wrmsr(X2APIC_LVTT, v);
    else
        *(volatile uint32_t *)(uintptr_t)(APIC + LAPICT_XAPIC_LVTT) = v;
}

/* Software-enable the LAPIC (x2APIC mode when offered), LVTT in
 * TSC-deadline mode on PHYS_VEC. False without TSC-deadline support. */
static bool lapic_setup(void)
{
    uint32_t a, b, c, d;

    cpuid(1, &a, &b, &c, &d);
    if (!(c & (1u << 24)))
        return false;
    x2apic = c & (1u << 21);
    if (x2apic) {
        wrmsr(MSR_APIC_BASE,
              rdmsr(MSR_APIC_BASE) | APIC_BASE_ENABLE | APIC_BASE_X2APIC);
        wrmsr(X2APIC_SVR, SVR_ENABLE_SPURIOUS_FF);
    } else {
        *(volatile uint32_t *)(uintptr_t)(APIC + XAPIC_SVR) =
            SVR_ENABLE_SPURIOUS_FF;
    }
    lvtt_write(LAPICT_LVTT_TSC_DEADLINE | PHYS_VEC);
    return true;
}

void timer_isr(void)
{
    lapict_bm_timer_irq(&cpu);
}

/* ---- expectations ------------------------------------------------------ */

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t rnd_below(uint64_t n)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (rng * 2685821657736338717ull) % n;
}

static uint64_t now_ns(void)
{
    return lapict_bm_clock_ns(&clk, rdtsc());
}

/* VMX TSC scaling with ratio 1 or 1/2, computed here, not by the adapter. */
static uint64_t guest_tsc_at(const struct vt *v, uint64_t host_tsc)
{
    return (v->half ? host_tsc >> 1 : host_tsc) + v->tsc_offset;
}

/* The anchor of a TMICT write: the host clock reading the write made. */
static uint64_t now_ns_seen(void *ctx)
{
    uint64_t t = bm_now_ns(ctx);
    if (capture) {
        captured_ns = t;
        capture = false;
    }
    return t;
}

static void note_late(int64_t late_cycles)
{
    if (late_cycles < 0) {
        early++;
        return;
    }
    if (nlate < late_max)
        late_log[nlate++] = late_cycles > (int64_t)UINT32_MAX
                                ? UINT32_MAX
                                : (uint32_t)late_cycles;
}

/* Host ns past the instant -> host TSC cycles (negative: early). */
static int64_t cycles_late(uint64_t now, uint64_t instant)
{
    int64_t d = (int64_t)(now - instant);
    if (d < 0)
        return -1;
    return (int64_t)((uint64_t)d * khz / 1000000u);
}

/* Grid points of a count-down at or before host time @at. */
static uint64_t points_due(const struct vt *v, uint64_t at)
{
    int64_t d = (int64_t)(at - v->anchor_ns);
    return d < 0 ? 0 : (uint64_t)d / ((uint64_t)v->count * v->div);
}

static bool vt_inject(void *ctx, uint8_t vector)
{
    uint64_t tsc = rdtsc(), now = lapict_bm_clock_ns(&clk, tsc);
    struct vt *v = lapict_bm_node_user(ctx);
    int64_t late;

    if (vector != v->vec)
        bad_vector++;
    deliveries++;
    per_mode[v->mode]++;
    if (v->mode == M_PERIODIC) {
        v->k++;
        late = cycles_late(now, v->anchor_ns + v->k * v->count * v->div);
    } else if (!v->armed) {
        doubled++;
        late = -1;
    } else {
        if (v->mode == M_DEADLINE)
            late = (int64_t)(guest_tsc_at(v, tsc) - v->deadline) *
                   (v->half ? 2 : 1);
        else
            late = cycles_late(now, v->anchor_ns + (uint64_t)v->count * v->div);
        v->armed = false;
        if (!stopping)
            ring[ring_tail++ % TIMERS_MAX] = (uint32_t)(v - vts);
    }
    note_late(late);
    return true;
}

/* The servicing of K timers stays a fraction of the time: the lateness
 * measured is the multiplexer's, not a backlog's. */
static uint64_t unit_ns, run_ns;

/* A TMICT write; returns the anchor it made. */
static uint64_t tmict_write(struct vt *v, uint32_t count)
{
    capture = true;
    lapict_tmict_write(&v->t, count);
    if (capture) {
        capture = false;
        fail("TMICT write without a clock reading", 3);
    }
    return captured_ns;
}

static void vt_start(struct vt *v)
{
    uint64_t ns;

    switch (v->mode) {
    case M_DEADLINE:
        ns = unit_ns / 5 + rnd_below(8 * unit_ns);
        v->deadline = guest_tsc_at(v, rdtsc()) +
                      ns * (v->half ? khz / 2 : khz) / 1000000u;
        v->armed = true;
        lapict_tsc_deadline_write(&v->t, v->deadline);
        break;
    case M_ONESHOT:
        /* A quarter short (down to one tick), the others 0.5-8.5 units. */
        ns = rnd_below(4) ? unit_ns / 2 + rnd_below(8 * unit_ns)
                          : 1 + rnd_below(unit_ns / 5);
        v->count = ns / v->div ? (uint32_t)(ns / v->div) : 1;
        v->armed = true;
        v->anchor_ns = tmict_write(v, v->count);
        break;
    default: {
        /* A new TMICT restarts the grid: every point of the old one that
         * passed must have been delivered by the write (it syncs first). */
        uint32_t count =
            (uint32_t)((2 * unit_ns + rnd_below(18 * unit_ns)) / v->div);
        uint64_t at = tmict_write(v, count);
        if (v->count) {
            uint64_t due = points_due(v, at);
            if (due > v->k) {
                lost += due - v->k;
                lost_rewrite += due - v->k;
            }
        }
        v->anchor_ns = at;
        v->count = count;
        v->k = 0;
        break;
    }
    }
}

/*
 * Host ns that starting and stopping one virtual timer take here (two
 * register writes through lapict and the multiplexer), from the first
 * timers. The timers are left stopped, their expectations clear.
 */
static uint64_t calibrate(uint32_t n)
{
    uint32_t m = n < 16 ? n : 16, i;
    uint64_t t0 = now_ns();

    stopping = true; /* a short one-shot delivered here is not restarted */
    unit_ns = UNIT_MIN_NS;
    for (i = 0; i < m; i++) {
        struct vt *v = &vts[i];
        vt_start(v);
        if (v->mode == M_DEADLINE)
            lapict_tsc_deadline_write(&v->t, 0);
        else
            lapict_tmict_write(&v->t, 0);
        v->armed = false;
        v->count = 0;
        v->k = 0;
    }
    return (now_ns() - t0) / m;
}

static int vt_init(struct vt *v, uint32_t i)
{
    struct lapict_config c;
    int rc;

    *v = (struct vt){0};
    v->mode = (uint8_t)(i % 3);
    v->div = div_of[(i / 3) % 8];
    v->vec = (uint8_t)(0x20 + i % 0xD0);
    v->half = (i % 4) >= 2;
    v->tsc_offset = 1000000ull * i;
    rc = lapict_bm_node_init(&v->node, &cpu, &v->t,
                             v->half ? LAPICT_BM_RATIO_ONE / 2
                                     : LAPICT_BM_RATIO_ONE,
                             v->tsc_offset, v);
    if (rc)
        return rc;
    lapict_config_default(&c);
    c.bus_hz = BUS_HZ;
    c.tsc_khz = (uint32_t)(v->half ? khz / 2 : khz);
    c.missed_policy = LAPICT_MISSED_CATCH_UP;
    c.catch_up_max = LAPICT_CATCH_UP_MAX_LIMIT;
    rc = lapict_init(&v->t, &c, &vops, &v->node);
    if (rc)
        return rc;
    lapict_tdcr_write(&v->t, tdcr_of[(i / 3) % 8]);
    return lapict_lvtt_write(&v->t,
                             (v->mode == M_PERIODIC   ? LAPICT_LVTT_PERIODIC
                              : v->mode == M_DEADLINE ? LAPICT_LVTT_TSC_DEADLINE
                                                      : LAPICT_LVTT_ONESHOT) |
                                 v->vec);
}

/* Instants at or before host TSC @tsc still undelivered. */
static uint64_t outstanding(uint32_t n, uint64_t tsc)
{
    uint64_t at = lapict_bm_clock_ns(&clk, tsc), sum = 0;

    for (uint32_t i = 0; i < n; i++) {
        const struct vt *v = &vts[i];
        if (v->mode == M_PERIODIC) {
            uint64_t due = points_due(v, at);
            sum += due > v->k ? due - v->k : 0;
        } else if (v->armed) {
            if (v->mode == M_DEADLINE)
                sum += guest_tsc_at(v, tsc) >= v->deadline;
            else
                sum += (int64_t)(at - (v->anchor_ns +
                                       (uint64_t)v->count * v->div)) >= 0;
        }
    }
    return sum;
}

/* In-place heapsort of the lateness log (no libc qsort here). */
static void sort_u32(uint32_t *a, uint64_t n)
{
    uint64_t start = n / 2, end = n;

    while (end > 1) {
        uint64_t root, child;
        uint32_t x;
        if (start > 0) {
            x = a[--start];
            root = start;
        } else {
            x = a[--end];
            a[end] = a[0];
            root = 0;
        }
        while ((child = 2 * root + 1) < end) {
            if (child + 1 < end && a[child + 1] > a[child])
                child++;
            if (a[child] <= x)
                break;
            a[root] = a[child];
            root = child;
        }
        a[root] = x;
    }
}

/* The APIC register at xAPIC offset @off (x2APIC: its MSR). */
static uint32_t apic_read(uint32_t off)
{
    if (x2apic)
        return (uint32_t)rdmsr(0x800u + off / 16u);
    return *(volatile uint32_t *)(uintptr_t)(APIC + off);
}

/*
 * Instants were still outstanding at the end: what the physical timer,
 * the APIC (IRR and ISR of PHYS_VEC) and each virtual timer (its
 * expectation, its multiplexer key, lapict's counters, then its registers,
 * whose reads may deliver) looked like. @over: ns the drain ran past its
 * limit; @jumps, @jump_max: its turns longer than a unit, the longest.
 */
static void loss_report(uint32_t n, uint64_t t_end_tsc, uint64_t over,
                        uint64_t jumps, uint64_t jump_max)
{
    uint64_t at = lapict_bm_clock_ns(&clk, t_end_tsc), tsc = rdtsc();
    uint64_t msr = rdmsr(LAPICT_MSR_TSC_DEADLINE);
    uint32_t w = 0x10u * (PHYS_VEC / 32u), bit = PHYS_VEC % 32u;

    out("baremetal: loss: drain over its limit by %d ns, turns over a unit "
        "%u (longest %u ns)",
        over, jumps, jump_max);
    out("baremetal: loss: deadline_msr_minus_tsc=%d hw_armed=%u "
        "hw_req_minus_tsc=%d heap_n=%u top_key_to_end_ns=%d irr=%u isr=%u "
        "lvtt=%x",
        msr ? msr - tsc : 0, (uint64_t)cpu.hw_armed, cpu.hw_req_tsc - tsc,
        (uint64_t)cpu.n, cpu.n ? at - cpu.heap[0].key_host_ns : 0,
        (uint64_t)((apic_read(0x200u + w) >> bit) & 1u),
        (uint64_t)((apic_read(0x100u + w) >> bit) & 1u),
        (uint64_t)apic_read(0x320u));
    for (uint32_t i = 0; i < n; i++) {
        struct vt *v = &vts[i];
        struct lapict_stats ts;
        uint64_t key = 0, past = 0, due = 0, armed = v->armed, k = v->k;
        bool held = lapict_bm_node_armed(&v->node, &key);
        uint32_t lvtt, tmcct;

        if (v->mode == M_DEADLINE)
            past = guest_tsc_at(v, t_end_tsc) - v->deadline;
        if (v->mode == M_PERIODIC)
            due = points_due(v, at);
        lapict_stats_get(&v->t, &ts, sizeof(ts));
        lvtt = lapict_lvtt_read(&v->t);
        tmcct = lapict_tmcct_read(&v->t);
        out("baremetal: loss: vt %u mode=%u armed=%u tsc_past_deadline=%d "
            "k=%u due=%u mux_armed=%u key_to_end_ns=%d expiries=%u "
            "injections=%u lvtt=%x tmcct=%u",
            (uint64_t)i, (uint64_t)v->mode, armed, past, k, due, (uint64_t)held,
            held ? at - key : 0, ts.expiries, ts.injections, (uint64_t)lvtt,
            (uint64_t)tmcct);
    }
}

void guest_main(void)
{
    struct lapict_bm_cpu_config cc = {0};
    struct lapict_bm_stats st;
    uint64_t end, t_end_tsc, limit, now, prev;
    uint64_t drain_jumps = 0, drain_jump_max = 0, drain_extended = 0;
    uint32_t n, i;

    if (mb->magic != MB_MAGIC)
        fail("bad mailbox", 1);
    n = mb->timers ? (uint32_t)mb->timers : TIMERS_DEFAULT;
    if (mb->timers > TIMERS_MAX || !mb->tsc_khz ||
        mb->tsc_khz > LAPICT_TSC_KHZ_MAX)
        fail("timers (1..16384) or tsc_khz out of range", 2);
    khz = mb->tsc_khz;
    vts = (struct vt *)(uintptr_t)SAMPLES_ADDR;
    slots = (struct lapict_bm_slot *)(vts + n);
    late_log = (uint32_t *)(slots + LAPICT_BM_SLOTS(n));
    late_max = ((uintptr_t)GUEST_RAM - (uintptr_t)late_log) / sizeof(*late_log);
    setup_idt(PHYS_VEC);
    if (!lapic_setup())
        fail("no TSC-deadline timer (CPUID.01H:ECX[24])", 2);
    cc.clock = &clk;
    if (lapict_bm_clock_init(&clk, (uint32_t)khz, rdtsc(), 0) ||
        lapict_bm_cpu_init(&cpu, &cc, &hw, NULL, slots, LAPICT_BM_SLOTS(n)))
        fail("multiplexer init", 2);
    lapict_bm_ops_fill(&vops, vt_inject, NULL);
    bm_now_ns = vops.now_ns;
    vops.now_ns = now_ns_seen;
    for (i = 0; i < n; i++)
        if (vt_init(&vts[i], i))
            fail("lapict init", 2);
    /* The unit and the run scale with the cost of servicing K timers. */
    unit_ns = calibrate(n) * n;
    if (unit_ns < UNIT_MIN_NS)
        unit_ns = UNIT_MIN_NS;
    if (unit_ns > UNIT_MAX_NS)
        unit_ns = UNIT_MAX_NS;
    run_ns = 40 * unit_ns < RUN_MIN_NS ? RUN_MIN_NS : 40 * unit_ns;
    stopping = false;
    for (i = 0; i < n; i++)
        vt_start(&vts[i]);

    end = now_ns() + run_ns;
    for (;;) {
        if ((int64_t)(now_ns() - end) >= 0)
            break;
        while (ring_head != ring_tail)
            vt_start(&vts[ring[ring_head++ % TIMERS_MAX]]);
        /*
         * Now and then a periodic timer gets a new TMICT (a new grid), but
         * not while ticks it owes are held pending (LVTT delivery status;
         * catch-up after a host stall): docs/spec/timer.md drops a pending
         * expiry at a TMICT write, which vt_start() would count as lost.
         */
        if (rnd_below(16) == 0) {
            i = (uint32_t)rnd_below(n);
            if (vts[i].mode == M_PERIODIC &&
                !(lapict_lvtt_read(&vts[i].t) & LAPICT_LVTT_PENDING))
                vt_start(&vts[i]);
        }
        __asm__ volatile("sti; hlt; cli" ::: "memory");
    }

    /* Stop: every instant up to now must still arrive (within the grace). */
    stopping = true;
    t_end_tsc = rdtsc();
    limit = lapict_bm_clock_ns(&clk, t_end_tsc) + GRACE_UNITS * unit_ns;
    prev = now_ns();
    while (outstanding(n, t_end_tsc) && (int64_t)(prev - limit) < 0) {
        /*
         * Wait as the main loop does, halted with interrupts open: a
         * hypervisor may hold a pending vector in the IRR until the guest
         * halts (an "sti; pause; cli" turn is no interrupt window to it).
         * An outstanding instant has its node armed, so the physical timer
         * is armed at or before it, or its vector is pending: the halt
         * ends.
         */
        __asm__ volatile("sti; hlt; cli" ::: "memory");
        now = now_ns();
        /*
         * A turn of more than a unit may be the host's stall, not time the
         * guest had to take its interrupts: it does not count against the
         * grace, up to DRAIN_EXTEND_MAX_NS in all (a halt may also last
         * that long, until the next timer, and a lost instant must still
         * end the wait).
         */
        if (now - prev > unit_ns && drain_extended < DRAIN_EXTEND_MAX_NS) {
            limit += now - prev;
            drain_extended += now - prev;
            drain_jumps++;
        }
        if (now - prev > drain_jump_max)
            drain_jump_max = now - prev;
        prev = now;
    }
    lost_end = outstanding(n, t_end_tsc);
    lost += lost_end;
    if (lost_end)
        loss_report(n, t_end_tsc, prev - limit, drain_jumps, drain_jump_max);
    for (i = 0; i < n; i++) {
        lapict_lvtt_write(&vts[i].t, LAPICT_LVTT_MASK);
        lapict_tmict_write(&vts[i].t, 0);
    }
    lvtt_write(LAPICT_LVTT_MASK);
    wrmsr(LAPICT_MSR_TSC_DEADLINE, 0);

    lapict_bm_stats_get(&cpu, &st);
    out("baremetal: lapic=%s tsc_khz=%u unit_us=%u run_ms=%u",
        x2apic ? "x2apic" : "xapic", khz, unit_ns / 1000, run_ns / 1000000);
    out("baremetal: irqs=%u early_irqs=%u fired=%u hw_writes=%u "
        "past_writes=%u round_limits=%u",
        st.irqs, st.early_irqs, st.fired, st.hw_writes, st.past_writes,
        st.round_limits);
    out("baremetal: deliveries oneshot=%u periodic=%u deadline=%u "
        "doubled=%u bad_vector=%u lost_rewrite=%u lost_end=%u",
        per_mode[M_ONESHOT], per_mode[M_PERIODIC], per_mode[M_DEADLINE],
        doubled, bad_vector, lost_rewrite, lost_end);
    sort_u32(late_log, nlate);
    out("RESULT test=baremetal timers=%u deliveries=%u early=%u lost=%u "
        "median_late=%u p99_late=%u",
        (uint64_t)n, deliveries, early, lost,
        nlate ? (uint64_t)late_log[nlate / 2] : 0,
        nlate ? (uint64_t)late_log[nlate * 99 / 100] : 0);
    outl(PORT_DONE, early || lost || bad_vector || !deliveries ? 1 : 0);
}
