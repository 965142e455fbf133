/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv's accessors of the loaded VMCS's guest state: the general
 * registers, CR0 and EFER (which decide IA-32e mode), and stepping over an
 * emulated instruction.
 */
#include "vmcs.h"

uint32_t hv_cr0_fixed0, hv_cr0_fixed1;

/* CR0 as the guest wrote it: the shadow holds it, the real one has the
 * VMX-fixed bits (PE and PG free with unrestricted guest). Paging with
 * EFER.LME on enters IA-32e mode (EFER.LMA and the entry control). */
void hv_guest_set_cr0(struct hv_vcpu *v, uint64_t val)
{
    uint64_t fixed0 = hv_cr0_fixed0 & ~(CR0_PE | CR0_PG);
    uint64_t real =
        ((val | fixed0) & (hv_cr0_fixed1 | CR0_PE | CR0_PG)) & 0xFFFFFFFFull;
    hv_vmwrite(CR0_SHADOW, val & 0xFFFFFFFFull);
    hv_vmwrite(G_CR0, real);
    if ((val & CR0_PG) && (v->efer & EFER_LME))
        v->efer |= EFER_LMA;
    else
        v->efer &= ~EFER_LMA;
    v->entry_ctl = (v->efer & EFER_LMA) ? (v->entry_ctl | ENTRY_IA32E)
                                        : (v->entry_ctl & ~ENTRY_IA32E);
    hv_vmwrite(ENTRY_CTL, v->entry_ctl);
    hv_vmwrite(G_EFER, v->efer);
}

/* The saved registers in x86 encoding order (rax rcx rdx rbx rsp rbp rsi
 * rdi r8..r15); RSP lives in the VMCS. */
uint64_t hv_greg_read(struct hv_vcpu *v, unsigned n)
{
    n &= 15;
    return n == 4 ? hv_vmread(G_RSP) : (&v->g.rax)[n];
}

void hv_greg_write(struct hv_vcpu *v, unsigned n, uint64_t val)
{
    n &= 15;
    if (n == 4)
        hv_vmwrite(G_RSP, val);
    else
        (&v->g.rax)[n] = val;
}

void hv_guest_set_efer(struct hv_vcpu *v, uint64_t val)
{
    uint64_t cr0 = hv_vmread(CR0_SHADOW);
    v->efer = (val & ~EFER_LMA) | (v->efer & EFER_LMA);
    hv_guest_set_cr0(v, cr0);
}

uint64_t hv_guest_efer(const struct hv_vcpu *v)
{
    return v->efer;
}

/* Past the emulated instruction: its STI or MOV SS shadow is over. */
void hv_guest_skip(struct hv_vcpu *v, uint64_t len)
{
    uint64_t st = hv_vmread(G_INTR_STATE);
    (void)v;
    hv_vmwrite(G_RIP, hv_vmread(G_RIP) + len);
    if (st & (STATE_STI | STATE_MOVSS))
        hv_vmwrite(G_INTR_STATE, st & ~(uint64_t)(STATE_STI | STATE_MOVSS));
}
