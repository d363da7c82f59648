// Consumer of an installed vh5 (C++11): the core API through vh5.h's extern "C" block.
// Built by c_tests/consumer/CMakeLists.txt against vh5::vh5, with VH5_EXPECTED_VERSION set.
#include <vh5.h>

#include <cstdio>
#include <string>
#include <type_traits>

#ifndef VH5_EXPECTED_VERSION
#error "build with -DVH5_EXPECTED_VERSION=\"x.y.z\" (the CMake project does)"
#endif

namespace {
int failures = 0;

void check_str(const char *got, const std::string &want, const char *what) {
  if (got == nullptr || want != got) {
    std::fprintf(stderr, "FAIL: %s: got \"%s\", want \"%s\"\n", what, got ? got : "(null)", want.c_str());
    ++failures;
  }
}
}  // namespace

// In C++ the enums are real types with fixed underlying types (stable ABI).
static_assert(std::is_same<std::underlying_type<vh5_status>::type, int32_t>::value, "vh5_status is int32_t");
static_assert(std::is_same<std::underlying_type<vh5_dtype>::type, uint32_t>::value, "vh5_dtype is uint32_t");
static_assert(VH5_OK == 0, "VH5_OK is 0");

int main() {
  const std::string version = std::to_string(VH5_VERSION_MAJOR) + "." + std::to_string(VH5_VERSION_MINOR) +
                              "." + std::to_string(VH5_VERSION_PATCH);
  check_str(vh5_version_string(), version, "vh5_version_string() vs VH5_VERSION_MAJOR/MINOR/PATCH");
  check_str(vh5_version_string(), VH5_VERSION_STRING, "vh5_version_string() vs VH5_VERSION_STRING");
  check_str(vh5_version_string(), VH5_EXPECTED_VERSION, "vh5_version_string() vs find_package version");

  check_str(vh5_status_name(VH5_ERR_BUFFER_TOO_SMALL), "VH5_ERR_BUFFER_TOO_SMALL", "status name");
  check_str(vh5_status_name(VH5_ERR_NOT_FOUND), "VH5_ERR_NOT_FOUND", "status name");
  check_str(vh5_status_name(77), "VH5_UNKNOWN_STATUS", "unknown status name");
  check_str(vh5_dtype_name(VH5_DTYPE_UINT16), "uint16", "dtype name");
  check_str(vh5_dtype_name(VH5_DTYPE_OPAQUE), "opaque", "dtype name");
  if (vh5_dtype_name(1000) != nullptr) {
    std::fprintf(stderr, "FAIL: vh5_dtype_name(1000) is not NULL\n");
    ++failures;
  }
  std::string msg(16, 'x');
  if (vh5_last_error_message(&msg[0], msg.size()) != 0 || msg[0] != '\0') {
    std::fprintf(stderr, "FAIL: last error message is not empty before any failure\n");
    ++failures;
  }
  if (failures) {
    std::fprintf(stderr, "consumer basic (C++): %d failure(s)\n", failures);
    return 1;
  }
  std::printf("consumer basic (C++): vh5 %s OK\n", vh5_version_string());
  return 0;
}
