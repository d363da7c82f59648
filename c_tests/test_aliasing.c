/* Arguments sharing memory with what a call writes, from C (regressions of a new-user tryout):
 *  - slice tables read through a SECOND mapping of the destination's pages (one file mapped
 *    twice: other addresses, the same memory). An address comparison saw no overlap, a row
 *    wrote over a later row's dst_start and vh5_copy_many_slices wrote outside dst; tables are
 *    now always copied before anything is written (a snapshot);
 *  - payload outputs inside the message: `*written = 0` used to land in the message before it
 *    was parsed (wrong value, status 0); now VH5_ERR_INVALID_ARGUMENT naming `written`.
 * Runs under c_tests/sanitize.sh too (ASan, valgrind): a write outside dst is caught there. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

static vh5_array u64_array(uint64_t *base, uint64_t *shape) {
  vh5_array a;
  memset(&a, 0, sizeof a);
  a.base = base;
  a.base_len = (size_t)shape[0] * 8;
  a.dtype = VH5_DTYPE_UINT64;
  a.itemsize = 8;
  a.ndim = 1;
  a.shape = shape;
  return a;
}

static void tables_in_a_second_mapping(void) {
  const char *tmp = getenv("VH5_TEST_TMP");
  char path[4096];
  snprintf(path, sizeof path, "%s/vh5-aliasing-XXXXXX", tmp ? tmp : "/tmp");
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd < 0) return;
  unlink(path);
  size_t bytes = 4096;
  CHECK(ftruncate(fd, (off_t)bytes) == 0);
  uint64_t *a = (uint64_t *)mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  uint64_t *b = (uint64_t *)mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  CHECK(a != MAP_FAILED && b != MAP_FAILED && a != b);
  if (a == MAP_FAILED || b == MAP_FAILED) return;
  /* dst = a[0..64); tables (2 rows x 1 axis) = b[0..6), the same memory as a[0..6): row 0
   * copies src into dst[2..4), over row 1's dst_start (40 -> 100, past dst) */
  const uint64_t init[6] = {0, 0, 2, 40, 2, 1};
  memcpy(a, init, sizeof init);
  CHECK(b[3] == 40);
  uint64_t src[2] = {2, 100}, sshape[1] = {2}, dshape[1] = {64};
  vh5_array s = u64_array(src, sshape), d = u64_array(a, dshape);
  vh5_status st = vh5_copy_many_slices(&s, &d, 2, b, b + 2, b + 4, NULL, NULL, 0);
  CHECKF(st == VH5_OK, "%s", last_msg());
  CHECK(a[2] == 2 && a[3] == 100 && b[3] == 100);
  CHECKF(a[40] == 2, "row 1 must use its dst_start as passed (40)");
  int outside = 0;
  for (size_t k = 64; k < bytes / 8; k++) outside |= a[k] != 0;
  CHECKF(!outside, "written outside dst");
  munmap(a, bytes);
  munmap(b, bytes);
}

static void payload_written_inside_the_message(void) {
  /* tag 86 (float64 little-endian typed array) of [1.5], then spare bytes */
  uint64_t storage[4] = {0, 0, 0, 0};
  uint8_t *m = (uint8_t *)storage;
  const uint8_t head[3] = {0xd8, 86, 0x48};
  const double v = 1.5;
  memcpy(m, head, 3);
  memcpy(m + 3, &v, 8);
  uint8_t before[32];
  memcpy(before, m, 32);
  double out = 0;
  vh5_status st = payload_copy_data(m, 11, &out, sizeof out, (size_t *)(void *)(m + 8));
  CHECK(st == VH5_ERR_INVALID_ARGUMENT);
  CHECKF(strstr(last_msg(), "`written`") && strstr(last_msg(), "byte offset 8"), "%s", last_msg());
  CHECK(memcmp(before, m, 32) == 0);
  size_t written = 0;
  st = payload_copy_data(m, 11, &out, sizeof out, &written);
  CHECKF(st == VH5_OK && written == 8 && out == 1.5, "%s", last_msg());
}

int main(void) {
  tables_in_a_second_mapping();
  payload_written_inside_the_message();
  return finish("test_aliasing");
}
