/* SPDX-License-Identifier: MIT */
/*
 * lapict-vmm: a minimal KVM VMM (one vCPU, long mode prepared here, no
 * firmware) that runs the project's own guest and measures the APIC timer,
 * either emulated in userspace by lapict (adapters/kvm) or by KVM's
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

static void on_alarm(int sig)
{
    static const char msg[] = "lapict-vmm: timeout, guest did not finish\n";
    (void)sig;
    if (write(2, msg, sizeof(msg) - 1) < 0)
        _exit(3);
    _exit(3);
}

struct vm {
    int kvm, vm, vcpu;
    uint8_t *mem;
    struct kvm_run *run;
    size_t run_size;
};

static void load_guest(struct vm *v, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;

    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "lapict-vmm: cannot open guest image %s\n", path);
        exit(2);
    }
    if (st.st_size <= 0 || st.st_size > (off_t)(SAMPLES_ADDR - GUEST_LOAD)) {
        fprintf(stderr, "lapict-vmm: bad guest image size\n");
        exit(2);
    }
    if (read(fd, v->mem + GUEST_LOAD, (size_t)st.st_size) != st.st_size)
        die("read guest");
    close(fd);
}

/* Identity-map 0-4 GiB with 2 MiB pages; GDT with a 64-bit code segment. */
static void setup_long_mode(struct vm *v)
{
    uint64_t *pml4 = (uint64_t *)(v->mem + 0x2000);
    uint64_t *pdpt = (uint64_t *)(v->mem + 0x3000);
    uint64_t *gdt = (uint64_t *)(v->mem + 0x1000);
    struct kvm_sregs s;
    struct kvm_regs r;

    pml4[0] = 0x3000 | 3;
    for (uint64_t i = 0; i < 4; i++) {
        uint64_t *pd = (uint64_t *)(v->mem + 0x4000 + i * 0x1000);
        pdpt[i] = (0x4000 + i * 0x1000) | 3;
        for (uint64_t j = 0; j < 512; j++) {
            uint64_t a = (i * 512 + j) << 21;
            pd[j] = a | 0x83; /* present, writable, 2 MiB */
            if (a >= 0xFEC00000ull)
                pd[j] |= 0x18; /* APIC/IOAPIC region uncached */
        }
    }
    gdt[0] = 0;
    gdt[1] = 0x00AF9B000000FFFFull; /* 64-bit code */
    gdt[2] = 0x00CF93000000FFFFull; /* data */
    gdt[3] = 0x00008B0000000067ull; /* busy TSS, base 0 */

    if (ioctl(v->vcpu, KVM_GET_SREGS, &s) < 0)
        die("KVM_GET_SREGS");
    struct kvm_segment cs = {.base = 0, .limit = 0xFFFFFFFF, .selector = 8,
                             .type = 11, .present = 1, .dpl = 0, .db = 0,
                             .s = 1, .l = 1, .g = 1};
    struct kvm_segment ds = {.base = 0, .limit = 0xFFFFFFFF, .selector = 16,
                             .type = 3, .present = 1, .dpl = 0, .db = 1,
                             .s = 1, .l = 0, .g = 1};
    struct kvm_segment tr = {.base = 0, .limit = 0x67, .selector = 24,
                             .type = 11, .present = 1, .s = 0};
    s.cs = cs;
    s.ds = s.es = s.fs = s.gs = s.ss = ds;
    s.tr = tr;
    s.gdt.base = 0x1000;
    s.gdt.limit = 4 * 8 - 1;
    s.idt.base = 0;
    s.idt.limit = 0;
    s.cr3 = 0x2000;
    s.cr4 = 0x20;                /* PAE */
    s.cr0 = 0x80050033;          /* PG WP NE ET MP PE */
    s.efer = 0x500;              /* LMA LME */
    if (ioctl(v->vcpu, KVM_SET_SREGS, &s) < 0)
        die("KVM_SET_SREGS");
    memset(&r, 0, sizeof(r));
    r.rip = GUEST_LOAD;
    r.rsp = GUEST_STACK_TOP;
    r.rflags = 2;
    if (ioctl(v->vcpu, KVM_SET_REGS, &r) < 0)
        die("KVM_SET_REGS");
}

static void setup_cpuid(struct vm *v)
{
    int n = 128;
    struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

    if (!c)
        die("calloc");
    c->nent = (uint32_t)n;
    if (ioctl(v->kvm, KVM_GET_SUPPORTED_CPUID, c) < 0)
        die("KVM_GET_SUPPORTED_CPUID");
    lapict_kvm_cpuid_fixup(c, false);
    if (ioctl(v->vcpu, KVM_SET_CPUID2, c) < 0)
        die("KVM_SET_CPUID2");
    free(c);
}

static void vm_create(struct vm *v, int lapic)
{
    struct kvm_userspace_memory_region reg;
    int sz;

    memset(v, 0, sizeof(*v));
    v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (v->kvm < 0)
        die("open /dev/kvm");
    v->vm = ioctl(v->kvm, KVM_CREATE_VM, 0);
    if (v->vm < 0)
        die("KVM_CREATE_VM");
    v->mem = mmap(NULL, GUEST_RAM, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (v->mem == MAP_FAILED)
        die("mmap guest memory");
    reg = (struct kvm_userspace_memory_region){
        .slot = 0, .guest_phys_addr = 0, .memory_size = GUEST_RAM,
        .userspace_addr = (uint64_t)(uintptr_t)v->mem};
    if (ioctl(v->vm, KVM_SET_USER_MEMORY_REGION, &reg) < 0)
        die("KVM_SET_USER_MEMORY_REGION");
    if (lapic == LAPIC_KERNEL) {
        if (ioctl(v->vm, KVM_CREATE_IRQCHIP, 0) < 0)
            die("KVM_CREATE_IRQCHIP");
    } else {
        int rc = lapict_kvm_vm_setup(v->vm);
        if (rc < 0) {
            die("lapict_kvm_vm_setup"); /* errno from the failed ioctl */
        }
    }
    v->vcpu = ioctl(v->vm, KVM_CREATE_VCPU, 0);
    if (v->vcpu < 0)
        die("KVM_CREATE_VCPU");
    sz = ioctl(v->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
    if (sz <= 0)
        die("KVM_GET_VCPU_MMAP_SIZE");
    v->run_size = (size_t)sz;
    v->run = mmap(NULL, v->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
                  v->vcpu, 0);
    if (v->run == MAP_FAILED)
        die("mmap kvm_run");
    setup_cpuid(v);
    setup_long_mode(v);
}

static void vm_destroy(struct vm *v)
{
    munmap(v->run, v->run_size);
    munmap(v->mem, GUEST_RAM);
    close(v->vcpu);
    close(v->vm);
    close(v->kvm);
}

static const char *guest_str(struct vm *v, uint32_t addr)
{
    if (addr >= GUEST_RAM || !memchr(v->mem + addr, 0, GUEST_RAM - addr))
        return "(bad string)";
    return (const char *)(v->mem + addr);
}

/* An I/O exit: returns 1 to continue, 0 when the guest is done. */
static int handle_io(struct vm *v, const struct opts *o, struct result *res)
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

static void summarise(struct vm *v, const struct opts *o,
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

static int run_one(const struct opts *o, int lapic, const char *csv,
                   struct result *res)
{
    struct vm v;
    struct mailbox *mb;
    struct lapict_kvm *k = NULL;
    int rc, tsc_khz;

    memset(res, 0, sizeof(*res));
    res->oneway = calloc(ONEWAY_MAX, sizeof(int64_t));
    if (!res->oneway)
        die("calloc");
    vm_create(&v, lapic);
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
        k = calloc(1, sizeof(*k));
        if (!k)
            die("calloc");
        rc = lapict_kvm_init(k, v.vcpu, v.run, &kc);
        if (rc) {
            fprintf(stderr, "lapict-vmm: lapict_kvm_init: %s (%s: %s)\n",
                    lapict_strerror(rc), lapict_kvm_errcall(k),
                    strerror(lapict_kvm_errno(k)));
            exit(2);
        }
    }
    alarm(o->timeout_s);
    for (;;) {
        if (k) {
            rc = lapict_kvm_run(k);
            if (rc < 0) {
                fprintf(stderr, "lapict-vmm: lapict_kvm_run: %s (%s: %s)\n",
                        lapict_strerror(rc), lapict_kvm_errcall(k),
                        strerror(lapict_kvm_errno(k)));
                exit(2);
            }
        } else if (ioctl(v.vcpu, KVM_RUN, 0) < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            die("KVM_RUN");
        }
        if (v.run->exit_reason == KVM_EXIT_IO) {
            if (!handle_io(&v, o, res))
                break;
            continue;
        }
        if (v.run->exit_reason == KVM_EXIT_X86_RDMSR ||
            v.run->exit_reason == KVM_EXIT_X86_WRMSR) {
            /* An MSR neither KVM nor the LAPIC knows: #GP, as hardware. */
            v.run->msr.error = 1;
            continue;
        }
        fprintf(stderr, "lapict-vmm: unexpected exit %u", v.run->exit_reason);
        if (v.run->exit_reason == KVM_EXIT_MMIO)
            fprintf(stderr, " (MMIO at 0x%llx)",
                    (unsigned long long)v.run->mmio.phys_addr);
        if (v.run->exit_reason == KVM_EXIT_INTERNAL_ERROR)
            fprintf(stderr, " (suberror %u)", v.run->internal.suberror);
        fprintf(stderr, "\n");
        res->status = 4;
        break;
    }
    alarm(0);
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
    if (k) {
        if (!o->quiet) {
            struct lapict_stats ts;
            lapict_stats_get(&k->timer, &ts);
            printf("lib: runs=%" PRIu64 " mmio=%" PRIu64 " msr=%" PRIu64
                   " hlt_sleeps=%" PRIu64 " kicks=%" PRIu64
                   " interrupts=%" PRIu64 " windows=%" PRIu64
                   " advance_ns=%u spins=%" PRIu64 " refused=%" PRIu64 "\n",
                   k->st.runs, k->apic.st.mmio, k->apic.st.rdmsr + k->apic.st.wrmsr,
                   k->st.halt_sleeps, k->st.kicks_seen, k->st.interrupts,
                   k->st.window_exits, ts.advance_ns, ts.spins, ts.refused);
        }
        lapict_kvm_destroy(k);
        free(k);
    }
    vm_destroy(&v);
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
    signal(SIGALRM, on_alarm);

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
