/* SPDX-License-Identifier: MIT */
/* The shared guest runtime (runtime.h): console line printer and IDT. */
#include "runtime.h"

struct idt_entry {
    uint16_t off0, sel;
    uint8_t ist, type;
    uint16_t off1;
    uint32_t off2, zero;
};
static struct idt_entry idt[256];

extern void timer_stub(void);
extern void spurious_stub(void);
extern const uint64_t exc_stubs[20];

void puts_(const char *s)
{
    outl(PORT_PUTS, (uint32_t)(uintptr_t)s);
}

static char line[256];
void out(const char *fmt, ...)
{
    __builtin_va_list ap;
    char *p = line, *end = line + sizeof(line) - 1;
    char tmp[24];

    __builtin_va_start(ap, fmt);
    for (; *fmt && p < end; fmt++) {
        if (*fmt != '%') {
            *p++ = *fmt;
            continue;
        }
        fmt++;
        if (*fmt == 's') {
            const char *s = __builtin_va_arg(ap, const char *);
            while (*s && p < end)
                *p++ = *s++;
            continue;
        }
        uint64_t v = __builtin_va_arg(ap, uint64_t);
        unsigned base = *fmt == 'x' ? 16 : 10;
        int n = 0;
        if (*fmt == 'd' && (int64_t)v < 0) {
            *p++ = '-';
            v = -v;
        }
        do {
            tmp[n++] = "0123456789abcdef"[v % base];
            v /= base;
        } while (v && n < 24);
        while (n && p < end)
            *p++ = tmp[--n];
    }
    *p = 0;
    __builtin_va_end(ap);
    puts_(line);
}

void exception(uint64_t vec)
{
    out("EXCEPTION vector=%u", vec);
    outl(PORT_DONE, 100u + (uint32_t)vec);
}

static void set_gate(unsigned v, uint64_t fn)
{
    idt[v].off0 = (uint16_t)fn;
    idt[v].sel = 0x08;
    idt[v].ist = 0;
    idt[v].type = 0x8E; /* present, 64-bit interrupt gate */
    idt[v].off1 = (uint16_t)(fn >> 16);
    idt[v].off2 = (uint32_t)(fn >> 32);
    idt[v].zero = 0;
}

void setup_gate(uint8_t vec, void (*fn)(void))
{
    set_gate(vec, (uint64_t)(uintptr_t)fn);
}

void setup_idt(uint8_t timer_vec)
{
    struct __attribute__((packed)) {
        uint16_t limit;
        uint64_t base;
    } d = {sizeof(idt) - 1, (uint64_t)(uintptr_t)idt};

    for (unsigned i = 0; i < 20; i++)
        set_gate(i, exc_stubs[i]);
    set_gate(timer_vec, (uint64_t)(uintptr_t)timer_stub);
    set_gate(0xFF, (uint64_t)(uintptr_t)spurious_stub);
    __asm__ volatile("lidt %0" ::"m"(d));
}
