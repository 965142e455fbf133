/* SPDX-License-Identifier: MIT */
/*
 * lapict's portable local-APIC model: one APIC, around the lapict timer,
 * for a hypervisor that emulates the LAPIC itself. Nothing here knows KVM
 * or an OS: the KVM adapter (lapict-kvm(3)) uses it on KVM without the
 * in-kernel irqchip, and a bare-metal hypervisor links it freestanding
 * beside lapict (it needs no C library). The host reaches the model
 * through the calls below and is reached through struct lapict_apic_ops.
 * One model is one vCPU's APIC; a VMM with more vCPUs has one model each
 * and routes the IPIs between them (the ipi op).
 *
 * Modelled: the register file (ID, version 0x00050014, TPR, PPR, EOI,
 * LDR/DFR, SVR whose software disable masks every LVT, ESR latched on
 * write, the CMCI/thermal/perf/LINT0/LINT1/error LVTs stored, ICR with
 * its delivery status always idle), IRR/ISR and priority, xAPIC MMIO and
 * x2APIC MSR decoding with the #GP rules of reserved, read-only and
 * write-only registers, IA32_APIC_BASE (relocation, the enable/x2APIC
 * transition rules, EXTD reserved without x2APIC in CPUID, the bits from
 * MAXPHYADDR up reserved, reset on disable), IA32_TSC_DEADLINE reading 0
 * and dropping writes while the APIC is disabled. The timer registers are
 * the core's (lapict-regs(3)).
 *
 * IPIs ("Interrupt Command Register (ICR)"): this APIC's own part of an
 * IPI is delivered here: fixed and lowest-priority interrupts to IRR,
 * NMI through the nmi op, when the shorthand is self or all including
 * self, or the destination names this APIC (its physical ID, the
 * broadcast ID 0xFF or, in x2APIC mode, 0xFFFFFFFF, a flat or cluster
 * logical destination that has its bit, an x2APIC cluster destination).
 * Everything else goes to the ipi op, decoded (struct lapict_apic_ipi),
 * for the VMM to route: an IPI whose destination may name another APIC
 * (another physical ID, the broadcast ID, all including or excluding
 * self, any xAPIC logical destination, an x2APIC logical one other than
 * this APIC's own), and every SMI, INIT, start-up (SIPI) or reserved
 * delivery mode, to this APIC too. A lowest-priority IPI for more than
 * this APIC is not delivered here when there is an ipi op: the VMM picks
 * the one APIC that takes it. Without an ipi op (NULL, or an ops table of
 * version 1) the model delivers this APIC's part as above and counts the
 * rest in st.ipis_unrouted: nothing is routed, nothing is dropped
 * unnoticed. The x2APIC SELF IPI register is a fixed IPI to this APIC.
 *
 * Not modelled, the host's to do or to go without:
 *
 *   - other CPUs: routing, arbitration among APICs (APR reads 0),
 *     focus processor checks, the send-accept and receive-accept errors;
 *     a logical destination is matched against this APIC's LDR only
 *   - INIT, start-up and SMI: never acted on here, only passed to the
 *     ipi op (INIT level de-assert, INIT with level 0 and trigger level,
 *     too, for the VMM to ignore as processors since the Pentium 4 do);
 *     lapict_apic_init() is power-on, not an INIT's reset
 *   - refusing the ICR combinations the SDM's tables of valid
 *     combinations call invalid (lowest priority, NMI, INIT, SMI, start-up
 *     with the self or all-including-self shorthand): they are taken as
 *     written (a self NMI is delivered here, a self INIT routed)
 *   - level-triggered interrupts: no TMR (reads 0), IPIs with trigger
 *     mode level are delivered edge-triggered, as the xAPIC issues them;
 *     an EOI clears the highest ISR bit and calls the eoi op
 *     without the vector, so no EOI reaches an I/O APIC, and there is no
 *     directed EOI or EOI-broadcast suppression
 *   - the LINT0/LINT1 pins, ExtINT (an 8259 PIC behind LINT0) and the
 *     thermal, performance-counter, CMCI and error interrupt sources: the
 *     LVTs are stored, nothing raises them
 *   - the sender's ESR bits (Send Illegal Vector, send accept): an IPI
 *     with a vector below 16 is delivered or routed as written; the APIC
 *     that receives it sets Receive Illegal Vector
 *   - a TPR lowered by a guest CR8 write without an exit: the host syncs
 *     it (lapict_apic_set_tpr()) at its next exit
 *
 * Context: one owner thread (the vCPU's), as the timer it wraps. Another
 * vCPU's thread never calls into this model: an IPI for it is queued by
 * the VMM and raised by its own thread (lapict_apic_set_irq()).
 */
#ifndef LAPICT_APIC_H
#define LAPICT_APIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <lapict/lapict.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LAPICT_APIC_BASE_DEFAULT 0xFEE00000u
#define LAPICT_APIC_MSR_BASE 0x1Bu
/* IA32_APIC_BASE bits. */
#define LAPICT_APIC_BASE_BSP 0x100u
#define LAPICT_APIC_BASE_EXTD 0x400u
#define LAPICT_APIC_BASE_EN 0x800u
/* Version register: 0x14 (integrated APIC), max LVT index 5. */
#define LAPICT_APIC_VERSION 0x00050014u
/* ESR bits ("Error Handling"). */
#define LAPICT_APIC_ESR_SEND_ILLEGAL 0x20u
#define LAPICT_APIC_ESR_RECV_ILLEGAL 0x40u

/* ICR delivery modes ("Interrupt Command Register (ICR)"); 3 and 7 are
 * reserved. */
#define LAPICT_APIC_DM_FIXED 0u
#define LAPICT_APIC_DM_LOWEST 1u
#define LAPICT_APIC_DM_SMI 2u
#define LAPICT_APIC_DM_NMI 4u
#define LAPICT_APIC_DM_INIT 5u
#define LAPICT_APIC_DM_STARTUP 6u
/* ICR destination shorthands. */
#define LAPICT_APIC_SH_NONE 0u
#define LAPICT_APIC_SH_SELF 1u
#define LAPICT_APIC_SH_ALL 2u    /* all including self */
#define LAPICT_APIC_SH_OTHERS 3u /* all excluding self */

/*
 * An IPI as the guest wrote it into the ICR, decoded for the ipi op. The
 * fields are the ICR's, so that the VMM routes with the hardware's rules
 * and needs no ICR layout of its own. The model fills it in; it grows only
 * at the end, and an op reads only the fields of the LAPICT_APIC_OPS_VERSION
 * it was written for.
 */
struct lapict_apic_ipi {
    /* The destination field: ICR[63:56] in xAPIC mode (0xFF: broadcast),
     * ICR[63:32] in x2APIC mode (0xFFFFFFFF: broadcast); a physical APIC
     * ID or a logical destination (@logical). Ignored by the hardware
     * when @shorthand is not LAPICT_APIC_SH_NONE. */
    uint32_t dest;
    /* ICR[7:0]: the vector (fixed, lowest priority), the start-up page
     * (SIPI); ignored by the other modes. */
    uint8_t vector;
    /* ICR[10:8]: LAPICT_APIC_DM_*. */
    uint8_t mode;
    /* ICR[19:18]: LAPICT_APIC_SH_*. */
    uint8_t shorthand;
    /* ICR[11]: logical destination mode; false: physical. */
    bool logical;
    /* ICR[14]: level assert; false only for INIT level de-assert. */
    bool level;
    /* ICR[15]: trigger mode level; false: edge. */
    bool trigger_level;
    /* Sent in x2APIC mode: @dest has 32 bits, a logical @dest is an
     * x2APIC cluster (31:16) and member bit (15:0). */
    bool x2apic;
    /* This APIC's own part is done: the shorthand or @dest included it
     * and the model delivered it (fixed to IRR, NMI through the nmi op).
     * The VMM routes to the other APICs only. False for lowest priority,
     * SMI, INIT, start-up and reserved modes, whoever they name. */
    bool delivered_here;
};

#define LAPICT_APIC_OPS_VERSION 2u

/* What the model needs from its host. Grows only at the end. */
struct lapict_apic_ops {
    /* LAPICT_APIC_OPS_VERSION as the host was built with: 1 has no ipi
     * op; the model reads no op beyond its table's version. */
    uint32_t version;
    /* An NMI (ICR delivery mode NMI) reached this APIC. Optional (NULL:
     * counted only). Return: LAPICT_OK or a LAPICT_E_* code. */
    int (*nmi)(void *ctx);
    /* IA32_APIC_BASE took a new value (the host may mirror it, e.g. for
     * CPUID.1:EDX.APIC). Optional. Return: LAPICT_OK or LAPICT_E_*. */
    int (*base_changed)(void *ctx, uint64_t apic_base);
    /* An EOI: an interrupt the host holds back may fit now. Optional. */
    void (*eoi)(void *ctx);
    /*
     * Version 2. An IPI this APIC does not complete alone (the
     * description above says which): the VMM routes it to the other
     * vCPUs' models, on their own threads (lapict_apic_dest_match() tells
     * whether a model's destination matches, lapict_apic_set_irq() raises
     * a fixed interrupt there), and acts on INIT, start-up and SMI itself.
     * Called once the ICR holds the write; may call into this model
     * (e.g. lapict_apic_set_irq() when it picks this APIC for a lowest
     * priority IPI). Optional: without it the IPI is counted in
     * st.ipis_unrouted. Return: LAPICT_OK or a LAPICT_E_* code, returned
     * by the access that wrote the ICR (which is complete).
     */
    int (*ipi)(void *ctx, const struct lapict_apic_ipi *ipi);
};

struct lapict_apic_stats {
    uint64_t mmio, rdmsr, wrmsr, eois, nmis;
    /* IPIs handed to the ipi op, and those that needed it and found no
     * ipi op (the description above: their other destinations, or their
     * mode, were left undone). */
    uint64_t ipis_routed, ipis_unrouted;
};

/* One vCPU's LAPIC; caller-allocated, fields private to apic.c. */
struct lapict_apic {
    struct lapict_timer *timer;
    const struct lapict_apic_ops *ops;
    void *ctx;
    uint64_t apic_base; /* IA32_APIC_BASE */
    uint32_t id, tpr, ldr, dfr, svr, esr, esr_pending, icr_lo, icr_hi;
    uint32_t lvt_cmci, lvt_thermal, lvt_perf, lvt_lint0, lvt_lint1, lvt_err;
    uint32_t irr[8], isr[8];
    bool x2apic_absent; /* CPUID lacks x2APIC: EXTD reserved */
    uint8_t maxphyaddr; /* physical-address bits; 0: 36 */
    struct lapict_apic_stats st;
};

/**
 * lapict_apic_init() - power-on state around an initialised timer.
 * @a: caller-allocated.
 * @timer: the vCPU's lapict timer (lapict_init() done; its inject op
 * calls lapict_apic_set_irq()).
 * @ops: the host's calls, a table of version 1 or later (only version 2
 * has the ipi op); NULL for none. Kept, not copied: it must outlive @a.
 * @ctx: passed to @ops.
 *
 * Enabled at the default base (BSP), SVR software-disabled, statistics 0.
 *
 * Return: LAPICT_OK, LAPICT_E_INVAL (NULL @a or @timer), LAPICT_E_OPS
 * (@ops of version 0).
 */
int lapict_apic_init(struct lapict_apic *a, struct lapict_timer *timer,
                     const struct lapict_apic_ops *ops, void *ctx);

/**
 * lapict_apic_set_cpuid() - the CPU model the LAPIC enforces.
 * @a: the LAPIC.
 * @x2apic: CPUID.1:ECX[21]; without it IA32_APIC_BASE.EXTD is reserved.
 * @maxphyaddr: CPUID.80000008H:EAX[7:0], 32-52 (else 36 is kept): the
 * IA32_APIC_BASE bits from it up are reserved.
 */
void lapict_apic_set_cpuid(struct lapict_apic *a, bool x2apic,
                           uint8_t maxphyaddr);

/**
 * lapict_apic_mmio() - an xAPIC MMIO access at @gpa.
 * @a: the LAPIC.
 * @gpa: guest physical address.
 * @data: bytes read or written (little-endian).
 * @len: 1, 2, 4 or 8.
 * @write: direction.
 *
 * Return: LAPICT_OK (handled), LAPICT_E_NOREG (not the APIC page), or an
 * ops error (the access itself is complete).
 */
int lapict_apic_mmio(struct lapict_apic *a, uint64_t gpa, uint8_t *data,
                     uint32_t len, bool write);

/**
 * lapict_apic_rdmsr() - RDMSR of an APIC MSR (0x1B, 0x6E0, 0x800-0x8FF).
 * @a: the LAPIC.
 * @msr: the index.
 * @val: receives the value.
 *
 * Return: LAPICT_OK, LAPICT_E_GP (inject #GP), LAPICT_E_NOREG (not an
 * APIC MSR).
 */
int lapict_apic_rdmsr(struct lapict_apic *a, uint32_t msr, uint64_t *val);

/**
 * lapict_apic_wrmsr() - WRMSR of an APIC MSR.
 * @a: the LAPIC.
 * @msr: the index.
 * @val: the value.
 *
 * Return: LAPICT_OK, LAPICT_E_GP, LAPICT_E_NOREG, or an ops error (the
 * write itself is done).
 */
int lapict_apic_wrmsr(struct lapict_apic *a, uint32_t msr, uint64_t val);

/**
 * lapict_apic_set_irq() - raise a fixed interrupt (IRR).
 * @a: the LAPIC.
 * @vector: 16-255; 0-15 set ESR "Receive Illegal Vector" instead.
 *
 * Return: true if set, false if already pending or illegal.
 */
bool lapict_apic_set_irq(struct lapict_apic *a, uint8_t vector);

/**
 * lapict_apic_dest_match() - does an IPI's destination field name @a.
 * @a: the LAPIC of a candidate destination (any vCPU's; read only).
 * @logical: logical destination mode (struct lapict_apic_ipi.logical).
 * @dest: the destination field (struct lapict_apic_ipi.dest).
 *
 * For a VMM that routes the ipi op's IPIs to its vCPUs' models: the rules
 * of @a's mode ("Physical Destination Mode", "Logical Destination Mode").
 * xAPIC: the low 8 bits of @dest, 0xFF the broadcast ID; physical mode
 * matches the APIC ID, logical mode the LDR in the flat or cluster model
 * of DFR. x2APIC: 0xFFFFFFFF is the broadcast ID; physical mode matches
 * the x2APIC ID, logical mode the cluster (31:16) and member bit (15:0)
 * derived from it. Shorthands are the VMM's to apply (self: the sender;
 * all including self: every APIC; all excluding self: all but the
 * sender), @dest then means nothing.
 *
 * Context: the caller keeps @a from changing meanwhile (its vCPU thread,
 * or the vCPU stopped).
 * Return: true if @a is among the destinations.
 */
bool lapict_apic_dest_match(const struct lapict_apic *a, bool logical,
                            uint32_t dest);

/**
 * lapict_apic_error() - latch ESR bits (seen at the next ESR write).
 * @a: the LAPIC.
 * @bits: LAPICT_APIC_ESR_*.
 */
void lapict_apic_error(struct lapict_apic *a, uint32_t bits);

/**
 * lapict_apic_deliverable() - the vector to inject now, if any.
 * @a: the LAPIC.
 *
 * Return: the highest IRR vector whose priority class is above PPR's, or
 * -1 (none, or blocked by TPR/ISR until an EOI or TPR write).
 */
int lapict_apic_deliverable(const struct lapict_apic *a);

/**
 * lapict_apic_ack() - the CPU took @vector: IRR to ISR.
 * @a: the LAPIC.
 * @vector: what lapict_apic_deliverable() returned.
 */
void lapict_apic_ack(struct lapict_apic *a, uint8_t vector);

/** lapict_apic_irr_pending() - any IRR bit set (deliverable or not). */
bool lapict_apic_irr_pending(const struct lapict_apic *a);

/** lapict_apic_irr_test() - is @vector's IRR bit set. */
bool lapict_apic_irr_test(const struct lapict_apic *a, uint8_t vector);

/** lapict_apic_tpr() / lapict_apic_set_tpr() - TPR (CR8 is TPR[7:4]). */
uint32_t lapict_apic_tpr(const struct lapict_apic *a);
void lapict_apic_set_tpr(struct lapict_apic *a, uint32_t tpr);

/** lapict_apic_x2apic() - enabled in x2APIC mode. */
bool lapict_apic_x2apic(const struct lapict_apic *a);

/*
 * Save and restore of the model (live migration, snapshots): everything
 * but the timer, which has its own blob (lapict/state.h). Fixed size,
 * little-endian, versioned, CRC-32 (IEEE) checked. Version 1, offsets:
 *   0 magic "LAPA" (0x4150414C)  4 version u16  6 size u16
 *   8 IA32_APIC_BASE u64  16 id  20 tpr  24 ldr  28 dfr  32 svr  36 esr
 *  40 esr_pending  44 icr_lo  48 icr_hi  52 LVT CMCI  56 thermal  60 perf
 *  64 LINT0  68 LINT1  72 error (u32 each)  76 irr[8]  108 isr[8] (u32,
 *  vector 32*i+b is bit b of word i)  140..155 reserved, zero
 *  156 CRC-32 of bytes 0..155.
 * A released layout never changes; a change is a new version, and restore
 * keeps loading the old ones (the rules of lapict's docs/spec/state.md).
 */
#define LAPICT_APIC_STATE_SIZE 160u
#define LAPICT_APIC_STATE_MAGIC 0x4150414Cu
#define LAPICT_APIC_STATE_VERSION 1u

/**
 * lapict_apic_save() - serialise the model (not its timer).
 * @a: the LAPIC; not modified.
 * @buf: receives LAPICT_APIC_STATE_SIZE bytes.
 * @len: size of @buf.
 *
 * The order against lapict_state_save() of the timer does not matter: a
 * timer interrupt is either in IRR here or pending in the timer's blob.
 *
 * Return: LAPICT_OK, LAPICT_E_INVAL (NULL), LAPICT_E_STATE_SIZE.
 */
int lapict_apic_save(const struct lapict_apic *a, void *buf, size_t len);

/**
 * lapict_apic_state_check() - would lapict_apic_restore() accept @buf.
 * @a: the destination LAPIC (its CPU model decides the reserved bits).
 * @buf: the blob (untrusted).
 * @len: its length; exactly LAPICT_APIC_STATE_SIZE.
 *
 * Accepted are only states the model can reach: every register within
 * its stored bits (reserved bits zero, DFR bits 27:0 ones, LVTs masked
 * while SVR software-disables), IA32_APIC_BASE valid for this CPU model
 * (reserved bits, EXTD only with x2APIC in CPUID and with EN, the BSP
 * flag of this CPU), the xAPIC ID within 8 bits, the ICR's destination
 * within 8 bits outside x2APIC mode, no vector 0-15 in IRR or ISR.
 *
 * Return: LAPICT_OK, LAPICT_E_INVAL, LAPICT_E_STATE_SIZE, _MAGIC,
 * _VERSION, _CHECKSUM, _FIELD, or _CONFIG (the BSP flag differs).
 */
int lapict_apic_state_check(const struct lapict_apic *a, const void *buf,
                            size_t len);

/**
 * lapict_apic_restore() - load a blob saved by lapict_apic_save().
 * @a: the LAPIC (initialised; its timer, ops, CPU model and statistics
 * are kept).
 * @buf: the blob (untrusted).
 * @len: its length.
 *
 * Validates as lapict_apic_state_check(); on an error nothing changes.
 * The timer is not touched (lapict_state_restore() does it). A base that
 * differs from the one before is reported through the base_changed op.
 *
 * Return: LAPICT_OK, a lapict_apic_state_check() code (state unchanged),
 * or the base_changed op's error (the state is restored).
 */
int lapict_apic_restore(struct lapict_apic *a, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_APIC_H */
