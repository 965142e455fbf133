/* SPDX-License-Identifier: MIT */
/*
 * Smallest program against an installed lapict: the headers are found, the
 * library links, and its version matches the headers it was built with.
 */
#include <stdio.h>

#include <lapict/lapict.h>

int main(void)
{
    struct lapict_config cfg;
    const char *text;

    if (lapict_version() != LAPICT_VERSION_NUMBER) {
        fprintf(stderr, "lapict_version() %#x != LAPICT_VERSION_NUMBER %#x\n",
                (unsigned)lapict_version(), (unsigned)LAPICT_VERSION_NUMBER);
        return 1;
    }
    lapict_config_default(&cfg);
    cfg.tsc_khz = 1000000u; /* no default: the host states its TSC's rate */
    if (lapict_config_check(&cfg) != LAPICT_OK) {
        fprintf(stderr, "the default configuration does not check\n");
        return 1;
    }
    text = lapict_strerror(LAPICT_E_INVAL);
    if (text == NULL || text[0] == '\0') {
        fprintf(stderr, "lapict_strerror(LAPICT_E_INVAL) is empty\n");
        return 1;
    }
    printf("lapict %s: ok\n", lapict_version_string());
    return 0;
}
