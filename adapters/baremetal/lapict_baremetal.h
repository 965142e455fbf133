/* SPDX-License-Identifier: MIT */
/*
 * Bare-metal adapter: many lapict instances (one per vCPU) share the one
 * physical TSC-deadline timer of each physical CPU, as in a type-1
 * hypervisor that owns the local APIC. The adapter's README (hardware
 * quirks, threading, threat model) is installed in
 * share/doc/lapict/adapters/baremetal (Debian:
 * /usr/share/doc/liblapict-baremetal-dev).
 *
 * Per physical CPU a multiplexer (struct lapict_bm_cpu) keeps the armed
 * software timers of its vCPUs (struct lapict_bm_node, one per lapict
 * instance, the instance's ops ctx) in a 4-ary min-heap ordered by
 * (deadline, arming sequence). The physical timer is written only when the
 * earliest deadline changes; its interrupt handler services every due node
 * in that order and re-arms for the next.
 *
 * With lapict_bm_ops_fill_preempt() the vCPU that runs on the CPU
 * (lapict_bm_node_load()) keeps its timer out of the heap, in the core's
 * hardware timer: the VMX-preemption timer of its VMCS, loaded at each VM
 * entry (lapict_bm_guest_entry()).
 *
 * Freestanding: no libc, no allocation. The caller provides every
 * structure and the heap's slot array. All fields are private.
 */
#ifndef LAPICT_BAREMETAL_H
#define LAPICT_BAREMETAL_H

#include <stdbool.h>
#include <stdint.h>

#include <lapict/lapict.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when fields are appended to struct lapict_bm_hw. */
#define LAPICT_BM_HW_VERSION 1

/* Guest TSC multiplier of 1.0 (VMX TSC scaling: 48 fractional bits). */
#define LAPICT_BM_RATIO_ONE (1ull << 48)

/* Default bound on service rounds per interrupt (see lapict_bm_timer_irq). */
#define LAPICT_BM_MAX_ROUNDS_DEFAULT 8u

/*
 * The physical hardware of one CPU. Every op gets the @hw_ctx given to
 * lapict_bm_cpu_init(). Runs on that CPU only.
 */
struct lapict_bm_hw {
    /* LAPICT_BM_HW_VERSION the host was written against. */
    uint32_t version;
    /*
     * RDTSC (or RDTSCP). Mandatory. Invariant TSC, synchronised across
     * CPUs: the ops of a node detached from this CPU (in migration) read
     * the TSC through it from whichever CPU the host calls them on.
     */
    uint64_t (*read_tsc)(void *hw_ctx);
    /*
     * WRMSR IA32_TSC_DEADLINE (the LVT timer is in TSC-deadline mode).
     * Mandatory. 0 disarms; a value at or below the TSC fires at once.
     */
    void (*write_tsc_deadline)(void *hw_ctx, uint64_t host_tsc);
    /* Write the LAPIC EOI register. Mandatory. */
    void (*eoi)(void *hw_ctx);
    /*
     * Load the VMX-preemption timer of the vCPU about to enter with
     * @ticks (TSC >> preempt_shift). Optional (NULL: not used, and the
     * core's hardware-timer ops refuse).
     */
    void (*write_preempt)(void *hw_ctx, uint32_t ticks);
};

/*
 * The host clock: host ns from the raw TSC by a calibrated multiply-shift,
 * ns = ns_base + ((tsc - tsc_base) * mult >> shift). One clock is shared
 * by all CPUs (invariant, synchronised TSC), so a vCPU can move between
 * them. Read-only after lapict_bm_clock_init().
 */
struct lapict_bm_clock {
    uint64_t tsc_base, ns_base;
    /* TSC ticks -> ns. */
    uint64_t ns_mult;
    /* ns -> TSC ticks (estimate, corrected with ns_mult). */
    uint64_t tsc_mult;
    uint32_t tsc_khz;
    uint8_t ns_shift, tsc_shift;
};

struct lapict_bm_node;

/*
 * One entry of a CPU's heap: an armed node and its deadline. The caller
 * provides an array of LAPICT_BM_SLOTS(n) of them for a CPU of n nodes.
 * Private fields.
 */
struct lapict_bm_slot {
    uint64_t key_host_ns;
    struct lapict_bm_node *node;
};

/*
 * Slots a CPU needs beyond one per node: the heap starts up to three
 * entries into the array, so that each group of four siblings fills one
 * 64-byte cache line (best with an array aligned to 16 bytes or more).
 */
#define LAPICT_BM_SLOT_SPARE 3u
#define LAPICT_BM_SLOTS(nodes) ((nodes) + LAPICT_BM_SLOT_SPARE)

/* Hook called instead of lapict_expire() when set (tests, benchmarks). */
typedef void (*lapict_bm_fire_fn)(struct lapict_bm_node *node);

/* A vCPU's timer node: the lapict ops ctx of its instance. Private. */
struct lapict_bm_node {
    /* What servicing and arming touch, first: 32 bytes, so one cache line
     * in arrays of nodes too. */
    struct lapict_bm_cpu *cpu;
    lapict_bm_fire_fn fire;
    /* Arming sequence of the CPU (ties fire in arming order). */
    uint64_t seq;
    /* Heap position + 1; 0 = not in the heap. */
    uint32_t slot;
    /* Also the state: on a CPU, or detached (in migration). */
    uint32_t magic;
    /*
     * The deadline: in the heap, on the preemption timer (never both: the
     * core arms one host timer at a time), or kept across detach/attach.
     */
    uint64_t deadline_host_ns;
    /* On the preemption timer: the first TSC value of that deadline,
     * computed when armed, so that entries do not convert it again. */
    uint64_t deadline_tsc;
    struct lapict_timer *timer;
    void *user;
    /* Guest TSC = (host TSC * ratio >> 48) + offset. */
    uint64_t tsc_ratio, tsc_offset;
    /* Host TSC ticks per guest tick << tsc_inv_shift (inverse estimate). */
    uint64_t tsc_inv;
    uint8_t tsc_inv_shift;
    /* BM_N_* bits: deadline kept while detached, preemption timer armed. */
    uint32_t flags;
};

/* Counters of one CPU; they wrap only after 2^64 events. */
struct lapict_bm_stats {
    uint64_t irqs;          /* physical timer interrupts handled */
    uint64_t early_irqs;    /* ... that found nothing due (re-armed) */
    uint64_t preempt_exits; /* VMX-preemption timer exits serviced */
    uint64_t fired;         /* nodes serviced (lapict_expire / hook calls) */
    uint64_t preempt_fired; /* ... of them the loaded node's preemption timer */
    uint64_t arms, cancels; /* node operations */
    uint64_t hw_writes;     /* IA32_TSC_DEADLINE writes (0 included) */
    uint64_t past_writes;   /* ... of a deadline already reached */
    uint64_t wrap_clamps;   /* deadlines beyond the 2^64 TSC wrap */
    uint64_t round_limits;  /* handlers that hit max_rounds */
    uint32_t armed;         /* nodes in the heap now */
    uint32_t nodes;         /* nodes on the CPU (each holds a slot) */
    uint32_t capacity;      /* nodes the CPU can take */
};

struct lapict_bm_cpu_config {
    /* The shared host clock; must outlive the CPU. */
    const struct lapict_bm_clock *clock;
    /* IA32_VMX_MISC[4:0]: preemption timer ticks = TSC >> shift. */
    uint32_t preempt_shift;
    /* Service rounds per interrupt before yielding; 0 = default. */
    uint32_t max_rounds;
};

/* One physical CPU's multiplexer. Private fields. */
struct lapict_bm_cpu {
    const struct lapict_bm_hw *hw;
    void *hw_ctx;
    const struct lapict_bm_clock *clock;
    /* In the caller's slots: the heap of (deadline, node) pairs. */
    struct lapict_bm_slot *heap;
    /* Entries in the heap; nodes on the CPU; nodes it can take. */
    uint32_t n, nodes, cap;
    uint64_t seq;
    /* The deadline last written (as host ns and TSC), if still armed. */
    uint64_t hw_req_ns, hw_req_tsc;
    bool hw_armed;
    uint32_t max_rounds, preempt_shift;
    uint32_t in_service;
    uint32_t magic;
    /* The node whose callback runs, and its arming sequence then. */
    struct lapict_bm_node *cur;
    /* The loaded node (its vCPU runs here), or NULL. */
    struct lapict_bm_node *guest;
    uint64_t cur_seq;
    struct lapict_bm_stats st;
};

/**
 * lapict_bm_clock_init() - calibrate the TSC -> host ns multiply-shift.
 * @clk: the clock to fill.
 * @tsc_khz: host TSC frequency (calibrated by the host), 1..10^8 kHz.
 * @tsc_base: a TSC value at or before every later read (e.g. read now).
 * @ns_base: the host ns that @tsc_base stands for.
 *
 * The clock is continuous across the 2^64 TSC wrap and stays exact to
 * the multiply-shift's rounding for 2^64 TSC ticks or 2^64 ns after
 * @tsc_base, whichever comes first.
 *
 * Context: any (init only; it loops over bits to avoid a 128-bit divide).
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
int lapict_bm_clock_init(struct lapict_bm_clock *clk, uint32_t tsc_khz,
                         uint64_t tsc_base, uint64_t ns_base);

/**
 * lapict_bm_clock_ns() - host ns at host TSC value @tsc.
 * @clk: the clock.
 * @tsc: a host TSC value (wrapping distance from the base).
 *
 * Context: any.
 * Return: ns_base + floor((tsc - tsc_base) * ns_mult >> ns_shift), mod 2^64.
 */
uint64_t lapict_bm_clock_ns(const struct lapict_bm_clock *clk, uint64_t tsc);

/**
 * lapict_bm_clock_tsc() - first host TSC value whose host ns is >= @ns.
 * @clk: the clock.
 * @host_ns: a host instant at or after the base (wrapping distance).
 *
 * Exact, by lapict_bm_clock_ns()'s own values, at every rate
 * lapict_bm_clock_init() accepts: "TSC >= result" is "host ns >= @host_ns".
 *
 * Context: any (multiplies only, a bounded correction loop).
 * Return: the TSC value, wrapping at 2^64; tsc_base + 2^64 - 1 when 2^64
 * ticks after the base do not reach @host_ns.
 */
uint64_t lapict_bm_clock_tsc(const struct lapict_bm_clock *clk,
                             uint64_t host_ns);

/**
 * lapict_bm_cpu_init() - a multiplexer for one physical CPU.
 * @cpu: caller storage.
 * @cfg: clock and options (clock mandatory).
 * @hw: the CPU's hardware ops; must outlive @cpu.
 * @hw_ctx: passed to every hardware op.
 * @slots: heap storage, @nslots entries.
 * @nslots: LAPICT_BM_SLOTS(n) for a CPU of n nodes, n in 1..2^31.
 *
 * Each node on the CPU holds one slot from lapict_bm_node_init() or
 * lapict_bm_node_attach() until lapict_bm_node_detach(), so arming a node
 * never fails for want of room: a full CPU refuses the node instead.
 *
 * Context: the CPU itself, interrupts disabled. No hardware op is called.
 * Return: LAPICT_OK, LAPICT_E_INVAL (NULL, fewer than LAPICT_BM_SLOTS(1)
 * slots, bad version, a missing mandatory op).
 */
int lapict_bm_cpu_init(struct lapict_bm_cpu *cpu,
                       const struct lapict_bm_cpu_config *cfg,
                       const struct lapict_bm_hw *hw, void *hw_ctx,
                       struct lapict_bm_slot *slots, uint32_t nslots);

/**
 * lapict_bm_node_init() - a vCPU timer node on @cpu.
 * @node: caller storage (typically in the vCPU structure).
 * @cpu: the CPU the vCPU runs on.
 * @timer: its lapict instance (lapict_init() it with @node as ctx and an
 *         ops table from lapict_bm_ops_fill()); NULL with a fire hook.
 * @tsc_ratio: guest TSC multiplier, 48 fractional bits (LAPICT_BM_RATIO_ONE
 *             = same rate as the host), in [2^32, 2^62): the guest runs at
 *             1/65536 to 16384 times the host rate.
 * @tsc_offset: added after scaling (VMX TSC offset).
 * @user: the host's pointer, see lapict_bm_node_user().
 *
 * The node takes one of @cpu's slots (until lapict_bm_node_detach()).
 * Do not init a node that is on a CPU: detach it first.
 *
 * Context: owner CPU, interrupts disabled.
 * Return: LAPICT_OK; LAPICT_E_INVAL (bad argument, or @cpu has as many
 * nodes as its slots allow: nothing is changed).
 */
int lapict_bm_node_init(struct lapict_bm_node *node, struct lapict_bm_cpu *cpu,
                        struct lapict_timer *timer, uint64_t tsc_ratio,
                        uint64_t tsc_offset, void *user);

/**
 * lapict_bm_node_set_fire() - call @fn instead of lapict_expire().
 * @node: the node.
 * @fn: the hook, or NULL for lapict_expire(node's timer).
 *
 * Context: owner CPU.
 */
void lapict_bm_node_set_fire(struct lapict_bm_node *node, lapict_bm_fire_fn fn);

/** lapict_bm_node_user() - the @user given at init. @node: the node. */
void *lapict_bm_node_user(const struct lapict_bm_node *node);

/**
 * lapict_bm_ops_fill() - the lapict ops of a bare-metal vCPU.
 * @ops: filled: version, now_ns, guest_tsc, sw_timer_arm/cancel (the
 *       multiplexer), tsc_to_host_ns and spin_until (both exact, from the
 *       TSC); hv_timer_* NULL (see lapict_bm_ops_fill_preempt()).
 * @inject: the host's injection op (ctx is the node).
 * @report: optional error report op (ctx is the node), may be NULL.
 *
 * Context: any.
 */
void lapict_bm_ops_fill(struct lapict_ops *ops,
                        bool (*inject)(void *node, uint8_t vector),
                        void (*report)(void *node, int status,
                                       uint32_t detail));

/**
 * lapict_bm_ops_fill_preempt() - the ops, with the VMX-preemption timer.
 * @ops: as lapict_bm_ops_fill(), plus hv_timer_arm/cancel: the core's
 *       hardware timer is the VMX-preemption timer of the loaded vCPU.
 * @inject: as lapict_bm_ops_fill().
 * @report: as lapict_bm_ops_fill().
 *
 * hv_timer_arm accepts only for the node loaded on its CPU (see
 * lapict_bm_node_load()) whose CPU has a write_preempt op; it refuses
 * otherwise, and the core uses the software timer (the heap). An accepted
 * arm only stores the deadline in the node: no heap operation, no
 * IA32_TSC_DEADLINE write; lapict_bm_guest_entry() loads the preemption
 * timer with it, lapict_bm_preempt_exit() (or the timer interrupt)
 * services it.
 *
 * Context: any.
 */
void lapict_bm_ops_fill_preempt(struct lapict_ops *ops,
                                bool (*inject)(void *node, uint8_t vector),
                                void (*report)(void *node, int status,
                                               uint32_t detail));

/**
 * lapict_bm_now_ns() - host ns now, from the TSC of @cpu.
 * @cpu: the CPU.
 * Context: owner CPU.
 */
uint64_t lapict_bm_now_ns(const struct lapict_bm_cpu *cpu);

/**
 * lapict_bm_guest_tsc() - the guest TSC of @node now.
 * @node: the node.
 * Context: owner CPU.
 */
uint64_t lapict_bm_guest_tsc(const struct lapict_bm_node *node);

/**
 * lapict_bm_arm() - arm (or re-arm: arming replaces) @node for @host_ns.
 * @node: the node.
 * @host_ns: the instant; one already past fires at once.
 *
 * O(log n). Writes IA32_TSC_DEADLINE only if the earliest deadline of the
 * CPU changed (never from inside lapict_bm_timer_irq(), which writes once
 * at its end). Deadlines of one CPU must lie within 2^63 ns of each other
 * (lapict arms at most 2^62 ns ahead).
 *
 * A detached node only keeps @host_ns: lapict_bm_node_attach() arms it.
 * It cannot fail for a node: the node's slot is reserved.
 *
 * Context: owner CPU, interrupts disabled, or inside a fire callback.
 * Return: LAPICT_OK; LAPICT_E_INVAL (not a node).
 */
int lapict_bm_arm(struct lapict_bm_node *node, uint64_t host_ns);

/**
 * lapict_bm_cancel() - disarm @node; idempotent.
 * @node: the node.
 *
 * A cancelled node is never fired (unless armed again). On a detached
 * node it drops the deadline kept for attach.
 *
 * Context: as lapict_bm_arm().
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
int lapict_bm_cancel(struct lapict_bm_node *node);

/**
 * lapict_bm_node_armed() - is @node armed, and for when.
 * @node: the node.
 * @host_ns: set to the deadline when armed (may be NULL).
 *
 * Armed: in the heap, on the preemption timer, or (detached) kept for
 * attach.
 *
 * Context: owner CPU.
 */
bool lapict_bm_node_armed(const struct lapict_bm_node *node, uint64_t *host_ns);

/**
 * lapict_bm_node_detach() - take @node off its CPU (vCPU migration, step 1).
 * @node: the node.
 *
 * Frees its slot and keeps its deadline; lapict_bm_node_attach() on the
 * new CPU re-arms it. Until then its ops still work: the clocks read the
 * TSC through the old CPU (which must stay initialised), an arm replaces
 * the kept deadline, a cancel drops it. Also the way to retire a node.
 *
 * Context: the old CPU, interrupts disabled.
 * Return: LAPICT_OK; LAPICT_E_INVAL (not on a CPU, or still loaded: put it
 * first).
 */
int lapict_bm_node_detach(struct lapict_bm_node *node);

/**
 * lapict_bm_node_attach() - put a detached @node on @cpu (step 2).
 * @node: the node.
 * @cpu: the new CPU (same clock).
 *
 * Context: the new CPU, interrupts disabled.
 * Return: LAPICT_OK; LAPICT_E_INVAL (bad argument, or @cpu full: the node
 * stays detached with its deadline, and can be attached elsewhere).
 */
int lapict_bm_node_attach(struct lapict_bm_node *node,
                          struct lapict_bm_cpu *cpu);

/**
 * lapict_bm_node_load() - the vCPU of @node runs on its CPU from now on.
 * @node: the node (on a CPU).
 *
 * Makes @node the CPU's loaded node (one at a time) and tells its instance
 * (lapict_vcpu_unblocked()), which with lapict_bm_ops_fill_preempt() moves
 * its timer from the heap to the preemption timer. Call it when the vCPU
 * is scheduled in or wakes from a halt; idempotent.
 *
 * Context: owner CPU, interrupts disabled; not from a callback of @node.
 * Return: LAPICT_OK; LAPICT_E_INVAL (bad node, or another node is loaded).
 */
int lapict_bm_node_load(struct lapict_bm_node *node);

/**
 * lapict_bm_node_put() - the vCPU of @node stops running on its CPU.
 * @node: the node (on a CPU).
 *
 * Tells its instance (lapict_vcpu_blocking()), which moves a preemption
 * timer deadline back to the heap, where the physical timer watches it
 * (the preemption timer counts only in the guest). Call it when the vCPU
 * halts or is scheduled out, and once after lapict_init() for a vCPU that
 * does not run yet. No longer loaded, the node's hardware-timer arms are
 * refused.
 *
 * Context: owner CPU, interrupts disabled; not from a callback of @node.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
int lapict_bm_node_put(struct lapict_bm_node *node);

/**
 * lapict_bm_timer_irq() - the physical LAPIC timer interrupt handler.
 * @cpu: this CPU.
 *
 * Services every due node in (deadline, arming sequence) order: for each,
 * lapict_expire() (or the hook) runs, during which the node counts as not
 * armed; the callback may re-arm or cancel it and other nodes (a re-arm of
 * the serviced node costs one sift from the top). A round reads the clock once
 * and ends when the next node is not due or was armed during the round (a
 * re-arm in the past); the next round reads the clock again. After max_rounds
 * rounds the handler yields (the deadline written is then already reached, so
 * the timer fires again at once). Finally it
 * writes IA32_TSC_DEADLINE for the earliest node and signals EOI. An
 * interrupt that arrives early (nothing due yet) only re-arms. A due
 * preemption-timer deadline of the loaded node is serviced first.
 *
 * Context: this CPU, interrupts disabled. Not re-entrant: a nested call
 * returns LAPICT_E_INVAL without doing anything.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
int lapict_bm_timer_irq(struct lapict_bm_cpu *cpu);

/**
 * lapict_bm_preempt_exit() - a VMX-preemption timer VM exit.
 * @cpu: this CPU.
 *
 * As lapict_bm_timer_irq() without the EOI (no interrupt was taken).
 *
 * Context: this CPU, interrupts disabled.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
int lapict_bm_preempt_exit(struct lapict_bm_cpu *cpu);

/**
 * lapict_bm_guest_entry() - load the VMX-preemption timer before VM entry.
 * @cpu: this CPU.
 *
 * With a write_preempt op and a deadline (the heap's earliest, or the
 * loaded node's preemption-timer deadline, whichever comes first), loads
 * the preemption timer with the TSC distance to it (>> preempt_shift,
 * saturated to 32 bits), so the guest exits on time without an interrupt.
 * The LAPIC deadline stays as the backstop for the heap's nodes outside
 * the guest. Without the op or a deadline, does nothing.
 *
 * Context: this CPU, interrupts disabled, right before VM entry.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
int lapict_bm_guest_entry(struct lapict_bm_cpu *cpu);

/**
 * lapict_bm_stats_get() - counters of @cpu.
 * @cpu: the CPU.
 * @out: filled.
 * Context: owner CPU.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
int lapict_bm_stats_get(const struct lapict_bm_cpu *cpu,
                        struct lapict_bm_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_BAREMETAL_H */
