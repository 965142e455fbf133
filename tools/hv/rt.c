/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv's C runtime: the string functions the compiler may call, a
 * small printf, and the console (COM1, polled).
 */
#include "hv.h"

#define COM1 0x3F8u
#define LSR_THRE 0x20u
#define LSR_TEMT 0x40u

void *memcpy(void *d, const void *s, size_t n)
{
    uint8_t *dp = d;
    const uint8_t *sp = s;
    while (n--)
        *dp++ = *sp++;
    return d;
}

void *memmove(void *d, const void *s, size_t n)
{
    uint8_t *dp = d;
    const uint8_t *sp = s;
    if (dp < sp) {
        while (n--)
            *dp++ = *sp++;
    } else {
        while (n--)
            dp[n] = sp[n];
    }
    return d;
}

void *memset(void *d, int c, size_t n)
{
    uint8_t *dp = d;
    while (n--)
        *dp++ = (uint8_t)c;
    return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x < *y ? -1 : 1;
    return 0;
}

size_t hv_strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/*
 * The console: a ring drained into COM1's 16-byte FIFO whenever it is
 * empty, at every VM exit and while idle. A polled UART at 115200 baud
 * takes about 87 us a byte (thousands of guest instructions): written
 * synchronously, one vCPU's line of output would hold the others' timer
 * interrupts for that long.
 */
#define RING 65536u
static char ring[RING];
static uint32_t ring_head, ring_tail;

/* 8N1 at 115200 baud, FIFOs on: a loader may leave COM1 at 5 data bits. */
void hv_console_init(void)
{
    hv_outb(COM1 + 3, 0x80);
    hv_outb(COM1 + 0, 1);
    hv_outb(COM1 + 1, 0);
    hv_outb(COM1 + 3, 0x03);
    hv_outb(COM1 + 2, 0x07);
    hv_outb(COM1 + 4, 0x03);
}

bool hv_console_poll(void)
{
    if (ring_head != ring_tail && (hv_inb(COM1 + 5) & LSR_THRE)) {
        for (unsigned i = 0; i < 16 && ring_head != ring_tail; i++)
            hv_outb(COM1, (uint8_t)ring[ring_tail++ % RING]);
    }
    return ring_head != ring_tail;
}

void hv_putc(char c)
{
    while (ring_head - ring_tail >= RING)
        hv_console_poll();
    ring[ring_head++ % RING] = c;
}

struct out {
    char *buf;
    size_t len, pos;
};

static void put(struct out *o, char c)
{
    if (o->pos + 1 < o->len)
        o->buf[o->pos] = c;
    o->pos++;
}

static void put_num(struct out *o, uint64_t v, unsigned base, bool neg,
                    int width, char pad)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v);
    if (neg)
        tmp[n++] = '-';
    while (width-- > n)
        put(o, pad);
    while (n)
        put(o, tmp[--n]);
}

int hv_vsnprintf(char *buf, size_t len, const char *fmt, va_list ap)
{
    struct out o = {buf, len, 0};
    for (; *fmt; fmt++) {
        int width = 0, lng = 0;
        char pad = ' ';
        if (*fmt != '%') {
            put(&o, *fmt);
            continue;
        }
        fmt++;
        if (*fmt == '0')
            pad = '0';
        while (*fmt >= '0' && *fmt <= '9')
            width = width * 10 + (*fmt++ - '0');
        while (*fmt == 'l') {
            lng++;
            fmt++;
        }
        switch (*fmt) {
        case 'd': {
            int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
            put_num(&o, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, 10, v < 0, width,
                    pad);
            break;
        }
        case 'u':
        case 'x': {
            uint64_t v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
            put_num(&o, v, *fmt == 'x' ? 16 : 10, false, width, pad);
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);
            while (*s)
                put(&o, *s++);
            break;
        }
        case 'c':
            put(&o, (char)va_arg(ap, int));
            break;
        case '%':
            put(&o, '%');
            break;
        default:
            put(&o, '?');
            break;
        }
    }
    if (len)
        buf[o.pos < len ? o.pos : len - 1] = 0;
    return (int)o.pos;
}

int hv_snprintf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = hv_vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    return n;
}

void hv_printf(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    hv_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    for (const char *p = buf; *p; p++)
        hv_putc(*p);
}

/* Bochs ends on "Shutdown" written to port 0x8900; QEMU and real machines
 * do not, so halt after it. The console is drained first (TEMT). */
_Noreturn void hv_shutdown(int status)
{
    hv_printf("HV-EXIT status=%d\n", status);
    while (hv_console_poll())
        ;
    while (!(hv_inb(COM1 + 5) & LSR_TEMT))
        ;
    for (const char *p = "Shutdown"; *p; p++)
        hv_outb(0x8900, (uint8_t)*p);
    for (;;)
        __asm__ volatile("cli; hlt");
}

_Noreturn void hv_panic(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    hv_vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    hv_printf("lapict-hv: fatal: %s\n", buf);
    hv_shutdown(125);
}
