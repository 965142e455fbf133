# SPDX-License-Identifier: MIT
# Rule (adapters/kvm/sys.c): every system call of the KVM adapter goes
# through its swappable table (struct lapict_kvm_sys), so a test can fake or
# fail any of them. Fails when a source file other than sys.c calls one of
# the table's calls directly instead of through k->sys or the table.
#   cmake -DDIR=adapters/kvm -P check_kvm_sys.cmake
cmake_minimum_required(VERSION 3.16)
set(calls ioctl open close read write clock_gettime timerfd_create
          timerfd_settime eventfd timer_create timer_settime timer_delete
          ppoll sigaction pthread_sigqueue pthread_create prctl syscall)
list(JOIN calls "|" alt)
file(GLOB sources ${DIR}/*.c ${DIR}/kvm_internal.h)
set(bad "")
set(n 0)
foreach(f IN LISTS sources)
    get_filename_component(name ${f} NAME)
    if(name STREQUAL "sys.c")
        continue()
    endif()
    math(EXPR n "${n} + 1")
    file(STRINGS ${f} lines)
    set(lineno 0)
    foreach(line IN LISTS lines)
        math(EXPR lineno "${lineno} + 1")
        # A call by name, not through a table (k->sys->read, .read) nor
        # in a string (a failed call's name).
        if(line MATCHES "(^|[^>.\"_A-Za-z0-9])(${alt})[ \t]*\\(")
            string(APPEND bad "\n  ${name}:${lineno}: ${CMAKE_MATCH_2}(): ${line}")
        endif()
    endforeach()
endforeach()
if(n EQUAL 0)
    message(FATAL_ERROR "kvm_sys_table: no source in ${DIR}")
endif()
if(bad)
    message(FATAL_ERROR "kvm_sys_table: a direct system call:${bad}")
endif()
message(STATUS "kvm_sys_table: ${n} files, every call through the table")
