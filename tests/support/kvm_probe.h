/* SPDX-License-Identifier: MIT */
/*
 * Shared by the integration tests that boot guests with lapict-vmm: whether
 * this machine can run a VM at all, and running a command for its output.
 */
#ifndef LAPICT_TEST_KVM_PROBE_H
#define LAPICT_TEST_KVM_PROBE_H

/*
 * NULL when /dev/kvm opens and KVM_CREATE_VM works, else a static string
 * saying why not (the tests then skip with that message).
 */
const char *lt_kvm_unusable(void);

/*
 * Runs @cmd through the shell with stderr joined to stdout. Returns its
 * output (malloc'ed, NUL-terminated, never NULL) and in *status the exit
 * code, or -1 if it did not exit normally. Aborts the test on failure to
 * start or allocate.
 */
char *lt_run_capture(const char *cmd, int *status);

#endif
