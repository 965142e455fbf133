/* SPDX-License-Identifier: MIT */
/*
 * Memory figures (lapict-bench --memory): sizeof of every public struct and
 * the stack high-water of each hot-path operation.
 *
 * Stack: the operation runs once (after its untimed setup) on a private
 * stack painted with a pattern (makecontext/swapcontext); the deepest byte
 * no longer holding the pattern gives the bytes used, minus what an empty
 * operation uses on the same stack (the trampoline). The host ops of the
 * bench are included (they are leaf functions of a few bytes). Sanitizer
 * builds move locals to fake stacks, so there the figure is not measured.
 */
#define _XOPEN_SOURCE 700
#include "bench.h"
#include "hotpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#if defined(__SANITIZE_ADDRESS__)
#define BENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BENCH_ASAN 1
#endif
#endif

#define STACK_BYTES (64u * 1024u)
#define PAINT 0xA5u

#ifndef BENCH_ASAN
/* The operation the trampoline runs (a bench, not the library: a static
 * is the simplest way through makecontext's int-only arguments). */
static const struct bench_op *cur_op;
static struct bctx *cur_ctx;
static ucontext_t main_uc, op_uc;

static void trampoline(void)
{
    if (cur_op)
        cur_op->op(cur_ctx, 1);
}

/* Bytes of the painted stack that running the current op touched. */
static long paint_run(unsigned char *stack)
{
    size_t i;

    memset(stack, PAINT, STACK_BYTES);
    if (getcontext(&op_uc))
        return -1;
    op_uc.uc_stack.ss_sp = stack;
    op_uc.uc_stack.ss_size = STACK_BYTES;
    op_uc.uc_link = &main_uc;
    makecontext(&op_uc, trampoline, 0);
    if (swapcontext(&main_uc, &op_uc))
        return -1;
    /* The stack grows down: find the lowest byte that changed. */
    for (i = 0; i < STACK_BYTES && stack[i] == PAINT; i++)
        ;
    return (long)(STACK_BYTES - i);
}
#endif

static void print_sizes(void)
{
    printf("== memory: sizeof of the public structs (bytes)\n");
#define SZ(name, note)                                                         \
    do {                                                                       \
        printf("%-26s %5zu  %s\n", "struct " #name, sizeof(struct name),       \
               note);                                                          \
        printf("RESULT test=memory what=sizeof name=%s bytes=%zu\n", #name,    \
               sizeof(struct name));                                           \
    } while (0)
    SZ(lapict_timer, "one per vCPU, caller-allocated (ABI cap 272)");
    SZ(lapict_config, "init argument");
    SZ(lapict_ops, "one per host, shared");
    SZ(lapict_stats, "lapict_stats_get() output");
#undef SZ
    printf("%-26s %5u  %s\n", "LAPICT_STATE_SIZE", LAPICT_STATE_SIZE,
           "save/restore blob");
    printf("RESULT test=memory what=sizeof name=state_blob bytes=%u\n",
           LAPICT_STATE_SIZE);
}

#ifdef BENCH_ASAN
int bench_memory(const struct bench_opts *o)
{
    unsigned k;

    (void)o;
    print_sizes();
    printf("== memory: stack high-water per operation: not measured in a "
           "sanitizer build\n   (locals live on fake stacks)\n");
    for (k = 0; k < bench_nops; k++)
        printf("RESULT test=memory what=stack op=%s bytes=-\n",
               bench_ops[k].name);
    return 0;
}
#else
int bench_memory(const struct bench_opts *o)
{
    unsigned char *stack;
    struct bctx *c;
    long base;
    unsigned k;

    (void)o;
    print_sizes();
    printf("== memory: stack high-water per operation (bytes, painted "
           "stack)\n");
    stack = malloc(STACK_BYTES);
    c = malloc(sizeof(*c));
    if (!stack || !c) {
        fprintf(stderr, "lapict-bench: out of memory\n");
        return 1;
    }
    cur_op = NULL;
    base = paint_run(stack);
    for (k = 0; k < bench_nops; k++) {
        long used;
        bench_ops[k].init(c);
        /* One ordinary round first, so the op meets its usual state. */
        if (bench_ops[k].setup)
            bench_ops[k].setup(c, 0);
        bench_ops[k].op(c, 0);
        if (bench_ops[k].setup)
            bench_ops[k].setup(c, 1);
        cur_op = &bench_ops[k];
        cur_ctx = c;
        used = paint_run(stack);
        if (used < 0 || base < 0) {
            fprintf(stderr, "lapict-bench: swapcontext failed\n");
            return 1;
        }
        printf("%-20s %5ld  (%s)\n", bench_ops[k].name, used - base,
               bench_ops[k].fn);
        printf("RESULT test=memory what=stack op=%s bytes=%ld\n",
               bench_ops[k].name, used - base);
    }
    free(c);
    free(stack);
    return 0;
}
#endif
