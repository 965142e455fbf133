/* SPDX-License-Identifier: MIT */
/*
 * Guest-visible timer registers, and x86 access helpers that decode xAPIC
 * MMIO offsets and x2APIC MSR numbers so that no adapter re-implements the
 * decoding. Values are untrusted guest input: every value is accepted and
 * handled per docs/spec/timer.md section 2 (stored bits kept, reserved bits
 * ignored).
 */
#ifndef LAPICT_REGS_H
#define LAPICT_REGS_H

#include <stdbool.h>
#include <stdint.h>

#include "export.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* xAPIC MMIO offsets (from the APIC base) of the timer registers. */
#define LAPICT_XAPIC_LVTT 0x320u
#define LAPICT_XAPIC_TMICT 0x380u
#define LAPICT_XAPIC_TMCCT 0x390u
#define LAPICT_XAPIC_TDCR 0x3E0u
/*
 * Spurious Interrupt Vector Register: the host's LAPIC model owns it, but
 * its bit 8 (APIC software enable) acts on the timer (lapict_svr_write()).
 */
#define LAPICT_XAPIC_SVR 0x0F0u
#define LAPICT_SVR_ENABLE 0x00000100u
/* x2APIC MSRs of the timer registers, and IA32_TSC_DEADLINE. */
#define LAPICT_MSR_X2APIC_LVTT 0x832u
#define LAPICT_MSR_X2APIC_TMICT 0x838u
#define LAPICT_MSR_X2APIC_TMCCT 0x839u
#define LAPICT_MSR_X2APIC_TDCR 0x83Eu
#define LAPICT_MSR_X2APIC_SVR 0x80Fu
#define LAPICT_MSR_TSC_DEADLINE 0x6E0u

/* LVTT fields. */
#define LAPICT_LVTT_VECTOR 0x000000FFu
#define LAPICT_LVTT_PENDING 0x00001000u
#define LAPICT_LVTT_MASK 0x00010000u
#define LAPICT_LVTT_MODE 0x00060000u
#define LAPICT_LVTT_ONESHOT 0x00000000u
#define LAPICT_LVTT_PERIODIC 0x00020000u
#define LAPICT_LVTT_TSC_DEADLINE 0x00040000u
#define LAPICT_LVTT_RESET 0x00010000u

/**
 * lapict_lvtt_read() - read LVT Timer.
 * @t: the instance.
 *
 * Context: owner thread. Processes the expiries due now first
 * (docs/spec/timer.md section 6: registers follow the clock, not the host
 * callbacks), so it can call the host's inject, report and timer ops, as
 * lapict_expire() does.
 * Return: the stored bits, with bit 12 set while an interrupt is pending.
 * 0 for a NULL @t.
 */
LAPICT_API uint32_t lapict_lvtt_read(struct lapict_timer *t);

/**
 * lapict_lvtt_write() - write LVT Timer.
 * @t: the instance.
 * @val: any 32-bit value; reserved bits and bit 12 are ignored.
 *
 * Mode 11 keeps the previous mode and applies the other fields (counted as
 * LAPICT_E_MODE in the statistics and reported). Switching into or out of
 * TSC-deadline mode disarms everything. While the APIC is software-disabled
 * the mask bit is forced.
 *
 * Context: owner thread.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_lvtt_write(struct lapict_timer *t, uint32_t val);

/**
 * lapict_tdcr_read() - read Divide Configuration.
 * @t: the instance.
 *
 * Context: owner thread. Calls no op.
 * Return: bits 3, 1, 0 as stored. 0 for a NULL @t.
 */
LAPICT_API uint32_t lapict_tdcr_read(struct lapict_timer *t);

/**
 * lapict_tdcr_write() - write Divide Configuration.
 * @t: the instance.
 * @val: any value; only bits 3, 1, 0 are stored.
 *
 * A running count-down keeps its current count and drains at the new rate.
 *
 * Context: owner thread.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_tdcr_write(struct lapict_timer *t, uint32_t val);

/**
 * lapict_tmict_read() - read Initial Count.
 * @t: the instance.
 *
 * Context: owner thread. Calls no op.
 * Return: the stored count; 0 in TSC-deadline mode or for a NULL @t.
 */
LAPICT_API uint32_t lapict_tmict_read(struct lapict_timer *t);

/**
 * lapict_tmict_write() - write Initial Count: start or stop the count-down.
 * @t: the instance.
 * @val: the count; 0 stops the timer. Ignored in TSC-deadline mode.
 *
 * Context: owner thread.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_tmict_write(struct lapict_timer *t, uint32_t val);

/**
 * lapict_tmcct_read() - read Current Count, computed from the clock.
 * @t: the instance.
 *
 * Context: owner thread. Processes the expiries due now first
 * (docs/spec/timer.md section 6: registers follow the clock, not the host
 * callbacks), so it can call the host's inject, report and timer ops, as
 * lapict_expire() does.
 * Return: the count; 0 when stopped, in TSC-deadline mode, or NULL @t.
 */
LAPICT_API uint32_t lapict_tmcct_read(struct lapict_timer *t);

/**
 * lapict_tsc_deadline_read() - read IA32_TSC_DEADLINE.
 * @t: the instance.
 *
 * Context: owner thread. Processes the expiries due now first
 * (docs/spec/timer.md section 6: registers follow the clock, not the host
 * callbacks), so it can call the host's inject, report and timer ops, as
 * lapict_expire() does.
 * Return: the armed deadline; 0 after its expiry, when disarmed, outside
 * TSC-deadline mode, when the configuration does not offer the mode (the
 * MSR does not exist: lapict_msr_read() gives LAPICT_E_GP), or for a NULL
 * @t.
 */
LAPICT_API uint64_t lapict_tsc_deadline_read(struct lapict_timer *t);

/**
 * lapict_tsc_deadline_write() - write IA32_TSC_DEADLINE.
 * @t: the instance.
 * @val: the guest TSC value to fire at; 0 disarms. Ignored outside
 * TSC-deadline mode. A deadline already reached fires at once.
 *
 * Without TSC-deadline support in the configuration (tsc_deadline false,
 * CPUID.01H:ECX.TSC_Deadline[bit 24] clear) the MSR does not exist, and
 * hardware raises #GP for any access to it: the write changes nothing and
 * returns LAPICT_E_GP, for the host to inject #GP(0) (docs/spec/timer.md
 * section 4).
 *
 * Context: owner thread.
 * Return: LAPICT_OK; LAPICT_E_GP without TSC-deadline support;
 * LAPICT_E_INVAL.
 */
LAPICT_API int lapict_tsc_deadline_write(struct lapict_timer *t, uint64_t val);

/**
 * lapict_svr_write() - tell the timer the APIC software-enable state.
 * @t: the instance.
 * @enabled: SVR bit 8.
 *
 * Disabling masks LVTT; re-enabling does not unmask. A host that routes
 * SVR writes through lapict_xapic_write() or lapict_msr_write() gets this
 * call made for it.
 *
 * Context: owner thread.
 * Return: LAPICT_OK or LAPICT_E_INVAL.
 */
LAPICT_API int lapict_svr_write(struct lapict_timer *t, bool enabled);

/**
 * lapict_xapic_read() - 32-bit xAPIC MMIO read at @offset from the base.
 * @t: the instance.
 * @offset: offset within the 4 KiB APIC page.
 * @val: receives the value.
 *
 * Context: owner thread. Processes the expiries due now first
 * (docs/spec/timer.md section 6: registers follow the clock, not the host
 * callbacks), so it can call the host's inject, report and timer ops, as
 * lapict_expire() does.
 * Return: LAPICT_OK; LAPICT_E_NOREG if @offset is not a timer register (the
 * adapter handles it); LAPICT_E_INVAL for NULL pointers.
 */
LAPICT_API int lapict_xapic_read(struct lapict_timer *t, uint32_t offset,
                                 uint32_t *val);

/**
 * lapict_xapic_write() - 32-bit xAPIC MMIO write at @offset from the base.
 * @t: the instance.
 * @offset: offset within the 4 KiB APIC page.
 * @val: the value. Writes to TMCCT are ignored, as on hardware.
 *
 * A host can route every APIC write through here and handle those that
 * return LAPICT_E_NOREG itself. The SVR (0xF0) is one of those, but its
 * software-enable bit 8 is applied first, as lapict_svr_write() does (a
 * disable masks LVTT): such a host needs no lapict_svr_write() call of its
 * own, and still stores the SVR in its own model.
 *
 * Context: owner thread.
 * Return: LAPICT_OK; LAPICT_E_NOREG if not a timer register (for the SVR:
 * after its bit 8 was applied); LAPICT_E_INVAL.
 */
LAPICT_API int lapict_xapic_write(struct lapict_timer *t, uint32_t offset,
                                  uint32_t val);

/**
 * lapict_msr_read() - RDMSR of an x2APIC timer MSR or IA32_TSC_DEADLINE.
 * @t: the instance.
 * @msr: 0x832, 0x838, 0x839, 0x83E or 0x6E0.
 * @val: receives the value (untouched on error).
 *
 * IA32_TSC_DEADLINE does not exist without TSC-deadline support in the
 * configuration: LAPICT_E_GP, for the host to inject #GP(0).
 *
 * Context: owner thread. Processes the expiries due now first
 * (docs/spec/timer.md section 6: registers follow the clock, not the host
 * callbacks), so it can call the host's inject, report and timer ops, as
 * lapict_expire() does.
 * Return: LAPICT_OK; LAPICT_E_GP (IA32_TSC_DEADLINE not offered);
 * LAPICT_E_NOREG for other MSRs; LAPICT_E_INVAL.
 */
LAPICT_API int lapict_msr_read(struct lapict_timer *t, uint32_t msr,
                               uint64_t *val);

/**
 * lapict_msr_write() - WRMSR of an x2APIC timer MSR or IA32_TSC_DEADLINE.
 * @t: the instance.
 * @msr: 0x832, 0x838, 0x839, 0x83E or 0x6E0.
 * @val: the value.
 *
 * x2APIC rules: bits 63:32 set in an x2APIC register, or any write to the
 * read-only TMCCT, is refused with LAPICT_E_GP and changes nothing; the
 * adapter injects #GP(0). The SVR (0x80F) is handled as by
 * lapict_xapic_write(): bit 8 applied, then LAPICT_E_NOREG for the host to
 * store it (LAPICT_E_GP, nothing applied, with bits 63:32 set).
 * IA32_TSC_DEADLINE is written as by lapict_tsc_deadline_write(), also
 * LAPICT_E_GP when the configuration does not offer TSC-deadline mode.
 *
 * Context: owner thread.
 * Return: LAPICT_OK; LAPICT_E_GP; LAPICT_E_NOREG for other MSRs (and the
 * SVR, see above); LAPICT_E_INVAL.
 */
LAPICT_API int lapict_msr_write(struct lapict_timer *t, uint32_t msr,
                                uint64_t val);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_REGS_H */
