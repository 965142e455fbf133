/* SPDX-License-Identifier: MIT */
#include "internal.h"

uint32_t lapict_version(void)
{
    return LAPICT_VERSION_NUMBER;
}

const char *lapict_version_string(void)
{
    return LAPICT_VERSION_STRING;
}
