/* SPDX-License-Identifier: MIT */
/* Umbrella header: the whole lapict public API. */
#ifndef LAPICT_LAPICT_H
#define LAPICT_LAPICT_H

#include "config.h"
#include "countdown.h"
#include "export.h"
#include "ops.h"
#include "regs.h"
#include "state.h"
#include "status.h"
#include "timer.h"
#include "version.h"

#endif /* LAPICT_LAPICT_H */
