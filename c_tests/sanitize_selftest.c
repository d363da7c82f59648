/* Self-test of c_tests/sanitize.sh: a DELIBERATELY wrong caller that declares a larger
 * output capacity than it allocated and leaks a buffer. Both checkers must report it
 * (the script fails if either stays silent). Not a test_* program: run.sh skips it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "vh5.h"

int main(void) {
  /* RFC 8746 tag 86 (float64 LE) around 16 bytes: two elements */
  uint8_t msg[3 + 16] = {0xd8, 86, 0x50};
  memset(msg + 3, 0x11, 16);
  uint8_t *out = malloc(8);          /* room for one element ...        */
  size_t written = 0;
  vh5_status st = payload_copy_data(msg, sizeof msg, out, 16, &written); /* ... cap says two */
  void *leak = malloc(64);
  leak = NULL;
  return st == VH5_OK && written == 16 && leak == NULL ? 0 : 2;
}
