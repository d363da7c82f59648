/* Consumer of an installed vh5 (C99): the core API that every build has.
 * Built by c_tests/consumer/CMakeLists.txt against vh5::vh5 (shared) and vh5::vh5_static,
 * with VH5_EXPECTED_VERSION set to the version find_package(vh5) reported. */
#include <vh5.h>

#include <stdio.h>
#include <string.h>

#ifndef VH5_EXPECTED_VERSION
#error "build with -DVH5_EXPECTED_VERSION=\"x.y.z\" (the CMake project does)"
#endif

static int failures = 0;

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAIL: %s\n", what);
    failures++;
  }
}

static void check_str(const char *got, const char *want, const char *what) {
  if (got == NULL || strcmp(got, want) != 0) {
    fprintf(stderr, "FAIL: %s: got \"%s\", want \"%s\"\n", what, got ? got : "(null)", want);
    failures++;
  }
}

int main(void) {
  char from_macros[32];
  char msg[8];
  size_t len;

  /* Library, header and CMake package all describe the same release. */
  check_str(vh5_version_string(), VH5_VERSION_STRING, "vh5_version_string() vs VH5_VERSION_STRING");
  check_str(vh5_version_string(), VH5_EXPECTED_VERSION, "vh5_version_string() vs find_package version");
  snprintf(from_macros, sizeof from_macros, "%d.%d.%d", (int)VH5_VERSION_MAJOR,
           (int)VH5_VERSION_MINOR, (int)VH5_VERSION_PATCH);
  check_str(from_macros, VH5_VERSION_STRING, "VH5_VERSION_MAJOR.MINOR.PATCH vs VH5_VERSION_STRING");

  check_str(vh5_status_name(VH5_OK), "VH5_OK", "vh5_status_name(VH5_OK)");
  check_str(vh5_status_name(VH5_ERR_MALFORMED), "VH5_ERR_MALFORMED", "vh5_status_name(VH5_ERR_MALFORMED)");
  check_str(vh5_status_name(VH5_ERR_SERVER_ERROR), "VH5_ERR_SERVER_ERROR", "vh5_status_name(VH5_ERR_SERVER_ERROR)");
  check_str(vh5_status_name(VH5_ERR_NO_MEMORY), "VH5_ERR_NO_MEMORY", "vh5_status_name(VH5_ERR_NO_MEMORY)");
  check_str(vh5_status_name(-1), "VH5_UNKNOWN_STATUS", "vh5_status_name(-1)");
  check_str(vh5_status_name(1000), "VH5_UNKNOWN_STATUS", "vh5_status_name(1000)");

  check_str(vh5_dtype_name(VH5_DTYPE_FLOAT64), "float64", "vh5_dtype_name(VH5_DTYPE_FLOAT64)");
  check_str(vh5_dtype_name(VH5_DTYPE_INT32), "int32", "vh5_dtype_name(VH5_DTYPE_INT32)");
  check_str(vh5_dtype_name(VH5_DTYPE_COMPLEX128), "complex128", "vh5_dtype_name(VH5_DTYPE_COMPLEX128)");
  check(vh5_dtype_name(VH5_DTYPE_INVALID) == NULL, "vh5_dtype_name(VH5_DTYPE_INVALID) is NULL");
  check(vh5_dtype_name(99) == NULL, "vh5_dtype_name(99) is NULL");

  /* No call has failed on this thread: the message is empty, and NULL/0 is allowed. */
  check(vh5_last_error_message(NULL, 0) == 0, "vh5_last_error_message(NULL, 0) == 0");
  memset(msg, 'x', sizeof msg);
  len = vh5_last_error_message(msg, sizeof msg);
  check(len == 0 && msg[0] == '\0', "empty last error message, NUL-terminated");

  if (failures) {
    fprintf(stderr, "consumer basic (C): %d failure(s)\n", failures);
    return 1;
  }
  printf("consumer basic (C): vh5 %s OK\n", vh5_version_string());
  return 0;
}
