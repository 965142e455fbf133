/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm: a minimal KVM VMM (one vCPU, long mode prepared by the VM
 * layer, vm.c, no firmware) that runs the project's own guest and
 * measures the APIC timer, either emulated in userspace by lapict
 * (adapters/kvm, driven through its hooks by vm.c's loop) or by KVM's
 * in-kernel LAPIC (KVM_CREATE_IRQCHIP), with the very same guest binary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/kvm.h>

#include "guest/mailbox.h"
#include "lapict_kvm.h"
#include "platform.h"
#include "vm.h"

#ifndef LAPICT_VMM_GUEST
#define LAPICT_VMM_GUEST "guest.bin"
#endif
/* --guest=baremetal: examples/baremetal's kernel (its CMakeLists sets it). */
#ifndef LAPICT_VMM_BAREMETAL
#define LAPICT_VMM_BAREMETAL "lapict-baremetal.bin"
#endif

enum lapic_kind { LAPIC_LIB, LAPIC_KERNEL };

struct opts {
    int lapic, test, wait;
    uint64_t samples, delta, period_ns;
    int advance_mode;
    uint32_t advance_ns, advance_max_ns;
    const char *csv, *guest;
    bool compare, quiet, no_thread, kick_thread;
    unsigned timeout_s;
    /* --guest=baremetal: its lines as they are, its status; --timers. */
    bool plain;
    uint64_t timers;
};

struct result {
    uint64_t n, early;
    int64_t min, median, p99, max;
    double ppm;
    int64_t drift;
    uint64_t missed;
    uint64_t pass, fail;
    int status;
    uint64_t n_oneway;
    int64_t *oneway;
};

#define ONEWAY_MAX 100000u

static const char *test_names[] = {"tscdeadline", "oneshot", "periodic",
                                   "selftest", "exit"};

static void die(const char *what)
{
    fprintf(stderr, "lapict-vmm: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* The built-in guest's image at GUEST_LOAD, its long-mode entry. */
static void load_guest(struct lapict_vmm_vm *v, const char *path)
{
    size_t len = 0;
    uint8_t *img = lapict_vmm_read_file(path, &len, SAMPLES_ADDR - GUEST_LOAD);
    int rc;

    if (!img || !len) {
        fprintf(stderr, "lapict-vmm: cannot load guest image %s: %s\n", path,
                img ? "empty" : strerror(errno));
        exit(2);
    }
    memcpy(v->mem + GUEST_LOAD, img, len);
    free(img);
    if ((rc = lapict_vmm_vm_long_mode(v, GUEST_LOAD, GUEST_STACK_TOP)) < 0) {
        errno = -rc;
        die("long-mode entry state");
    }
}

static const char *guest_str(struct lapict_vmm_vm *v, uint32_t addr)
{
    if (addr >= GUEST_RAM || !memchr(v->mem + addr, 0, GUEST_RAM - addr))
        return "(bad string)";
    return (const char *)(v->mem + addr);
}

/* An I/O exit: returns 1 to continue, 0 when the guest is done. */
static int handle_io(struct lapict_vmm_vm *v, const struct opts *o,
                     struct result *res)
{
    struct kvm_run *r = v->run;
    uint32_t val = 0;

    if (r->io.direction == KVM_EXIT_IO_IN) {
        memset((uint8_t *)r + r->io.data_offset, 0xFF,
               (size_t)r->io.size * r->io.count);
        return 1;
    }
    memcpy(&val, (uint8_t *)r + r->io.data_offset,
           r->io.size < 4 ? r->io.size : 4);
    switch (r->io.port) {
    case PORT_PUTS:
        if (!o->quiet)
            printf("%s%s\n", o->plain ? "" : "guest: ", guest_str(v, val));
        return 1;
    case PORT_DONE:
        res->status = (int)val;
        return 0;
    case PORT_PING:
        /* The guest sends the low half of its TSC before the OUT. */
        if (res->n_oneway < ONEWAY_MAX)
            res->oneway[res->n_oneway++] =
                (int64_t)(int32_t)((uint32_t)__builtin_ia32_rdtsc() - val);
        return 1;
    default:
        return 1;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void write_csv(const char *path, const int64_t *v, uint64_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        die(path);
    fprintf(f, "sample,cycles\n");
    for (uint64_t i = 0; i < n; i++)
        fprintf(f, "%" PRIu64 ",%" PRId64 "\n", i, v[i]);
    fclose(f);
}

static void summarise(struct lapict_vmm_vm *v, const struct opts *o,
                      const struct mailbox *mb, const char *csv,
                      struct result *res)
{
    const uint64_t *raw = (const uint64_t *)(v->mem + SAMPLES_ADDR);
    uint64_t n = mb->nsamples < o->samples ? mb->nsamples : o->samples;
    int64_t *lat;

    res->n = n;
    res->early = mb->early;
    res->pass = mb->pass;
    res->fail = mb->fail;
    if (!n)
        return;
    lat = malloc(n * sizeof(*lat));
    if (!lat)
        die("malloc");
    if (o->test == T_PERIODIC) {
        /*
         * Arrival i belongs to grid slot s (expected at t_start + s periods,
         * exact in TSC): the next slot, or a later one if ticks were missed
         * (coalesced) during a host stall. The period error and drift are
         * measured over the slots, so missed ticks do not count as drift.
         */
        long double p = (long double)o->period_ns * mb->tsc_khz / 1e6L;
        uint64_t s = 0, s_first = 0;
        res->early = 0;
        for (uint64_t i = 0; i < n; i++) {
            long double since = (long double)(raw[i] - mb->t_start);
            uint64_t fl = (uint64_t)(since / p);
            /* A burst after a stall (IRR plus a held tick) may bring two
             * arrivals in one slot: both belong to ticks already past. */
            s = fl > s ? fl : s;
            if (i == 0)
                s_first = s;
            long double e = (long double)s * p;
            lat[i] = (int64_t)(since - e);
            if (since < e)
                res->early++;
        }
        res->missed = s - s_first + 1 > n ? (s - s_first + 1) - n : 0;
        if (n > 1) {
            long double span = (long double)(raw[n - 1] - raw[0]);
            long double want = (long double)(s - s_first) * p;
            res->ppm = (double)((span - want) / want * 1e6L);
            res->drift = (int64_t)(span - want);
        }
    } else {
        for (uint64_t i = 0; i < n; i++)
            lat[i] = (int64_t)raw[i];
    }
    if (csv)
        write_csv(csv, lat, n);
    qsort(lat, n, sizeof(*lat), cmp_i64);
    res->min = lat[0];
    res->median = lat[n / 2];
    res->p99 = lat[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
    res->max = lat[n - 1];
    free(lat);
}

static void print_result(const struct opts *o, int lapic,
                         const struct result *r)
{
    printf("RESULT test=%s lapic=%s wait=%s samples=%" PRIu64
           " min=%" PRId64 " median=%" PRId64 " p99=%" PRId64
           " max=%" PRId64 " early=%" PRIu64,
           test_names[o->test], lapic == LAPIC_LIB ? "lib" : "kernel",
           o->wait == W_SPIN ? "spin" : "hlt", r->n, r->min, r->median,
           r->p99, r->max, r->early);
    if (o->test == T_PERIODIC)
        printf(" period_err_ppm=%.2f drift_cycles=%" PRId64
               " missed=%" PRIu64,
               r->ppm, r->drift, r->missed);
    if (o->test == T_SELFTEST)
        printf(" pass=%" PRIu64 " fail=%" PRIu64, r->pass, r->fail);
    printf("\n");
    fflush(stdout);
}

struct run_ctx {
    struct lapict_vmm_vm *v;
    const struct opts *o;
    struct result *res;
};

/* lapict_vmm_vm_run()'s exits: the guest's ports; anything else ends it. */
static int guest_exit(void *arg, struct kvm_run *r)
{
    struct run_ctx *c = arg;

    if (r->exit_reason == KVM_EXIT_IO)
        return handle_io(c->v, c->o, c->res) ? -1 : 0;
    fprintf(stderr, "lapict-vmm: unexpected exit %u", r->exit_reason);
    if (r->exit_reason == KVM_EXIT_MMIO)
        fprintf(stderr, " (MMIO at 0x%llx)",
                (unsigned long long)r->mmio.phys_addr);
    if (r->exit_reason == KVM_EXIT_INTERNAL_ERROR)
        fprintf(stderr, " (suberror %u)", r->internal.suberror);
    fprintf(stderr, "\n");
    c->res->status = 4;
    return 0;
}

static int run_one(const struct opts *o, int lapic, const char *csv,
                   struct result *res)
{
    struct lapict_vmm_vm v;
    struct mailbox *mb;
    struct run_ctx ctx = {.v = &v, .o = o, .res = res};
    char err[256];
    int tsc_khz;

    memset(res, 0, sizeof(*res));
    res->oneway = calloc(ONEWAY_MAX, sizeof(int64_t));
    if (!res->oneway)
        die("calloc");
    if (lapict_vmm_vm_create(&v, GUEST_RAM, lapic == LAPIC_KERNEL, false, err,
                             sizeof(err)) < 0) {
        fprintf(stderr, "lapict-vmm: %s\n", err);
        exit(2);
    }
    load_guest(&v, o->guest);
    tsc_khz = ioctl(v.vcpu, KVM_GET_TSC_KHZ, 0);
    if (tsc_khz <= 0)
        die("KVM_GET_TSC_KHZ");
    mb = (struct mailbox *)(v.mem + MB_ADDR);
    memset(mb, 0, sizeof(*mb));
    mb->magic = MB_MAGIC;
    mb->test = (uint32_t)o->test;
    mb->wait = (uint32_t)o->wait;
    mb->samples = o->samples;
    mb->delta = o->delta;
    mb->period_ns = o->period_ns;
    mb->tsc_khz = (uint64_t)tsc_khz;
    mb->bus_hz = 1000000000ull; /* both LAPICs: 1 GHz timer clock */
    mb->timers = o->timers;

    if (lapic == LAPIC_LIB) {
        struct lapict_kvm_config kc = {
            .timer_thread = !o->no_thread,
            /* This process has no other use for SIGUSR1. */
            .kick_signal = SIGUSR1,
            /* The default 50 us slack would dominate every timer latency. */
            .timer_slack_ns = 1,
            .kick_thread = o->kick_thread,
            .advance_mode = (uint32_t)o->advance_mode,
            .advance_ns = o->advance_ns,
            .advance_max_ns = o->advance_mode == LAPICT_ADVANCE_ADAPTIVE
                                  ? o->advance_max_ns
                                  : 0,
        };
        if (lapict_vmm_vm_lapic(&v, &kc, err, sizeof(err)) < 0) {
            fprintf(stderr, "lapict-vmm: %s\n", err);
            exit(2);
        }
    }
    lapict_vmm_timeout(o->timeout_s, "the guest did not finish");
    if (lapict_vmm_vm_run(&v, guest_exit, &ctx) < 0)
        exit(2);
    lapict_vmm_timeout(0, NULL);
    summarise(&v, o, mb, csv, res);
    if (res->n_oneway) {
        qsort(res->oneway, res->n_oneway, sizeof(int64_t), cmp_i64);
        if (!o->quiet)
            printf("exit guest->VMM one-way: median=%" PRId64 " cycles "
                   "(guest TSC before OUT to host TSC in the VMM)\n",
                   res->oneway[res->n_oneway / 2]);
    }
    free(res->oneway);
    res->oneway = NULL;
    if (v.k && !o->quiet) {
        struct lapict_kvm *k = v.k;
        struct lapict_stats ts;
        lapict_stats_get(&k->timer, &ts);
        printf("lib: runs=%" PRIu64 " mmio=%" PRIu64 " msr=%" PRIu64
               " hlt_sleeps=%" PRIu64 " kicks=%" PRIu64
               " interrupts=%" PRIu64 " windows=%" PRIu64
               " advance_ns=%u spins=%" PRIu64 " refused=%" PRIu64 "\n",
               k->st.runs, k->apic.st.mmio,
               k->apic.st.rdmsr + k->apic.st.wrmsr, k->st.halt_sleeps,
               k->st.kicks_seen, k->st.interrupts, k->st.window_exits,
               ts.advance_ns, ts.spins, ts.refused);
        /* What the advance cost the host: the wait before entry. */
        printf("lib: spin_ns_total=%" PRIu64 " spin_ns_per_interrupt=%" PRIu64
               "\n",
               ts.spin_ns_total,
               ts.injections ? ts.spin_ns_total / ts.injections : 0);
    }
    lapict_vmm_vm_destroy(&v);
    return res->status;
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

static uint64_t parse_u64(const char *s, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || !*s) {
        fprintf(stderr, "lapict-vmm: bad %s '%s'\n", what, s);
        exit(2);
    }
    return v;
}

static void usage(void)
{
    printf("usage: lapict-vmm [--lapic=lib|kernel] "
           "[--test=tscdeadline|oneshot|periodic|selftest|exit]\n"
           "  [--wait=hlt|spin] [--samples=N] [--delta=CYCLES] "
           "[--period-ns=NS]\n"
           "  [--advance=off|adaptive|NS] [--csv=FILE] [--compare] "
           "[--guest=FILE|baremetal] [--timers=K]\n"
           "  [--timeout=S] [--quiet]\n"
           "       lapict-vmm [--lapic=lib|kernel] --kernel=FILE.flat "
           "[--append=ARGS] [--initrd=FILE]\n"
           "  [--x2apic=on|off] [--advance=...] [--timeout=S] [--quiet]"
           "   (multiboot kernel, serial on stdout)\n");
}

int main(int argc, char **argv)
{
    static const char *const lapics[] = {"lib", "kernel"};
    static const char *const waits[] = {"hlt", "spin"};
    static const char *const onoff[] = {"on", "off"};
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
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    struct opts o = {.lapic = LAPIC_LIB, .test = T_TSCDEADLINE,
                     .wait = W_HLT, .samples = 0, .delta = 200000,
                     .period_ns = 1000000,
                     .advance_mode = LAPICT_ADVANCE_OFF,
                     .advance_max_ns = 60000,
                     .guest = LAPICT_VMM_GUEST, .timeout_s = 120};
    struct result r[2];
    struct lapict_vmm_boot_opts mb = {.x2apic = true};
    int c, status = 0;

    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'l': o.lapic = parse_enum(optarg, lapics, 2, "--lapic"); break;
        case 't': o.test = parse_enum(optarg, test_names, 5, "--test"); break;
        case 'w': o.wait = parse_enum(optarg, waits, 2, "--wait"); break;
        case 'n': o.samples = parse_u64(optarg, "--samples"); break;
        case 'd': o.delta = parse_u64(optarg, "--delta"); break;
        case 'p': o.period_ns = parse_u64(optarg, "--period-ns"); break;
        case 'a':
            if (!strcmp(optarg, "off")) {
                o.advance_mode = LAPICT_ADVANCE_OFF;
            } else if (!strcmp(optarg, "adaptive")) {
                o.advance_mode = LAPICT_ADVANCE_ADAPTIVE;
            } else {
                o.advance_mode = LAPICT_ADVANCE_FIXED;
                o.advance_ns = (uint32_t)parse_u64(optarg, "--advance");
            }
            break;
        case 'c': o.csv = optarg; break;
        case 'C': o.compare = true; break;
        case 'g':
            o.plain = !strcmp(optarg, "baremetal");
            o.guest = o.plain ? LAPICT_VMM_BAREMETAL : optarg;
            break;
        case 'k': o.timers = parse_u64(optarg, "--timers"); break;
        case 'K': mb.kernel = optarg; break;
        case 'A': mb.append = optarg; break;
        case 'I': mb.initrd = optarg; break;
        case 'X':
            mb.x2apic = parse_enum(optarg, onoff, 2, "--x2apic") == 0;
            break;
        case 'T': o.timeout_s = (unsigned)parse_u64(optarg, "--timeout"); break;
        case 'q': o.quiet = true; break;
        case 'M': o.advance_max_ns = (uint32_t)parse_u64(optarg, "--advance-max"); break;
        case 'N': o.no_thread = true; break;
        case 'Z': o.kick_thread = true; break;
        case 'h': usage(); return 0;
        default: usage(); return 2;
        }
    }
    if (optind < argc) {
        usage();
        return 2;
    }
    if (!o.samples)
        o.samples = o.test == T_SELFTEST ? 1 : 2000;
    if (o.samples > SAMPLES_MAX || o.delta == 0 || o.period_ns == 0 ||
        o.period_ns > 4000000000ull) {
        fprintf(stderr, "lapict-vmm: samples, delta or period out of range\n");
        return 2;
    }

    if (mb.kernel) {
        /* A multiboot kernel (kvm-unit-tests .flat): platform.c. */
        mb.lapic_kernel = o.lapic == LAPIC_KERNEL;
        mb.ram_bytes = 128ull << 20;
        mb.timeout_s = o.timeout_s;
        mb.quiet = o.quiet;
        mb.advance_mode = (uint32_t)o.advance_mode;
        mb.advance_ns = o.advance_ns;
        mb.advance_max_ns =
            o.advance_mode == LAPICT_ADVANCE_ADAPTIVE ? o.advance_max_ns : 0;
        return lapict_vmm_boot(&mb);
    }

    if (o.plain) {
        /* The guest checks, and prints its own RESULT line. */
        status = run_one(&o, o.lapic, NULL, &r[0]);
        return status < 0 || status > 255 ? 255 : status;
    }
    if (!o.compare) {
        status = run_one(&o, o.lapic, o.csv, &r[0]);
        print_result(&o, o.lapic, &r[0]);
    } else {
        char *csv[2] = {NULL, NULL};
        for (int i = 0; i < 2 && o.csv; i++) {
            const char *dot = strrchr(o.csv, '.');
            int base = dot ? (int)(dot - o.csv) : (int)strlen(o.csv);
            if (asprintf(&csv[i], "%.*s-%s.csv", base, o.csv, lapics[i]) < 0)
                die("asprintf");
        }
        status = run_one(&o, LAPIC_LIB, csv[0], &r[0]);
        status |= run_one(&o, LAPIC_KERNEL, csv[1], &r[1]);
        print_result(&o, LAPIC_LIB, &r[0]);
        print_result(&o, LAPIC_KERNEL, &r[1]);
        printf("RATIO test=%s median_lib/median_kernel=%.3f\n",
               test_names[o.test],
               r[1].median ? (double)r[0].median / (double)r[1].median : 0.0);
        free(csv[0]);
        free(csv[1]);
    }
    if (o.test == T_SELFTEST && (r[0].fail || !r[0].pass))
        status |= 1;
    return status ? 1 : 0;
}
