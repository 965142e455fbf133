// SPDX-License-Identifier: MIT
/*
 * Preloaded into QEMU by check_qemu (LD_PRELOAD): a host that refuses
 * every POSIX timer, as one out of signal queue entries does (EAGAIN), so
 * that the patched QEMU's vCPU timers take their other kick, the main
 * loop's, which no Linux host would otherwise make them take.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <time.h>

int timer_create(clockid_t clock, struct sigevent *sev, timer_t *id)
{
    (void)clock;
    (void)sev;
    (void)id;
    errno = EAGAIN;
    return -1;
}
