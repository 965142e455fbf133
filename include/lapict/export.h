/* SPDX-License-Identifier: MIT */
/*
 * Symbol visibility for the lapict public API.
 *
 * The library is built with hidden visibility so that only functions marked
 * LAPICT_API are exported from the shared object. A consumer defines
 * nothing: the declarations are the same for the shared and the static
 * library (ELF targets only, so there is no import decoration to choose).
 */
#ifndef LAPICT_EXPORT_H
#define LAPICT_EXPORT_H

#if defined(LAPICT_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#define LAPICT_API __attribute__((visibility("default")))
#else
#define LAPICT_API
#endif

#endif /* LAPICT_EXPORT_H */
