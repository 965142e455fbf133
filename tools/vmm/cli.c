/* SPDX-License-Identifier: MIT */
/*
 * The command line: lapict-vmm(1)'s options, their ranges and the
 * combinations refused, checked before anything opens /dev/kvm (so that
 * --dry-run answers on any machine), then the defaults that depend on
 * the test chosen. Also the one way out on a system error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lapict/version.h>

#include "../common/lapict_tool_num.h"
#include "vmm.h"

#ifndef LAPICT_VMM_GUEST
#define LAPICT_VMM_GUEST "guest.bin"
#endif
/* --guest=baremetal: tests/guests/baremetal's kernel (CMake sets it). */
#ifndef LAPICT_VMM_BAREMETAL
#define LAPICT_VMM_BAREMETAL "lapict-baremetal.bin"
#endif

const char *const vmm_test_names[8] = {"tscdeadline", "oneshot", "periodic",
                                       "selftest",    "exit",    "migrate",
                                       "entry",       "immed"};

void vmm_die(const char *what)
{
    fprintf(stderr, "lapict-vmm: %s: %s\n", what, strerror(errno));
    exit(2);
}

static int parse_enum(const char *s, const char *const *names, int n,
                      const char *what)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    fprintf(stderr, "lapict-vmm: bad %s '%s'\n", what, s);
    exit(2);
}

/*
 * The ranges of the numeric options (lapict-vmm(1)). 0 is no option's
 * "default": a default is what an absent option gets.
 */
/* A one-shot count of --delta cycles must fit TMICT (1 GHz bus, a TSC of
 * 1 GHz or more); below 1000 cycles the interrupt is later than the
 * delta anyway. */
#define DELTA_MIN 1000u
#define DELTA_MAX 0xFFFFFFFFu
/* --period-ns: a periodic count of that many ns (1 GHz bus) fits TMICT. */
#define PERIOD_NS_MAX 4000000000u
#define TIMEOUT_S_MAX 86400u
#define MIGRATIONS_MAX 1000000u
/* --downtime-us: 10 s. */
#define DOWNTIME_US_MAX 10000000u

/*
 * @s as an unsigned number for option @opt in @min..@max: decimal, or
 * hexadecimal after 0x; no sign, no space, nothing after it. Anything else
 * is a usage error whose message names the option and its range.
 */
static uint64_t parse_num(const char *s, const char *opt, uint64_t min,
                          uint64_t max)
{
    enum lapict_tool_num rc;
    uint64_t v = 0;

    rc = lapict_tool_num(s, &v);
    if (rc == LAPICT_TOOL_NUM_OK && v >= min && v <= max)
        return v;
    fprintf(stderr, "lapict-vmm: %s: '%s' %s (%" PRIu64 " to %" PRIu64 ")\n",
            opt, s,
            rc == LAPICT_TOOL_NUM_MALFORMED ? "is not a number"
                                            : "is out of range",
            min, max);
    exit(2);
}

/* On stdout for --help, on stderr with a usage error. */
static void usage(FILE *f)
{
    fprintf(f,
            "usage: lapict-vmm [--lapic=lib|kernel] "
            "[--test=tscdeadline|oneshot|periodic|selftest|exit|migrate|entry|"
            "immed]\n"
            "  [--wait=hlt|spin] [--samples=N] [--delta=CYCLES] "
            "[--period-ns=NS]\n"
            "  [--advance=off|adaptive|NS] [--advance-max=NS] [--csv=FILE] "
            "[--compare]\n"
            "  [--guest=FILE|baremetal] [--timers=K] [--entry-isr=stub|timer]\n"
            "  [--no-timer-thread] [--kick-thread] [--timeout=S] [--quiet] "
            "[--dry-run]\n"
            "       lapict-vmm --test=migrate [--migrations=N] "
            "[--downtime-us=US] [--seed=S]\n"
            "  [--advance=...] [--exec [--save=FILE]] [--restore=FILE] "
            "[--timeout=S] [--quiet]\n"
            "       lapict-vmm [--lapic=lib|kernel] --kernel=FILE.flat "
            "[--append=ARGS] [--initrd=FILE]\n"
            "  [--x2apic=on|off] [--advance=...] [--timeout=S] [--quiet]"
            "   (multiboot kernel, serial on stdout)\n"
            "       lapict-vmm --version | --help\n");
}

const char *const vmm_lapic_names[2] = {"lib", "kernel"};
static const char *const waits[] = {"hlt", "spin"};
static const char *const onoff[] = {"on", "off"};
static const char *const isrs[] = {"stub", "timer"};
static const struct option lo[] = {
    {"lapic", required_argument, 0, 'l'},
    {"test", required_argument, 0, 't'},
    {"wait", required_argument, 0, 'w'},
    {"samples", required_argument, 0, 'n'},
    {"delta", required_argument, 0, 'd'},
    {"period-ns", required_argument, 0, 'p'},
    {"advance", required_argument, 0, 'a'},
    {"csv", required_argument, 0, 'c'},
    {"compare", no_argument, 0, 'C'},
    {"guest", required_argument, 0, 'g'},
    {"timers", required_argument, 0, 'k'},
    {"kernel", required_argument, 0, 'K'},
    {"append", required_argument, 0, 'A'},
    {"initrd", required_argument, 0, 'I'},
    {"x2apic", required_argument, 0, 'X'},
    {"timeout", required_argument, 0, 'T'},
    {"quiet", no_argument, 0, 'q'},
    {"advance-max", required_argument, 0, 'M'},
    {"no-timer-thread", no_argument, 0, 'N'},
    {"kick-thread", no_argument, 0, 'Z'},
    {"entry-isr", required_argument, 0, 'Y'},
    {"migrations", required_argument, 0, 'm'},
    {"downtime-us", required_argument, 0, 'D'},
    {"exec", no_argument, 0, 'E'},
    {"save", required_argument, 0, 'S'},
    {"restore", required_argument, 0, 'R'},
    {"seed", required_argument, 0, 's'},
    {"dry-run", no_argument, 0, 'y'},
    {"help", no_argument, 0, 'h'},
    {"version", no_argument, 0, 'V'},
    {0, 0, 0, 0},
};

/* --test=migrate --exec without --save: a file of this process. */
static char save_default[64];

int vmm_parse_args(int argc, char **argv, struct vmm_opts *o,
                   struct lapict_vmm_boot_opts *mb)
{
    int c;

    *o = (struct vmm_opts){.lapic = LAPIC_LIB,
                           .test = T_TSCDEADLINE,
                           .wait = W_HLT,
                           .samples = 0,
                           .delta = 200000,
                           .period_ns = 1000000,
                           .advance_mode = LAPICT_ADVANCE_OFF,
                           .advance_max_ns = 60000,
                           .guest = LAPICT_VMM_GUEST,
                           .timeout_s = 120};
    *mb = (struct lapict_vmm_boot_opts){.x2apic = true};

    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'l':
            o->lapic = parse_enum(optarg, vmm_lapic_names, 2, "--lapic");
            break;
        case 't':
            o->test = parse_enum(optarg, vmm_test_names, 8, "--test");
            break;
        case 'w':
            o->wait = parse_enum(optarg, waits, 2, "--wait");
            break;
        case 'n':
            o->samples = parse_num(optarg, "--samples", 1, SAMPLES_MAX);
            break;
        case 'd':
            o->delta = parse_num(optarg, "--delta", DELTA_MIN, DELTA_MAX);
            break;
        case 'p':
            o->period_ns = parse_num(optarg, "--period-ns", 1, PERIOD_NS_MAX);
            break;
        case 'a':
            if (!strcmp(optarg, "off")) {
                o->advance_mode = LAPICT_ADVANCE_OFF;
            } else if (!strcmp(optarg, "adaptive")) {
                o->advance_mode = LAPICT_ADVANCE_ADAPTIVE;
            } else {
                o->advance_mode = LAPICT_ADVANCE_FIXED;
                o->advance_ns = (uint32_t)parse_num(optarg, "--advance", 0,
                                                    LAPICT_ADVANCE_NS_LIMIT);
            }
            break;
        case 'c':
            o->csv = optarg;
            break;
        case 'C':
            o->compare = true;
            break;
        case 'g':
            o->plain = !strcmp(optarg, "baremetal");
            o->guest = o->plain ? LAPICT_VMM_BAREMETAL : optarg;
            break;
        case 'k':
            o->timers = parse_num(optarg, "--timers", 1, MB_TIMERS_MAX);
            break;
        case 'K':
            mb->kernel = optarg;
            break;
        case 'A':
            mb->append = optarg;
            break;
        case 'I':
            mb->initrd = optarg;
            break;
        case 'X':
            mb->x2apic = parse_enum(optarg, onoff, 2, "--x2apic") == 0;
            o->x2apic = mb->x2apic;
            break;
        case 'T':
            o->timeout_s =
                (unsigned)parse_num(optarg, "--timeout", 1, TIMEOUT_S_MAX);
            break;
        case 'q':
            o->quiet = true;
            break;
        case 'M':
            /* 0 is not offered: the KVM adapter reads it as its default. */
            o->advance_max_ns = (uint32_t)parse_num(optarg, "--advance-max", 1,
                                                    LAPICT_ADVANCE_NS_LIMIT);
            break;
        case 'N':
            o->no_thread = true;
            break;
        case 'Z':
            o->kick_thread = true;
            break;
        case 'Y':
            o->entry_isr = parse_enum(optarg, isrs, 2, "--entry-isr");
            break;
        case 'm':
            o->migrations =
                parse_num(optarg, "--migrations", 1, MIGRATIONS_MAX);
            break;
        case 'D':
            o->downtime_us =
                parse_num(optarg, "--downtime-us", 0, DOWNTIME_US_MAX);
            break;
        case 'E':
            o->exec = true;
            break;
        case 'S':
            o->save = optarg;
            break;
        case 'R':
            o->restore = optarg;
            break;
        case 's':
            o->seed = parse_num(optarg, "--seed", 0, UINT64_MAX);
            o->seed_set = true;
            break;
        case 'y':
            o->dry_run = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("lapict-vmm %s\n", LAPICT_VERSION_STRING);
            return 0;
        default:
            /* getopt_long() has named the option on stderr. */
            usage(stderr);
            return 2;
        }
    }
    /* getopt_long() moved the arguments that are no option to the end. */
    if (optind < argc) {
        fprintf(stderr, "lapict-vmm: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (o->test == T_MIGRATE || o->restore) {
        o->test = T_MIGRATE;
        if (o->lapic != LAPIC_LIB) {
            fprintf(stderr, "lapict-vmm: --test=migrate needs --lapic=lib\n");
            return 2;
        }
    } else if (!mb->kernel) {
        if (o->x2apic && o->test != T_IMMED && o->test != T_TSCDEADLINE) {
            fprintf(stderr, "lapict-vmm: --x2apic=on: with --kernel, or with "
                            "--test=immed or tscdeadline\n");
            return 2;
        }
        if (o->test == T_ENTRY &&
            (o->lapic != LAPIC_LIB || o->compare || o->plain)) {
            fprintf(stderr, "lapict-vmm: --test=entry measures the userspace "
                            "LAPIC's injection: --lapic=lib only, no "
                            "--compare or --guest=baremetal\n");
            return 2;
        }
    }
    /* Every check of the command line is above, nothing that needs KVM;
     * those of the files it names come with the job (main.c). */
    if (o->test == T_MIGRATE) {
        o->argc = argc;
        o->argv = argv;
        if (!o->migrations)
            o->migrations = 100;
        if (!o->seed_set)
            o->seed = lapict_vmm_mono_ns() % 1000000007u;
        if (o->exec && !o->save) {
            snprintf(save_default, sizeof(save_default),
                     "/tmp/lapict-vmm-migrate.%d", (int)getpid());
            o->save = save_default;
        }
        return -1;
    }
    if (!o->samples)
        o->samples = o->test == T_SELFTEST ? 1 : 2000;
    return -1;
}
