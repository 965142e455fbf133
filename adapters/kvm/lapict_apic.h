/* SPDX-License-Identifier: MIT */
/*
 * A portable userspace local APIC around the lapict timer, for one vCPU:
 * the register file (ID, version, TPR, PPR, EOI, LDR/DFR, SVR, ESR, the
 * LVTs, ICR), IRR/ISR, xAPIC MMIO and x2APIC MSR decoding with the #GP
 * rules, IA32_APIC_BASE, logical destinations and self IPIs (fixed,
 * lowest priority, NMI). The timer registers go to the core (lapict_*
 * register helpers). Nothing here knows KVM: the host reaches the model
 * through the calls below and is reached through struct lapict_apic_ops.
 *
 * Context: one owner thread (the vCPU's), as the timer it wraps.
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

#define LAPICT_APIC_OPS_VERSION 1u

/* What the model needs from its host. Grows only at the end. */
struct lapict_apic_ops {
    uint32_t version; /* LAPICT_APIC_OPS_VERSION */
    /* An NMI (ICR delivery mode NMI) reached this APIC. Optional (NULL:
     * counted only). Return: LAPICT_OK or a LAPICT_E_* code. */
    int (*nmi)(void *ctx);
    /* IA32_APIC_BASE took a new value (the host may mirror it, e.g. for
     * CPUID.1:EDX.APIC). Optional. Return: LAPICT_OK or LAPICT_E_*. */
    int (*base_changed)(void *ctx, uint64_t apic_base);
    /* An EOI: an interrupt the host holds back may fit now. Optional. */
    void (*eoi)(void *ctx);
};

struct lapict_apic_stats {
    uint64_t mmio, rdmsr, wrmsr, eois, nmis;
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
 * @ops: the host's calls; NULL for none.
 * @ctx: passed to @ops.
 *
 * Enabled at the default base (BSP), SVR software-disabled.
 *
 * Return: LAPICT_OK, LAPICT_E_INVAL (NULL @a or @timer), LAPICT_E_OPS.
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
