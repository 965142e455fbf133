/* SPDX-License-Identifier: MIT */
/*
 * Save and restore (live migration, snapshots). The blob is fixed-size,
 * little-endian, versioned and checksummed, and holds time relative to the
 * moment of saving, so it is valid on another host with another clock base.
 * It carries the TSC deadline itself, so restore order does not matter.
 *
 * Layout of version 1 (all little-endian, offsets in bytes):
 *   0 magic "LAPT" (0x5450414C)  4 version u16  6 size u16
 *   8 lvtt u32  12 tdcr u32  16 tmict u32  20 flags u32
 *  24 elapsed_ns u64 (now - anchor)  32 e_tick u64  40 deadline_tsc u64
 *  48 pending u32  52 advance_ns u32  56 bus_hz u64
 *  64 adaptive latency estimate u32  68 its mean deviation u32
 *  72 clamp_period_ns u32: while clamped (flag 3), the min_period_ns the
 *     source clamped with (N ticks last exactly that long), else 0
 *  76 expiries, 80 masked, 84 coalesced, 88 dropped, 92 illegal vector,
 *     u32 each: what the save counted when it settled a due expiry
 *     (restore adds them to the destination's, since the unchanged source
 *     never counts them), else 0. An expiry with an illegal vector (0-15,
 *     unmasked) is dropped when it happens, window open or not, as
 *     servicing drops it; a non-zero count at 92 makes restore report
 *     LAPICT_E_VECTOR once, the report the source would have made
 *  96 adaptive tuner's run of consecutive outliers u32: bits 0-6 their
 *     number (below the reseed length of their side), bit 7 set when they
 *     were late; 0 without a run
 *  100..123 reserved, zero  124 CRC-32 (IEEE) of bytes 0..123
 * flags: bit 0 APIC software-enabled, 1 count-down active, 2 count-down
 * expiry unprocessed, 3 clamped, 4 deadline armed, 5 next expiry already
 * injected ahead (advance), 6 tuner estimate valid; others reserved, zero.
 * elapsed_ns and e_tick are 0 unless the count-down is active; the deadline
 * is 0 unless armed. With flag 5, advance_ns is at least the time left to
 * the instant of the expiry injected ahead (restore refuses a pre-injection
 * further away than that), also when saved on a host whose own advance is
 * smaller.
 *
 * An expiry injected ahead (flag 5) is in the guest's IRR, which travels
 * with the interrupt controller. It keeps its own wait: the destination's
 * next lapict_before_guest_entry() waits for its instant even when the
 * destination's advance is smaller or off, so the guest never sees it
 * early, and it is never injected again. A destination without a spin_until
 * op cannot wait: restore refuses such a blob with LAPICT_E_STATE_CONFIG,
 * instance unchanged (resume the source past the instant and save again).
 *
 * The tuner's state (estimate, deviation, outlier run, advance) travels
 * whole, so a save and restore at one instant leaves the adaptive advance
 * as it was. A latency sample in flight (an expiry injected since the last
 * guest entry) does not: measured after a migration gap it would measure
 * the gap, not the host.
 *
 * Restore into another configuration:
 * - min_period_ns: a periodic count-down whose clamp is the same on both
 *   sides (not clamped, or clamped with the same period) resumes exactly.
 *   Otherwise the clamp starts, stops or changes period at the restore, and
 *   as for any clamp change (TIMER.md section 3) the current count is kept
 *   and drains on this host's clock, re-anchored at the restore (the
 *   fraction of the tick in progress is dropped). So TMCCT reads the same
 *   right after the restore, and the interrupt comes when it reaches 0 on
 *   the new clock. If that expiry was already injected ahead (flag 5),
 *   moving it would change the instant of an interrupt the guest already
 *   has: LAPICT_E_STATE_CONFIG, instance unchanged (resume the source past
 *   the instant and save again).
 * - bus_hz: the blob's must equal this instance's, else
 *   LAPICT_E_STATE_CONFIG (the guest's view of the timer rate would change).
 * - tsc_khz: not in the blob, and need not match. A deadline is a guest TSC
 *   value: it fires when this host's guest TSC reaches it, at this host's
 *   rate, so the host keeps the guest TSC continuous (offset or scaled) as
 *   any migration must. Count-downs run on the bus clock and do not use it.
 * - TSC-deadline mode where this instance does not offer it:
 *   LAPICT_E_STATE_CONFIG.
 * - the advance, missed-tick policy and catch-up bound are this instance's;
 *   a pending count above its catch-up bound is cut to it (counted as
 *   coalesced or dropped); the blob's tuned advance is taken only by an
 *   adaptive instance, at most its advance_max_ns.
 *
 * Versions. LAPICT_STATE_VERSION is 1: the layout above, the first the
 * library has released (the fields at 92 and 96 took reserved bytes under
 * the third rule below: a reader without them refuses exactly the blobs
 * whose fields are non-zero). The rules for a change:
 * - a released version's layout and meaning never change. Any change to
 *   either (a field moved, resized or read differently, a flag bit given a
 *   meaning, another size) is a new version, LAPICT_STATE_VERSION + 1;
 *   a field added in reserved bytes under the third rule is not;
 * - lapict_state_save() writes the newest version only;
 *   lapict_state_restore() keeps loading every released version, mapping
 *   an older blob to the state it described, or refusing it with
 *   LAPICT_E_STATE_VERSION only where that state cannot exist any more
 *   (say so here);
 * - a new field takes reserved bytes and is zero when it carries nothing,
 *   so that a reader that does not know it refuses exactly the blobs that
 *   use it (reserved bytes must be zero); flag bits are never reused;
 * - each version N has golden blobs in tests/state_golden_vN.h, captured
 *   in every state the fuzzer's oracle knows, never regenerated; the tests
 *   restore every version's blobs and check what they restore to, and fail
 *   when save no longer writes the current version's blobs (a format
 *   change that was not made a new version).
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

/* Size, magic and layout version of the blob described above. */
#define LAPICT_STATE_SIZE 128u
#define LAPICT_STATE_MAGIC 0x5450414Cu
#define LAPICT_STATE_VERSION 1u

/**
 * lapict_state_save() - serialise the timer state as of now.
 * @t: the instance; not modified.
 * @buf: receives LAPICT_STATE_SIZE bytes.
 * @len: size of @buf; at least LAPICT_STATE_SIZE.
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
 * is too small.
 */
LAPICT_API int lapict_state_save(const struct lapict_timer *t, void *buf,
                                 size_t len);

/**
 * lapict_state_save_at() - lapict_state_save() at an instant the host gives.
 * @t: the instance; not modified.
 * @now_ns: host time of the save, at or after the instance's last call.
 * @guest_tsc: the guest TSC at @now_ns (used only for an armed deadline).
 * @buf: receives LAPICT_STATE_SIZE bytes.
 * @len: size of @buf; at least LAPICT_STATE_SIZE.
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
 * @buf: the blob (untrusted).
 * @len: its length; must be exactly LAPICT_STATE_SIZE.
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
 * Accepted are only states the library produces (TIMER.md section 8,
 * "consistency"): a count-down is active exactly when its expiry is
 * unprocessed (flags 1 and 2 together); clamped only while periodic and
 * active; a deadline armed only in TSC-deadline mode, with a non-zero
 * deadline; an expiry injected ahead (flag 5) only with an armed timer of
 * the LVTT mode, nothing pending, and its instant at most the blob's
 * advance_ns after this host's now (for a deadline: estimated from this
 * host's guest TSC, one TSC period of slack), so the wait at the next
 * guest entry is bounded by the blob's advance; an illegal-vector count
 * only with an illegal, unmasked vector and nothing pending; an outlier
 * run only with a tuner estimate. Anything else is LAPICT_E_STATE_FIELD.
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
