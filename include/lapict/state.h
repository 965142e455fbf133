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
 *  72..123 reserved, zero  124 CRC-32 (IEEE) of bytes 0..123
 * flags: bit 0 APIC software-enabled, 1 count-down active, 2 count-down
 * expiry unprocessed, 3 clamped, 4 deadline armed, 5 next expiry already
 * injected ahead (advance), 6 tuner estimate valid; others reserved, zero.
 * elapsed_ns and e_tick are 0 unless the count-down is active; the deadline
 * is 0 unless armed.
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
 * lapict_state_save() - serialise the timer state.
 * @t: the instance.
 * @buf: receives LAPICT_STATE_SIZE bytes.
 * @len: size of @buf; at least LAPICT_STATE_SIZE.
 *
 * Due expiries are processed first, so the blob describes the timer as the
 * guest would observe it now. The instance keeps running unchanged.
 *
 * Context: owner thread, vCPU stopped.
 * Return: LAPICT_OK; LAPICT_E_INVAL for NULL; LAPICT_E_STATE_SIZE if @len
 * is too small.
 */
LAPICT_API int lapict_state_save(struct lapict_timer *t, void *buf,
                                 size_t len);

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
 * when this host's guest TSC reaches it; a pending interrupt is delivered
 * once; host timers the instance had armed are cancelled and re-armed.
 *
 * Context: owner thread, vCPU stopped.
 * Return: LAPICT_OK, or a LAPICT_E_STATE_* / LAPICT_E_INVAL code with the
 * instance unchanged.
 */
LAPICT_API int lapict_state_restore(struct lapict_timer *t, const void *buf,
                                    size_t len);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_STATE_H */
