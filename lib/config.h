/* SPDX-License-Identifier: MIT */
/*
 * Reading a host's configuration (config.c), as lapict_init() uses it; the
 * public half is <lapict/config.h>. Not installed.
 */
#ifndef LAPICT__CONFIG_H
#define LAPICT__CONFIG_H

#include "internal.h"

/*
 * Read a host's configuration of any accepted size (<lapict/config.h>)
 * into @out, this library's struct: LAPICT_E_INVAL for a size it refuses.
 */
int lapict__config_load(const struct lapict_config *in,
                        struct lapict_config *out);

#endif /* LAPICT__CONFIG_H */
