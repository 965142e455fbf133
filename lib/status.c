/* SPDX-License-Identifier: MIT */
#include "internal.h"

const char *lapict_strerror(int status)
{
    switch (status) {
    case LAPICT_OK:
        return "success";
    case LAPICT_E_INVAL:
        return "invalid argument or uninitialised instance";
    case LAPICT_E_OPS:
        return "ops table too old or missing a mandatory op";
    case LAPICT_E_BUS_HZ:
        return "bus_hz out of range (1000 .. 10^10)";
    case LAPICT_E_TSC_KHZ:
        return "tsc_khz not stated (0) with TSC-deadline offered, or out of "
               "range (1 .. 10^8)";
    case LAPICT_E_MIN_PERIOD:
        return "min_period_ns out of range (0 .. 10^9)";
    case LAPICT_E_ADVANCE:
        return "advance mode or bounds invalid";
    case LAPICT_E_MISSED:
        return "missed-tick policy or catch-up bound invalid";
    case LAPICT_E_NOREG:
        return "not a timer register";
    case LAPICT_E_GP:
        return "access raises #GP";
    case LAPICT_E_MODE:
        return "reserved LVT timer mode 11 written";
    case LAPICT_E_VECTOR:
        return "illegal timer vector (0-15)";
    case LAPICT_E_STATE_SIZE:
        return "state blob has the wrong size";
    case LAPICT_E_STATE_MAGIC:
        return "state blob has a bad magic number";
    case LAPICT_E_STATE_VERSION:
        return "state blob version not supported";
    case LAPICT_E_STATE_CHECKSUM:
        return "state blob checksum mismatch";
    case LAPICT_E_STATE_FIELD:
        return "state blob field invalid or inconsistent";
    case LAPICT_E_STATE_CONFIG:
        return "state blob does not match this instance's configuration";
    case LAPICT_E_SYSTEM:
        return "a host system call failed (the adapter keeps its errno)";
    case LAPICT_E_NOT_COUNTDOWN:
        return "timer state is more than a plain count-down";
    case LAPICT_E_REENTRY:
        return "called from inside one of the instance's own ops (re-entry)";
    case LAPICT_E_TSC_RATE:
        return "the guest TSC does not run at tsc_khz";
    default:
        return "unknown status";
    }
}
