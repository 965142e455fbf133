/* SPDX-License-Identifier: MIT */
/*
 * Save and restore (live migration, snapshots). The blob is fixed-size,
 * little-endian, versioned and checksummed, and holds time relative to the
 * moment of saving, so it is valid on another host with another clock base.
 * It carries the TSC deadline itself, so restore order does not matter.
 *
 * docs/spec/state.md specifies the blob: the layout of each version, what
 * a save writes, what restore accepts and what it does, also into an
 * instance configured otherwise (min_period_ns, bus_hz, tsc_khz,
 * TSC-deadline support, advance and missed-tick policy), and the rules for
 * a new version. The behaviour it carries is docs/spec/timer.md section 8.
 */
#ifndef LAPICT_STATE_H
#define LAPICT_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "timer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Size, magic and layout version of the blob (docs/spec/state.md). */
#define LAPICT_STATE_SIZE 128u
#define LAPICT_STATE_MAGIC 0x5450414Cu
#define LAPICT_STATE_VERSION 1u

/**
 * lapict_state_save() - serialise the timer state as of now.
 * @t: the instance; not modified.
 * @buf: receives the blob, LAPICT_STATE_SIZE bytes.
 * @len: size of @buf; at least LAPICT_STATE_SIZE. Only the first
 *       LAPICT_STATE_SIZE bytes are written (docs/spec/state.md section 1,
 *       the rule lapict_state_restore() shares).
 *
 * Reads the host clock (now_ns, and guest_tsc if a TSC deadline is armed)
 * and calls no other op: nothing is injected, armed or reported, and the
 * instance is left exactly as it was. The blob describes the timer as
 * servicing at that instant would leave it: an expiry that is due but not
 * yet processed travels as pending (the missed-tick policy applied, a
 * periodic count-down on its next grid point), so the order in which the
 * host saves its interrupt controller and the timer does not matter: the
 * interrupt is in exactly one of them. See lapict_state_save_at().
 *
 * Context: owner thread, vCPU stopped.
 * Return: LAPICT_OK; LAPICT_E_INVAL for NULL; LAPICT_E_STATE_SIZE if @len
 * is below LAPICT_STATE_SIZE (nothing written).
 */
LAPICT_API int lapict_state_save(const struct lapict_timer *t, void *buf,
                                 size_t len);

/**
 * lapict_state_save_at() - lapict_state_save() at an instant the host gives.
 * @t: the instance; not modified.
 * @now_ns: host time of the save, at or after the instance's last call.
 * @guest_tsc: the guest TSC at @now_ns (used only for an armed deadline).
 * @buf: receives the blob, LAPICT_STATE_SIZE bytes.
 * @len: size of @buf; at least LAPICT_STATE_SIZE (as lapict_state_save()).
 *
 * Calls no op at all, so a host can save every vCPU's timer as of one
 * instant (the moment it stopped the VM) and from any context.
 *
 * Context: any thread, provided the owner thread is not using @t; vCPU
 * stopped.
 * Return: as lapict_state_save().
 */
LAPICT_API int lapict_state_save_at(const struct lapict_timer *t,
                                    uint64_t now_ns, uint64_t guest_tsc,
                                    void *buf, size_t len);

/**
 * lapict_state_restore() - load a blob into an initialised instance.
 * @t: an instance set up with lapict_init() (its config and ops are kept).
 *     The blob does not carry the vCPU's run state: if the destination vCPU
 *     is halted, call lapict_vcpu_blocking() before restoring, so that no
 *     hardware preemption timer is armed for a vCPU that is not running.
 * @buf: the blob (untrusted), at the start of the buffer.
 * @len: size of @buf; at least LAPICT_STATE_SIZE, the same rule as
 *       lapict_state_save(): the blob is the first LAPICT_STATE_SIZE bytes
 *       and nothing after them is read (docs/spec/state.md section 1). A
 *       buffer as a save filled it is always accepted.
 *
 * Every field is validated before anything changes. Count-downs resume
 * where they were at save (the gap does not count); a TSC deadline fires
 * when this host's guest TSC reaches it; host timers the instance had armed
 * are cancelled and re-armed.
 *
 * Restore never calls inject: an interrupt the blob holds pending, or an
 * expiry already due on this host (a deadline its guest TSC has passed),
 * is held pending (LVTT bit 12 reads 1). What the host must do: restore its
 * interrupt controller (IRR/ISR) and this blob, in either order, then treat
 * the timer as one whose interrupt it refused: call lapict_irq_window_open()
 * as soon as it can accept an interrupt, at once if it already can (before
 * the first guest entry), whether or not it ever refused one. That call
 * offers the pending interrupts (mask and vector read then); any the host
 * refuses stay pending until its next lapict_irq_window_open(). Each is
 * delivered exactly once; a host that skips the call gets them only with
 * the timer's next expiry.
 *
 * Accepted are only states the library produces, as docs/spec/state.md
 * section 4 lists them; anything else is LAPICT_E_STATE_FIELD. An expiry
 * injected ahead, say, is accepted only with its instant at most the
 * blob's advance_ns after this host's now, so the wait at the next guest
 * entry is bounded by the blob's advance.
 *
 * Context: owner thread, vCPU stopped.
 * Return: LAPICT_OK, or a LAPICT_E_STATE_* / LAPICT_E_INVAL code with the
 * instance unchanged: LAPICT_E_STATE_CONFIG also for an expiry injected
 * ahead on a host without a spin_until op (see above).
 */
LAPICT_API int lapict_state_restore(struct lapict_timer *t, const void *buf,
                                    size_t len);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_STATE_H */
