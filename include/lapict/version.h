/* SPDX-License-Identifier: MIT */
/*
 * lapict version: compile-time macros and the run-time value of the linked
 * library, so a host can detect a header/library mismatch.
 */
#ifndef LAPICT_VERSION_H
#define LAPICT_VERSION_H

#include <stdint.h>

#include "export.h"

/* Version of these headers; lapict_version() gives the library's. */
#define LAPICT_VERSION_MAJOR 1
#define LAPICT_VERSION_MINOR 0
#define LAPICT_VERSION_PATCH 0
#define LAPICT_VERSION_STRING "1.0.0"
/* (major << 16) | (minor << 8) | patch: comparable as an integer. */
#define LAPICT_VERSION_NUMBER                                                  \
    ((LAPICT_VERSION_MAJOR << 16) | (LAPICT_VERSION_MINOR << 8) |              \
     LAPICT_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/**
 * lapict_version() - version of the linked library.
 *
 * Context: any.
 * Return: LAPICT_VERSION_NUMBER of the library the program runs with.
 */
LAPICT_API uint32_t lapict_version(void);

/**
 * lapict_version_string() - version of the linked library as text.
 *
 * Context: any.
 * Return: a static NUL-terminated string such as "1.0.0".
 */
LAPICT_API const char *lapict_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* LAPICT_VERSION_H */
