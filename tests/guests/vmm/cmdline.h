/* SPDX-License-Identifier: MIT */
/*
 * A guest's command line: words separated by blanks, argv[0] first (the
 * multiboot command line as lapict-vmm, QEMU and lapict-hv pass it).
 * Freestanding.
 */
#ifndef LAPICT_VMM_GUEST_CMDLINE_H
#define LAPICT_VMM_GUEST_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Is @word one of the words of @s after argv[0]? */
static inline bool has_word(const char *s, const char *word)
{
    bool first = true;
    while (*s) {
        const char *w;
        size_t i = 0;
        while (*s == ' ')
            s++;
        w = s;
        while (*s && *s != ' ')
            s++;
        if (s == w)
            break;
        while (word[i] && w + i < s && w[i] == word[i])
            i++;
        if (!first && !word[i] && w + i == s)
            return true;
        first = false;
    }
    return false;
}

/* The value of the word "@key" N (@key ends in '=', N decimal) into @out;
 * false, @out untouched, when there is none. */
static inline bool word_value(const char *cmdline, const char *key,
                              uint64_t *out)
{
    for (const char *s = cmdline; *s; s++) {
        const char *k = key, *p = s;
        uint64_t v = 0;
        bool any = false;

        if (s != cmdline && s[-1] != ' ')
            continue; /* not the start of a word */
        while (*k && *p == *k) {
            k++;
            p++;
        }
        if (*k)
            continue;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (uint64_t)(*p++ - '0');
            any = true;
        }
        if (any && (*p == ' ' || *p == 0)) {
            *out = v;
            return true;
        }
    }
    return false;
}

#endif
