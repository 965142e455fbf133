/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv's configuration, from its command line (multiboot, after
 * argv[0]): hv_timer=preempt|lapic advance=off|adaptive vcpus=N tsc_khz=K
 * [bus_khz=B] [advance_max_ns=A] [half=odd].
 */
#include "hv.h"

struct hv_config hv_cfg = {
    .timer = HV_TIMER_PREEMPT,
    .advance_mode = LAPICT_ADVANCE_OFF,
    .vcpus = 1,
    .advance_max_ns = 100000,
};

static bool word_eq(const char *w, size_t n, const char *lit)
{
    size_t l = hv_strlen(lit);
    return n == l && !memcmp(w, lit, l);
}

static bool parse_u32(const char *s, size_t n, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    if (!n || n > 10)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return false;
    *out = (uint32_t)v;
    return true;
}

void hv_config_parse(const char *s)
{
    bool first = true;
    while (*s) {
        const char *w, *eq;
        size_t n, kn;
        while (*s == ' ')
            s++;
        w = s;
        while (*s && *s != ' ')
            s++;
        n = (size_t)(s - w);
        if (!n)
            break;
        if (first) { /* argv[0] */
            first = false;
            continue;
        }
        eq = w;
        while (eq < s && *eq != '=')
            eq++;
        if (eq == s)
            hv_panic("command line: a word is not key=value");
        kn = (size_t)(eq - w);
        eq++;
        n = (size_t)(s - eq);
        if (word_eq(w, kn, "hv_timer")) {
            if (word_eq(eq, n, "preempt"))
                hv_cfg.timer = HV_TIMER_PREEMPT;
            else if (word_eq(eq, n, "lapic"))
                hv_cfg.timer = HV_TIMER_LAPIC;
            else
                hv_panic("command line: hv_timer must be preempt or lapic");
        } else if (word_eq(w, kn, "advance")) {
            if (word_eq(eq, n, "off"))
                hv_cfg.advance_mode = LAPICT_ADVANCE_OFF;
            else if (word_eq(eq, n, "adaptive"))
                hv_cfg.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
            else
                hv_panic("command line: advance must be off or adaptive");
        } else if (word_eq(w, kn, "vcpus")) {
            if (!parse_u32(eq, n, HV_MAX_VCPUS, &hv_cfg.vcpus) || !hv_cfg.vcpus)
                hv_panic("command line: vcpus must be 1..%u", HV_MAX_VCPUS);
        } else if (word_eq(w, kn, "tsc_khz")) {
            if (!parse_u32(eq, n, LAPICT_TSC_KHZ_MAX, &hv_cfg.tsc_khz) ||
                !hv_cfg.tsc_khz)
                hv_panic("command line: tsc_khz must be 1..%u",
                         LAPICT_TSC_KHZ_MAX);
        } else if (word_eq(w, kn, "bus_khz")) {
            if (!parse_u32(eq, n, 1000000, &hv_cfg.bus_khz) ||
                !hv_cfg.bus_khz || 1000000u % hv_cfg.bus_khz)
                hv_panic("command line: bus_khz must divide 1000000");
        } else if (word_eq(w, kn, "advance_max_ns")) {
            if (!parse_u32(eq, n, LAPICT_ADVANCE_NS_LIMIT,
                           &hv_cfg.advance_max_ns))
                hv_panic("command line: advance_max_ns must be 0..%u",
                         LAPICT_ADVANCE_NS_LIMIT);
        } else if (word_eq(w, kn, "half")) {
            if (!word_eq(eq, n, "odd"))
                hv_panic("command line: half takes only 'odd'");
            hv_cfg.half_odd = true;
        } else {
            hv_panic("command line: unknown key");
        }
    }
    if (!hv_cfg.tsc_khz)
        hv_panic("command line: tsc_khz is mandatory (the host TSC rate)");
    if (!hv_cfg.bus_khz) {
        hv_cfg.bus_khz = 1000000u % hv_cfg.tsc_khz ? 1000000u : hv_cfg.tsc_khz;
    }
}
