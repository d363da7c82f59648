/* Consumer of an installed vh5 (C99): payload views and many-slice HDF5 reads.
 *
 * Built only with -DVH5_CONSUMER_FULL=ON (needs a vh5.h that declares payload_* and
 * vh5_read_many_slices) and linked with vh5::vh5 and libhdf5 (find_package(HDF5)).
 * Usage: consumer_full_c FILE.h5 — the program creates FILE.h5 itself with libhdf5, then
 * reads it back through vh5 and compares with values computed independently here.
 *
 * The payload is a real Reductionist response: serde_cbor 0.11.2 encoding of
 * reductionist-rs CBORResponse 0.13.1 (7 keys) for max over axis 0 of a 2x3 int32 array
 * (shared test vector `max_axis0_i32_2x3`): {bytes: int32 [4,5,6] LE, dtype: "int32",
 * shape: [3], shape_as_bytes: b"", count: [2,2,2], count_as_bytes: b"", byte_order: "little"}. */
#include <vh5.h>
#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
      failures++;                                                          \
    }                                                                      \
  } while (0)

/* Call a vh5 function that must succeed; on failure print status and message and stop. */
#define MUST(call)                                                         \
  do {                                                                     \
    vh5_status st_ = (call);                                               \
    if (st_ != VH5_OK) {                                                   \
      char m_[512];                                                        \
      vh5_last_error_message(m_, sizeof m_);                               \
      fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__,    \
              #call, vh5_status_name(st_), m_);                            \
      exit(1);                                                             \
    }                                                                      \
  } while (0)

/* Expect a failure with status `want` and a non-empty message naming the culprit. */
static void expect_status(vh5_status got, vh5_status want, const char *what) {
  char msg[512];
  size_t len = vh5_last_error_message(msg, sizeof msg);
  if (got != want) {
    fprintf(stderr, "FAIL: %s: got %s, want %s\n", what, vh5_status_name(got), vh5_status_name(want));
    failures++;
  } else if (len == 0) {
    fprintf(stderr, "FAIL: %s: %s without a message\n", what, vh5_status_name(got));
    failures++;
  } else {
    printf("  expected %s for %s: %s\n", vh5_status_name(got), what, msg);
  }
}

static const uint8_t REDUCTIONIST_MAX_AXIS0_I32_2X3[100] = {
    0xa7, 0x65, 0x62, 0x79, 0x74, 0x65, 0x73, 0x4c, 0x04, 0x00, 0x00, 0x00,
    0x05, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x65, 0x64, 0x74, 0x79,
    0x70, 0x65, 0x65, 0x69, 0x6e, 0x74, 0x33, 0x32, 0x65, 0x73, 0x68, 0x61,
    0x70, 0x65, 0x81, 0x03, 0x6e, 0x73, 0x68, 0x61, 0x70, 0x65, 0x5f, 0x61,
    0x73, 0x5f, 0x62, 0x79, 0x74, 0x65, 0x73, 0x40, 0x65, 0x63, 0x6f, 0x75,
    0x6e, 0x74, 0x83, 0x02, 0x02, 0x02, 0x6e, 0x63, 0x6f, 0x75, 0x6e, 0x74,
    0x5f, 0x61, 0x73, 0x5f, 0x62, 0x79, 0x74, 0x65, 0x73, 0x40, 0x6a, 0x62,
    0x79, 0x74, 0x65, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x66, 0x6c, 0x69,
    0x74, 0x74, 0x6c, 0x65,
};

static void test_payload(void) {
  const uint8_t *buf = REDUCTIONIST_MAX_AXIS0_I32_2X3;
  const size_t len = sizeof REDUCTIONIST_MAX_AXIS0_I32_2X3;
  payload_view v;
  int32_t values[3] = {0, 0, 0};
  int64_t counts[8];
  size_t written = 0;

  MUST(payload_decode_view(buf, len, 0, &v));
  CHECK(v.dtype == VH5_DTYPE_INT32);
  CHECK(v.itemsize == 4);
  CHECK(v.byte_order == VH5_ORDER_LITTLE);
  CHECK(v.ndim == 1 && v.shape[0] == 3 && v.nelements == 3);
  /* The bytes value starts right after the 1-byte map header, 6-byte key and 1-byte
   * byte-string header: offset 8, 12 bytes, pointing into our own buffer (zero copy). */
  CHECK(v.data_offset == 8 && v.data_len == 12 && v.data == buf + 8);
  CHECK(v.count_len == 3);

  MUST(payload_copy_data(buf, len, values, sizeof values, &written));
  CHECK(written == sizeof values);
  CHECK(values[0] == 4 && values[1] == 5 && values[2] == 6);

  MUST(payload_decode_count(buf, len, counts, 8, &written));
  CHECK(written == 3);
  CHECK(counts[0] == 2 && counts[1] == 2 && counts[2] == 2);

  /* Truncated input: an error naming the problem, and the view left zeroed. */
  memset(&v, 0xff, sizeof v);
  expect_status(payload_decode_view(buf, 50, 0, &v), VH5_ERR_MALFORMED, "payload truncated at byte 50");
  CHECK(v.ndim == 0 && v.data == NULL && v.data_len == 0);
  /* A destination one element short is refused, never overrun. */
  expect_status(payload_copy_data(buf, len, values, 2 * sizeof(int32_t), &written), VH5_ERR_BUFFER_TOO_SMALL,
                "payload_copy_data into 8 bytes");
}

enum { ROWS = 6, COLS = 8 };

static int32_t source_value(uint64_t r, uint64_t c) { return (int32_t)(r * 100 + c); }

/* Create FILE with dataset "grid": int32 6x8, chunks 4x4, deflate when available. */
static void create_file(const char *path) {
  hsize_t dims[2] = {ROWS, COLS}, chunk[2] = {4, 4};
  int32_t data[ROWS][COLS];
  hid_t file, space, dcpl, dset;
  int r, c;
  for (r = 0; r < ROWS; r++)
    for (c = 0; c < COLS; c++) data[r][c] = source_value((uint64_t)r, (uint64_t)c);
  file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  space = H5Screate_simple(2, dims, NULL);
  dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (file < 0 || space < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 2, chunk) < 0) {
    fprintf(stderr, "cannot create %s with libhdf5\n", path);
    exit(1);
  }
  if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) H5Pset_deflate(dcpl, 4);
  dset = H5Dcreate2(file, "grid", H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dset < 0 || H5Dwrite(dset, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    fprintf(stderr, "cannot write %s:/grid with libhdf5\n", path);
    exit(1);
  }
  H5Dclose(dset);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Fclose(file);
}

static void test_hdf5(const char *path) {
  int64_t file = -1, dset = -1, missing = -1;
  /* Destination: int32 3x4, C order, strides in BYTES. */
  int32_t out[3][4];
  const uint64_t shape[2] = {3, 4};
  const int64_t strides[2] = {4 * (int64_t)sizeof(int32_t), (int64_t)sizeof(int32_t)};
  vh5_array dst;
  /* Two slices, ELEMENTS per axis. Slice 0: src rows 1..2, every 2nd column from 0 ->
   * dst rows 0..1. Slice 1: src row 0, every 2nd column from 1 -> dst row 2. */
  const uint64_t src_start[2 * 2] = {1, 0, 0, 1};
  const uint64_t dst_start[2 * 2] = {0, 0, 2, 0};
  const uint64_t count[2 * 2] = {2, 4, 1, 4};
  const uint64_t src_step[2 * 2] = {1, 2, 1, 2};
  const uint64_t dst_step[2 * 2] = {1, 1, 1, 1};
  /* One slice reaching row 6 of a 6-row dataset. */
  const uint64_t bad_start[2] = {5, 0}, bad_count[2] = {2, 4}, ones[2] = {1, 1}, zeros[2] = {0, 0};
  size_t s, i, j, k;

  create_file(path);
  memset(&dst, 0, sizeof dst);
  dst.base = out;
  dst.base_len = sizeof out;
  dst.offset = 0;
  dst.dtype = VH5_DTYPE_INT32;
  dst.itemsize = sizeof(int32_t);
  dst.ndim = 2;
  dst.shape = shape;
  dst.strides = strides;
  for (i = 0; i < 3; i++)
    for (j = 0; j < 4; j++) out[i][j] = -1;

  MUST(vh5_file_open(path, 0, &file));
  MUST(vh5_dataset_open(file, "grid", &dset));
  MUST(vh5_read_many_slices(dset, &dst, 2, src_start, dst_start, count, src_step, dst_step, 0));
  for (s = 0; s < 2; s++)
    for (i = 0; i < count[2 * s]; i++)
      for (k = 0; k < count[2 * s + 1]; k++) {
        uint64_t sr = src_start[2 * s] + i * src_step[2 * s], sc = src_start[2 * s + 1] + k * src_step[2 * s + 1];
        uint64_t dr = dst_start[2 * s] + i * dst_step[2 * s], dc = dst_start[2 * s + 1] + k * dst_step[2 * s + 1];
        if (out[dr][dc] != source_value(sr, sc)) {
          fprintf(stderr, "FAIL: out[%d][%d] = %d, want grid[%d][%d] = %d\n", (int)dr, (int)dc, (int)out[dr][dc],
                  (int)sr, (int)sc, (int)source_value(sr, sc));
          failures++;
        }
      }

  expect_status(vh5_read_many_slices(dset, &dst, 1, bad_start, zeros, bad_count, ones, ones, 0),
                VH5_ERR_OUT_OF_BOUNDS, "slice rows 5..6 of a 6-row dataset");
  expect_status(vh5_dataset_open(file, "no_such_dataset", &missing), VH5_ERR_NOT_FOUND, "missing dataset name");
  MUST(vh5_close(dset));
  MUST(vh5_close(file));
  expect_status(vh5_file_open("/nonexistent/dir/none.h5", 0, &file), VH5_ERR_IO, "missing file");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE.h5 (created by this program)\n", argv[0]);
    return 2;
  }
  test_payload();
  test_hdf5(argv[1]);
  if (failures) {
    fprintf(stderr, "consumer full (C): %d failure(s)\n", failures);
    return 1;
  }
  printf("consumer full (C): payload view and many-slice read OK (vh5 %s)\n", vh5_version_string());
  return 0;
}
