/* Helpers shared by the C and C++ test programs (header-only, C99 and C++17): CHECK counts failures instead of
 * stopping (CHECKF also prints a printf-style explanation), last_msg() returns the calling thread's last vh5 error message, load_* read
 * unaligned elements with memcpy, and finish() prints the summary and gives the exit code. */
#ifndef VH5_C_TESTS_CHECK_H
#define VH5_C_TESTS_CHECK_H

#include "vh5.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                              \
    }                                                                          \
  } while (0)
#define CHECKF(cond, ...)                                                        \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      failures++;                                                              \
    }                                                                          \
  } while (0)

/* The last error message of the calling thread (a static buffer, overwritten by the next call). */
static inline const char *last_msg(void) {
  static char msg[1024];
  vh5_last_error_message(msg, sizeof msg);
  return msg;
}

static inline double load_f64(const uint8_t *p) { double d; memcpy(&d, p, 8); return d; }
static inline int64_t load_i64(const uint8_t *p) { int64_t v; memcpy(&v, p, 8); return v; }

/* Print the summary of test program `name`; returns its exit code. */
static inline int finish(const char *name) {
  if (failures) {
    fprintf(stderr, "%s: %d failure(s)\n", name, failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

#endif
