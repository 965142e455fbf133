/* SPDX-License-Identifier: MIT */
/*
 * lapict-hv's VMCS: its fields and their bits, and the accessors of the
 * loaded VMCS's guest state that both the exit dispatch (vmx.c) and the
 * platform a guest sees (guest.c) use. Below both: it calls neither.
 */
#ifndef LAPICT_HV_VMCS_H
#define LAPICT_HV_VMCS_H

#include "hv.h"

/* VMCS fields (SDM Vol. 3, appendix B). */
enum {
    G_ES_SEL = 0x0800,
    G_CS_SEL = 0x0802,
    G_SS_SEL = 0x0804,
    G_DS_SEL = 0x0806,
    G_FS_SEL = 0x0808,
    G_GS_SEL = 0x080A,
    G_LDTR_SEL = 0x080C,
    G_TR_SEL = 0x080E,
    H_ES_SEL = 0x0C00,
    H_CS_SEL = 0x0C02,
    H_SS_SEL = 0x0C04,
    H_DS_SEL = 0x0C06,
    H_FS_SEL = 0x0C08,
    H_GS_SEL = 0x0C0A,
    H_TR_SEL = 0x0C0C,
    MSR_BITMAP = 0x2004,
    TSC_OFFSET = 0x2010,
    EPT_POINTER = 0x201A,
    TSC_MULTIPLIER = 0x2032,
    GUEST_PHYS = 0x2400,
    VMCS_LINK = 0x2800,
    G_DEBUGCTL = 0x2802,
    G_PAT = 0x2804,
    G_EFER = 0x2806,
    H_PAT = 0x2C00,
    H_EFER = 0x2C02,
    PIN_CTL = 0x4000,
    PROC_CTL = 0x4002,
    EXC_BITMAP = 0x4004,
    CR3_TARGETS = 0x400A,
    EXIT_CTL = 0x400C,
    EXIT_MSR_STORE = 0x400E,
    EXIT_MSR_LOAD = 0x4010,
    ENTRY_CTL = 0x4012,
    ENTRY_MSR_LOAD = 0x4014,
    ENTRY_INTR = 0x4016,
    ENTRY_ERR = 0x4018,
    ENTRY_LEN = 0x401A,
    PROC2_CTL = 0x401E,
    VM_ERROR = 0x4400,
    EXIT_REASON = 0x4402,
    EXIT_INTR = 0x4404,
    IDT_INFO = 0x4408,
    IDT_ERR = 0x440A,
    EXIT_LEN = 0x440C,
    G_ES_LIM = 0x4800,
    G_GDTR_LIM = 0x4810,
    G_IDTR_LIM = 0x4812,
    G_ES_AR = 0x4814,
    G_CS_AR = 0x4816,
    G_INTR_STATE = 0x4824,
    G_ACTIVITY = 0x4826,
    G_SYSENTER_CS = 0x482A,
    G_PREEMPT = 0x482E,
    H_SYSENTER_CS = 0x4C00,
    CR0_MASK = 0x6000,
    CR4_MASK = 0x6002,
    CR0_SHADOW = 0x6004,
    CR4_SHADOW = 0x6006,
    EXIT_QUAL = 0x6400,
    G_CR0 = 0x6800,
    G_CR3 = 0x6802,
    G_CR4 = 0x6804,
    G_ES_BASE = 0x6806,
    G_CS_BASE = 0x6808,
    G_GDTR_BASE = 0x6816,
    G_IDTR_BASE = 0x6818,
    G_DR7 = 0x681A,
    G_RSP = 0x681C,
    G_RIP = 0x681E,
    G_RFLAGS = 0x6820,
    G_PENDING_DBG = 0x6822,
    G_SYSENTER_ESP = 0x6824,
    G_SYSENTER_EIP = 0x6826,
    H_CR0 = 0x6C00,
    H_CR3 = 0x6C02,
    H_CR4 = 0x6C04,
    H_FS_BASE = 0x6C06,
    H_GS_BASE = 0x6C08,
    H_TR_BASE = 0x6C0A,
    H_GDTR_BASE = 0x6C0C,
    H_IDTR_BASE = 0x6C0E,
    H_SYSENTER_ESP = 0x6C10,
    H_SYSENTER_EIP = 0x6C12,
    H_RIP = 0x6C16,
};

/* Controls. */
#define PIN_EXTINT (1u << 0)
#define PIN_NMI_EXIT (1u << 3)
#define PIN_VNMI (1u << 5)
#define PIN_PREEMPT (1u << 6)
#define PROC_INTR_WINDOW (1u << 2)
#define PROC_TSC_OFFSET (1u << 3)
#define PROC_HLT (1u << 7)
#define PROC_RDTSC (1u << 12)
#define PROC_CR3_LOAD (1u << 15)
#define PROC_CR3_STORE (1u << 16)
#define PROC_CR8_LOAD (1u << 19)
#define PROC_CR8_STORE (1u << 20)
#define PROC_NMI_WINDOW (1u << 22)
#define PROC_IO (1u << 24)
#define PROC_MSR_BITMAP (1u << 28)
#define PROC_SECONDARY (1u << 31)
#define PROC2_EPT (1u << 1)
#define PROC2_RDTSCP (1u << 3)
#define PROC2_UNRESTRICTED (1u << 7)
#define PROC2_TSC_SCALING (1u << 25)
#define EXIT_HOST64 (1u << 9)
#define EXIT_ACK_INTR (1u << 15)
#define EXIT_SAVE_PAT (1u << 18)
#define EXIT_LOAD_PAT (1u << 19)
#define EXIT_SAVE_EFER (1u << 20)
#define EXIT_LOAD_EFER (1u << 21)
#define ENTRY_IA32E (1u << 9)
#define ENTRY_LOAD_PAT (1u << 14)
#define ENTRY_LOAD_EFER (1u << 15)

#define INTR_VALID (1u << 31)
#define INTR_TYPE_EXT (0u << 8)
#define INTR_TYPE_NMI (2u << 8)
#define INTR_TYPE_HW_EXC (3u << 8)
#define INTR_HAS_ERR (1u << 11)

#define RFLAGS_IF (1u << 9)
#define STATE_STI 1u
#define STATE_MOVSS 2u
#define STATE_NMI 8u

#define CR0_PE 1ull
#define CR0_PG (1ull << 31)
#define CR4_PAE (1ull << 5)
#define EFER_LME (1ull << 8)
#define EFER_LMA (1ull << 10)

/* IA32_VMX_CR0_FIXED0 / FIXED1, read by hv_vmx_init(). */
extern uint32_t hv_cr0_fixed0, hv_cr0_fixed1;

static inline uint64_t hv_vmread(uint64_t field)
{
    uint64_t v;
    __asm__ volatile("vmread %1, %0" : "=rm"(v) : "r"(field) : "cc");
    return v;
}

static inline void hv_vmwrite(uint64_t field, uint64_t val)
{
    uint8_t fail;
    __asm__ volatile("vmwrite %1, %2; setna %0"
                     : "=q"(fail)
                     : "rm"(val), "r"(field)
                     : "cc");
    if (fail)
        hv_panic("VMWRITE of field 0x%lx failed (error %lu)", (uint64_t)field,
                 hv_vmread(VM_ERROR));
}

/* General register @n (x86 encoding: 0 rax .. 15 r15) of the loaded vCPU. */
uint64_t hv_greg_read(struct hv_vcpu *v, unsigned n);
void hv_greg_write(struct hv_vcpu *v, unsigned n, uint64_t val);
/* A guest write to CR0 (@val as the guest sees it) or to IA32_EFER. */
void hv_guest_set_cr0(struct hv_vcpu *v, uint64_t val);
void hv_guest_set_efer(struct hv_vcpu *v, uint64_t val);
uint64_t hv_guest_efer(const struct hv_vcpu *v);
/* Step over the emulated instruction of @len bytes. */
void hv_guest_skip(struct hv_vcpu *v, uint64_t len);

#endif
