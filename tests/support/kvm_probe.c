/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include "kvm_probe.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/kvm.h>

const char *lt_kvm_unusable(void)
{
    static char why[128];
    const char *off = getenv("LAPICT_TEST_NO_KVM");
    int fd, vm;

    if (off && *off && strcmp(off, "0") != 0)
        return "LAPICT_TEST_NO_KVM is set";
    fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, sizeof(why), "cannot open /dev/kvm (%m)");
        return why;
    }
    vm = ioctl(fd, KVM_CREATE_VM, 0);
    if (vm < 0) {
        snprintf(why, sizeof(why), "KVM_CREATE_VM failed (%m)");
        close(fd);
        return why;
    }
    close(vm);
    close(fd);
    return NULL;
}

void lt_guest_priority(const char *test)
{
    if (setpriority(PRIO_PROCESS, 0, LT_GUEST_NICE) != 0)
        printf("%s: guests run at the normal priority: setpriority(%d): %m\n",
               test, LT_GUEST_NICE);
}

char *lt_run_capture(const char *cmd, int *status)
{
    char full[2048], *out = NULL, *grown;
    size_t n = 0, cap = 0;
    FILE *p;
    int c, rc;

    snprintf(full, sizeof(full), "%s 2>&1", cmd);
    p = popen(full, "r");
    if (!p) {
        perror("popen");
        abort();
    }
    while ((c = fgetc(p)) != EOF) {
        if (n + 2 > cap) {
            cap = cap ? 2 * cap : 8192;
            grown = realloc(out, cap);
            if (!grown)
                abort();
            out = grown;
        }
        out[n++] = (char)c;
    }
    if (!out && !(out = calloc(1, 1)))
        abort();
    out[n] = 0;
    rc = pclose(p);
    *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return out;
}
