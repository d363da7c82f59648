/* C test of payload_decode_document through include/vh5.h: the two-call pattern on a msgpack
 * document holding two msgpack-numpy arrays inside a map and a list (the shape of
 * xarray.Dataset.to_dict("array") packed with msgpack_numpy.encode), and a CBOR document with
 * an RFC 8746 typed array; windows of one item (payload_decode_document_range) equal the whole
 * list; a Reductionist map stays a map with its "bytes" value the array; errors: truncation,
 * NULL arguments, unknown format. */
#include "vh5.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* msgpack-numpy map {b"nd": true, b"type": "<f8", b"kind": b"", b"shape": [2], b"data": <16 bytes>} */
static size_t put_array(uint8_t *o, double a, double b) {
  size_t n = 0;
  const uint8_t head[] = {0x85, 0xc4, 2, 'n', 'd', 0xc3, 0xc4, 4, 't', 'y', 'p', 'e', 0xa3, '<', 'f', '8',
                          0xc4, 4, 'k', 'i', 'n', 'd', 0xc4, 0, 0xc4, 5, 's', 'h', 'a', 'p', 'e', 0x91, 0x02,
                          0xc4, 4, 'd', 'a', 't', 'a', 0xc4, 16};
  memcpy(o, head, sizeof head);
  n = sizeof head;
  memcpy(o + n, &a, 8);  /* little-endian host assumed by the "<f8" type below */
  memcpy(o + n + 8, &b, 8);
  return n + 16;
}

static void msgpack_document(void) {
  /* {"x": <array [1.5, 2.5]>, "list": [7, -2, "s", <array [3, 4]>]} */
  uint8_t m[256];
  size_t n = 0;
  uint16_t probe = 1;
  if (*(uint8_t *)&probe != 1) return; /* the test data is little-endian */
  m[n++] = 0x82;
  m[n++] = 0xa1; m[n++] = 'x';
  n += put_array(m + n, 1.5, 2.5);
  m[n++] = 0xa4; memcpy(m + n, "list", 4); n += 4;
  m[n++] = 0x94; m[n++] = 0x07; m[n++] = 0xfe; m[n++] = 0xa1; m[n++] = 's';
  n += put_array(m + n, 3.0, 4.0);

  size_t ni = 0, nv = 0;
  vh5_status st = payload_decode_document(m, n, PAYLOAD_DOC_AUTO, NULL, 0, NULL, 0, &ni, &nv);
  CHECK(st == VH5_ERR_BUFFER_TOO_SMALL);
  CHECK(ni == 9 && nv == 2);
  payload_item *items = calloc(ni, sizeof *items);
  payload_view *views = calloc(nv, sizeof *views);
  st = payload_decode_document(m, n, PAYLOAD_DOC_AUTO, items, ni, views, nv, &ni, &nv);
  CHECK(st == VH5_OK);
  CHECK(ni == 9 && nv == 2);
  CHECK(items[0].kind == PAYLOAD_ITEM_MAP && items[0].parent == PAYLOAD_NO_PARENT && items[0].children == 4);
  CHECK(items[1].kind == PAYLOAD_ITEM_TEXT && items[1].data_len == 1 && m[items[1].data_offset] == 'x');
  CHECK(items[2].kind == PAYLOAD_ITEM_ARRAY_VIEW && items[2].value == 0 && items[2].parent == 0 && items[2].position == 1);
  CHECK(items[4].kind == PAYLOAD_ITEM_ARRAY && items[4].children == 4);
  CHECK(items[5].kind == PAYLOAD_ITEM_UINT && items[5].value == 7 && items[5].parent == 4);
  CHECK(items[6].kind == PAYLOAD_ITEM_NEGINT && items[6].value == 1); /* -1 - 1 = -2 */
  CHECK(items[8].kind == PAYLOAD_ITEM_ARRAY_VIEW && items[8].value == 1 && items[8].position == 3);
  CHECK(views[0].format == PAYLOAD_FORMAT_MSGPACK_NUMPY && views[0].dtype == VH5_DTYPE_FLOAT64);
  CHECK(views[0].ndim == 1 && views[0].shape[0] == 2 && views[0].data >= m && views[0].data + 16 <= m + n);
  CHECK(load_f64(views[0].data) == 1.5 && load_f64(views[1].data + 8) == 4.0);
  CHECK(views[1].data_offset == items[8].data_offset);

  /* every truncation is an error with zero counts */
  for (size_t cut = 0; cut < n; cut++) {
    st = payload_decode_document(m, cut, PAYLOAD_DOC_MSGPACK, items, 9, views, 2, &ni, &nv);
    CHECK(st == VH5_ERR_MALFORMED);
    CHECK(ni == 0 && nv == 0);
  }
  CHECK(payload_decode_document(m, n, 7, items, 9, views, 2, &ni, &nv) == VH5_ERR_INVALID_ARGUMENT);
  CHECK(payload_decode_document(m, n, 0, NULL, 9, views, 2, &ni, &nv) == VH5_ERR_NULL_ARGUMENT);
  CHECK(payload_decode_document(m, n, 0, items, 9, views, 2, NULL, &nv) == VH5_ERR_NULL_ARGUMENT);

  /* the same items one window at a time, with their views numbered from the count of views
   * before the window (each walk stops once its window is final, the msgpack-numpy maps
   * already rolled back into views) */
  st = payload_decode_document(m, n, PAYLOAD_DOC_MSGPACK, items, 9, views, 2, &ni, &nv);
  CHECK(st == VH5_OK);
  size_t seen_views = 0;
  for (size_t first = 0; first < 9; first++) {
    payload_item one;
    payload_view v;
    size_t wn = 0, wv = 0;
    st = payload_decode_document_range(m, n, PAYLOAD_DOC_MSGPACK, first, &one, 1, seen_views, &v, 1, &wn, &wv);
    CHECK(st == VH5_OK && wn > first);
    CHECK(memcmp(&one, &items[first], sizeof one) == 0);
    if (one.kind == PAYLOAD_ITEM_ARRAY_VIEW) {
      CHECK(one.value == seen_views && v.data == views[seen_views].data && v.nelements == 2);
      seen_views++;
    }
  }
  CHECK(seen_views == 2);
  uint32_t fmt = 0;
  CHECK(payload_document_format(m, n, &fmt) == VH5_OK && fmt == PAYLOAD_DOC_MSGPACK);
  free(items);
  free(views);
}

static void cbor_document(void) {
  /* [_ "a", 86(h'000000000000F83F'), {"k": null}] as CBOR (array given explicitly) */
  const uint8_t m[] = {0x9f, 0x61, 'a', 0xd8, 86, 0x48, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0xa1, 0x61, 'k', 0xf6, 0xff};
  payload_item items[8];
  payload_view views[1];
  size_t ni = 0, nv = 0;
  vh5_status st = payload_decode_document(m, sizeof m, PAYLOAD_DOC_CBOR, items, 8, views, 1, &ni, &nv);
  CHECK(st == VH5_OK);
  CHECK(ni == 6 && nv == 1);
  CHECK(items[0].kind == PAYLOAD_ITEM_ARRAY && (items[0].flags & PAYLOAD_ITEM_INDEFINITE) && items[0].children == 3);
  CHECK(items[2].kind == PAYLOAD_ITEM_ARRAY_VIEW && views[0].format == PAYLOAD_FORMAT_TYPED_ARRAY);
  CHECK(views[0].data_offset == 6 && views[0].byte_order == VH5_ORDER_LITTLE && views[0].nelements == 1);
  CHECK(items[5].kind == PAYLOAD_ITEM_NIL && items[5].parent == 3 && items[5].position == 1);
  /* a scalar first byte is valid in both formats: auto refuses to guess */
  st = payload_decode_document(m + 1, 2, PAYLOAD_DOC_AUTO, items, 8, views, 1, &ni, &nv);
  CHECK(st == VH5_ERR_INVALID_ARGUMENT);

  /* {"bytes": h'01000000', "dtype": "int32", "count": [3]}: a map of 3 entries whose "bytes"
   * value is the array (shape [] as Reductionist means a missing shape); count kept as items */
  const uint8_t r[] = {0xa3, 0x65, 'b', 'y', 't', 'e', 's', 0x44, 1, 0, 0, 0, 0x65, 'd', 't', 'y', 'p', 'e',
                       0x65, 'i', 'n', 't', '3', '2', 0x65, 'c', 'o', 'u', 'n', 't', 0x81, 0x03};
  st = payload_decode_document(r, sizeof r, PAYLOAD_DOC_CBOR, items, 8, views, 1, &ni, &nv);
  CHECK(st == VH5_OK && ni == 8 && nv == 1);
  CHECK(items[0].kind == PAYLOAD_ITEM_MAP && items[0].children == 6);
  CHECK(items[2].kind == PAYLOAD_ITEM_ARRAY_VIEW && items[2].parent == 0 && items[2].position == 1);
  CHECK(views[0].format == PAYLOAD_FORMAT_REDUCTIONIST && views[0].ndim == 0 && views[0].data_offset == 8);
  CHECK(items[6].kind == PAYLOAD_ITEM_ARRAY && items[7].kind == PAYLOAD_ITEM_UINT && items[7].value == 3);
}

int main(void) {
  msgpack_document();
  cbor_document();
  return finish("test_document");
}
