/* C test of the payload ABI: payload_decode_view / payload_decode_count / payload_copy_data
 * through include/vh5.h. Builds messages by hand, and reads the shared server responses
 * (VH5_SHARED_DATA/payloads/server) when present (embedded copies of two are used otherwise).
 * Elements are read with memcpy (unaligned-safe). */
#include "vh5.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* serde_cbor layout of a Reductionist 0.13.1 response: sum over axis 0 -> float64 [2],
 * count [3, 300], little-endian. */
static const uint8_t v0131[] = {
  0xa7,
  0x65, 'b', 'y', 't', 'e', 's', 0x50,
  0, 0, 0, 0, 0, 0, 0xf8, 0x3f,   /* 1.5 */
  0, 0, 0, 0, 0, 0, 0x04, 0xc0,   /* -2.5 */
  0x65, 'd', 't', 'y', 'p', 'e', 0x67, 'f', 'l', 'o', 'a', 't', '6', '4',
  0x65, 's', 'h', 'a', 'p', 'e', 0x81, 0x02,
  0x6e, 's', 'h', 'a', 'p', 'e', '_', 'a', 's', '_', 'b', 'y', 't', 'e', 's', 0x40,
  0x65, 'c', 'o', 'u', 'n', 't', 0x82, 0x03, 0x19, 0x01, 0x2c,
  0x6e, 'c', 'o', 'u', 'n', 't', '_', 'a', 's', '_', 'b', 'y', 't', 'e', 's', 0x40,
  0x6a, 'b', 'y', 't', 'e', '_', 'o', 'r', 'd', 'e', 'r', 0x66, 'l', 'i', 't', 't', 'l', 'e',
};

/* the first shared vector rs_test_cbor_response: 3 data bytes for int32 x [3, 2, 1] */
static const char *rs_test_hex =
  "a76562797465734301020365647479706565696e7433326573686170658303020"
  "16e73686170655f61735f62797465734065636f756e74830301026e636f756e74"
  "5f61735f6279746573406a627974655f6f72646572666c6974746c65";

static size_t unhex(const char *h, uint8_t *out, size_t cap) {
  size_t n = strlen(h) / 2, i;
  if (n > cap) return 0;
  for (i = 0; i < n; i++) {
    unsigned v;
    sscanf(h + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
  return n;
}

static uint8_t *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  long n;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = (uint8_t *)malloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); fclose(f); return NULL; }
  fclose(f);
  *len = (size_t)n;
  return buf;
}

static void test_built_message(void) {
  payload_view v;
  int64_t counts[4] = {-1, -1, -1, -1};
  size_t written = 99;
  double out[2];
  vh5_status st = payload_decode_view(v0131, sizeof v0131, 0, &v);
  CHECK(st == VH5_OK);
  CHECK(v.format == PAYLOAD_FORMAT_REDUCTIONIST);
  CHECK(v.layout == PAYLOAD_LAYOUT_REDUCTIONIST_0_13_1);
  CHECK(v.dtype == VH5_DTYPE_FLOAT64 && v.itemsize == 8);
  CHECK(v.byte_order == VH5_ORDER_LITTLE);
  CHECK(v.ndim == 1 && v.shape[0] == 2 && v.shape[1] == 0 && v.nelements == 2);
  CHECK(v.data == v0131 + 8 && v.data_offset == 8 && v.data_len == 16);
  CHECK(load_f64(v.data) == 1.5 && load_f64(v.data + 8) == -2.5);
  CHECK(v.aligned == (((uintptr_t)v.data % 8) == 0));
  CHECK(v.count_form == PAYLOAD_COUNT_ARRAY && v.count_len == 2 && v.count_data == NULL);
  CHECK(v.count_dtype == VH5_DTYPE_INT64);

  st = payload_decode_count(v0131, sizeof v0131, counts, 4, &written);
  CHECK(st == VH5_OK && written == 2 && counts[0] == 3 && counts[1] == 300 && counts[2] == -1);
  /* too small: nothing written beyond cap, *written = needed, message names 2 */
  counts[1] = -1;
  st = payload_decode_count(v0131, sizeof v0131, counts, 1, &written);
  CHECK(st == VH5_ERR_BUFFER_TOO_SMALL && written == 2 && counts[1] == -1);
  CHECK(strstr(last_msg(), "2 elements") != NULL);

  st = payload_copy_data(v0131, sizeof v0131, out, sizeof out, &written);
  CHECK(st == VH5_OK && written == 16 && out[0] == 1.5 && out[1] == -2.5);
  st = payload_copy_data(v0131, sizeof v0131, out, 15, &written);
  CHECK(st == VH5_ERR_BUFFER_TOO_SMALL && written == 16);

  /* every truncation is MALFORMED and zeroes the view */
  {
    size_t i;
    for (i = 0; i < sizeof v0131; i++) {
      memset(&v, 0xab, sizeof v);
      st = payload_decode_view(v0131, i, 0, &v);
      CHECK(st == VH5_ERR_MALFORMED);
      CHECK(v.data == NULL && v.ndim == 0 && v.format == 0 && v.count_len == 0);
    }
  }
  /* error paths: null args, bad flags */
  CHECK(payload_decode_view(v0131, sizeof v0131, 0, NULL) == VH5_ERR_NULL_ARGUMENT);
  CHECK(payload_decode_view(NULL, 10, 0, &v) == VH5_ERR_NULL_ARGUMENT);
  CHECK(strstr(last_msg(), "buf") != NULL);
  CHECK(payload_decode_view(v0131, sizeof v0131, 4, &v) == VH5_ERR_INVALID_ARGUMENT);
  CHECK(strstr(last_msg(), "flag") != NULL);
  CHECK(payload_decode_count(v0131, sizeof v0131, counts, 4, NULL) == VH5_ERR_NULL_ARGUMENT);
  CHECK(payload_decode_count(v0131, sizeof v0131, NULL, 4, &written) == VH5_ERR_NULL_ARGUMENT);
  CHECK(payload_copy_data(v0131, sizeof v0131, NULL, 16, &written) == VH5_ERR_NULL_ARGUMENT);
  /* flags: REQUIRE_ALIGNED on an odd-offset copy */
  {
    uint8_t shifted[sizeof v0131 + 8];
    size_t off = (size_t)((9 - (uintptr_t)shifted % 8) % 8); /* buf % 8 == 1: data at buf+8 misaligned */
    memcpy(shifted + off, v0131, sizeof v0131);
    st = payload_decode_view(shifted + off, sizeof v0131, PAYLOAD_REQUIRE_ALIGNED, &v);
    CHECK(st == VH5_ERR_MISALIGNED);
    CHECK(strstr(last_msg(), "aligned") != NULL);
    st = payload_decode_view(shifted + off, sizeof v0131, PAYLOAD_REQUIRE_NATIVE, &v);
    CHECK(st == VH5_OK && v.aligned == 0 && load_f64(v.data) == 1.5);
  }
}

static void test_big_endian_typed_array(void) {
  /* RFC 8746 tag 82: float64 big-endian [1.0, -2.0] */
  static const uint8_t m[] = {0xd8, 82, 0x50, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0};
  payload_view v;
  double out[2];
  size_t w;
  CHECK(payload_decode_view(m, sizeof m, 0, &v) == VH5_OK);
  CHECK(v.format == PAYLOAD_FORMAT_TYPED_ARRAY && v.layout == PAYLOAD_LAYOUT_NONE);
  CHECK(v.byte_order == VH5_ORDER_BIG && v.needs_swap == 1 && v.count_form == PAYLOAD_COUNT_ABSENT);
  CHECK(payload_decode_view(m, sizeof m, PAYLOAD_REQUIRE_NATIVE, &v) == VH5_ERR_BYTE_ORDER);
  CHECK(payload_copy_data(m, sizeof m, out, sizeof out, &w) == VH5_OK && out[0] == 1.0 && out[1] == -2.0);
}

static void test_malformed_vector(void) {
  uint8_t buf[256];
  size_t n = unhex(rs_test_hex, buf, sizeof buf);
  payload_view v;
  CHECK(n == 93);
  CHECK(payload_decode_view(buf, n, 0, &v) == VH5_ERR_MALFORMED);
  CHECK(strstr(last_msg(), "3 bytes") != NULL && strstr(last_msg(), "24 bytes") != NULL);
  CHECK(strcmp(vh5_status_name(VH5_ERR_MALFORMED), "VH5_ERR_MALFORMED") == 0);
}

static void test_shared_server(void) {
  const char *dir = getenv("VH5_SHARED_DATA");
  char path[1024];
  uint8_t *buf;
  size_t len, w;
  payload_view v;
  if (!dir) { printf("test_payload: VH5_SHARED_DATA unset, skipping shared server responses\n"); return; }
  snprintf(path, sizeof path, "%s/payloads/server/min_f64_axis0_missing.cbor", dir);
  buf = read_file(path, &len);
  if (!buf) { printf("test_payload: %s absent, skipping shared server responses\n", path); return; }
  /* index.json: float64 [5, 6], values[0] = 15.0, values[1] = -28.5, count[0..] listed,
   * data at byte 9 (not 8-aligned relative to the message start) */
  CHECK(payload_decode_view(buf, len, 0, &v) == VH5_OK);
  CHECK(v.ndim == 2 && v.shape[0] == 5 && v.shape[1] == 6 && v.data_offset == 9);
  CHECK(load_f64(v.data) == 15.0 && load_f64(v.data + 8) == -28.5);
  CHECK(load_f64(v.data + 15 * 8) == 1.7976931348623157e+308);
  {
    int64_t counts[30];
    CHECK(payload_decode_count(buf, len, counts, 30, &w) == VH5_OK && w == 30);
  }
  free(buf);

  snprintf(path, sizeof path, "%s/payloads/server/select_f64_strides_both_as_bytes.cbor", dir);
  buf = read_file(path, &len);
  if (buf) {
    int64_t c = 0;
    CHECK(payload_decode_view(buf, len, 0, &v) == VH5_OK);
    CHECK(v.count_form == PAYLOAD_COUNT_BYTES && v.count_len == 1 && v.count_dtype == VH5_DTYPE_INT64);
    CHECK(v.count_data == buf + v.count_offset);
    CHECK(load_i64(v.count_data) > 0);
    CHECK(payload_decode_count(buf, len, &c, 1, &w) == VH5_OK && w == 1 && c == load_i64(v.count_data));
    CHECK(v.ndim == 3 && v.shape[0] == 2 && v.shape[1] == 2 && v.shape[2] == 2);
    free(buf);
  }

  snprintf(path, sizeof path, "%s/payloads/server/error_missing_object.body", dir);
  buf = read_file(path, &len);
  if (buf) {
    CHECK(payload_decode_view(buf, len, 0, &v) == VH5_ERR_SERVER_ERROR);
    CHECK(strstr(last_msg(), "this is a JSON error body from the server: error retrieving object from S3 storage") != NULL);
    CHECK(strstr(last_msg(), "NoSuchKey") != NULL);
    free(buf);
  }
}

static void test_nested_and_scalar_counts(void) {
  /* {"bytes": h'0000c03f 00000040 00004040' (float32 1.5, 2, 3), "dtype": "float32",
      "shape": [3], "count": [[1, 2], [3]]}: a nested count flattens to one per element */
  static const uint8_t m[] = {0xa4, 0x65, 'b', 'y', 't', 'e', 's', 0x4c, 0, 0, 0xc0, 0x3f, 0, 0, 0, 0x40, 0, 0, 0x40, 0x40,
                              0x65, 'd', 't', 'y', 'p', 'e', 0x67, 'f', 'l', 'o', 'a', 't', '3', '2',
                              0x65, 's', 'h', 'a', 'p', 'e', 0x81, 0x03,
                              0x65, 'c', 'o', 'u', 'n', 't', 0x82, 0x82, 0x01, 0x02, 0x81, 0x03};
  /* the same with "shape": [] (one element): three counts fit no rule (one, or one per element) */
  static const uint8_t bad[] = {0xa4, 0x65, 'b', 'y', 't', 'e', 's', 0x44, 0, 0, 0xc0, 0x3f,
                                0x65, 'd', 't', 'y', 'p', 'e', 0x67, 'f', 'l', 'o', 'a', 't', '3', '2',
                                0x65, 's', 'h', 'a', 'p', 'e', 0x80,
                                0x65, 'c', 'o', 'u', 'n', 't', 0x82, 0x82, 0x01, 0x02, 0x81, 0x03};
  payload_view v;
  int64_t c[3];
  size_t w;
  float f;
  CHECK(payload_decode_view(m, sizeof m, 0, &v) == VH5_OK);
  CHECK(v.layout == PAYLOAD_LAYOUT_CLIENT && v.ndim == 1 && v.nelements == 3);
  memcpy(&f, v.data, 4);
  CHECK(f == 1.5f);
  CHECK(v.count_form == PAYLOAD_COUNT_ARRAY && v.count_len == 3);
  CHECK(payload_decode_count(m, sizeof m, c, 3, &w) == VH5_OK && w == 3 && c[0] == 1 && c[1] == 2 && c[2] == 3);
  CHECK(payload_decode_view(bad, sizeof bad, 0, &v) == VH5_ERR_MALFORMED);
}

int main(void) {
  test_built_message();
  test_big_endian_typed_array();
  test_malformed_vector();
  test_nested_and_scalar_counts();
  test_shared_server();
  return finish("test_payload");
}
