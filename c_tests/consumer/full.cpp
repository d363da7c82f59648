// Consumer of an installed vh5 (C++11): payload copy and a many-slice read into a
// Fortran-order destination, through the C ABI in vh5.h.
//
// Built only with -DVH5_CONSUMER_FULL=ON and linked with vh5::vh5 and libhdf5.
// Usage: consumer_full_cxx FILE.h5 — creates FILE.h5 with libhdf5, reads it through vh5 and
// compares with values computed here. The payload is the shared vector `max_axis0_i32_2x3`
// (serde_cbor 0.11.2 replica of a reductionist-rs 0.13.1 CBORResponse, 7 keys).
#include <vh5.h>
#include <hdf5.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string &what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
    ++failures;
  }
}

// Throws with the status name and vh5's message when a call fails.
void must(vh5_status st, const char *what) {
  if (st != VH5_OK) {
    std::string msg(512, '\0');
    msg.resize(std::min(vh5_last_error_message(&msg[0], msg.size()), msg.size() - 1));
    throw std::runtime_error(std::string(what) + " -> " + vh5_status_name(st) + ": " + msg);
  }
}

// Closes a vh5 handle at scope exit.
struct Handle {
  int64_t id = -1;
  Handle() = default;
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  ~Handle() {
    if (id >= 0) vh5_close(id);
  }
};

const std::vector<uint8_t> kPayload = {
    0xa7, 0x65, 0x62, 0x79, 0x74, 0x65, 0x73, 0x4c, 0x04, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x06,
    0x00, 0x00, 0x00, 0x65, 0x64, 0x74, 0x79, 0x70, 0x65, 0x65, 0x69, 0x6e, 0x74, 0x33, 0x32, 0x65, 0x73,
    0x68, 0x61, 0x70, 0x65, 0x81, 0x03, 0x6e, 0x73, 0x68, 0x61, 0x70, 0x65, 0x5f, 0x61, 0x73, 0x5f, 0x62,
    0x79, 0x74, 0x65, 0x73, 0x40, 0x65, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x83, 0x02, 0x02, 0x02, 0x6e, 0x63,
    0x6f, 0x75, 0x6e, 0x74, 0x5f, 0x61, 0x73, 0x5f, 0x62, 0x79, 0x74, 0x65, 0x73, 0x40, 0x6a, 0x62, 0x79,
    0x74, 0x65, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x66, 0x6c, 0x69, 0x74, 0x74, 0x6c, 0x65};

void test_payload() {
  payload_view view;
  must(payload_decode_view(kPayload.data(), kPayload.size(), 0, &view), "payload_decode_view");
  check(view.ndim == 1 && view.shape[0] == 3, "payload shape is [3]");
  std::vector<int32_t> values(view.nelements);
  size_t written = 0;
  must(payload_copy_data(kPayload.data(), kPayload.size(), values.data(), values.size() * sizeof(int32_t), &written),
       "payload_copy_data");
  check(written == 3 * sizeof(int32_t) && values == std::vector<int32_t>({4, 5, 6}), "payload data is [4, 5, 6]");
  std::vector<int64_t> counts(view.count_len);
  must(payload_decode_count(kPayload.data(), kPayload.size(), counts.data(), counts.size(), &written),
       "payload_decode_count");
  check(written == 3 && counts == std::vector<int64_t>({2, 2, 2}), "payload count is [2, 2, 2]");
}

const hsize_t kRows = 5, kCols = 7;

double source_value(uint64_t r, uint64_t c) { return static_cast<double>(r) + 0.5 * static_cast<double>(c); }

// FILE:/f64 — float64 5x7, contiguous.
void create_file(const std::string &path) {
  std::vector<double> data(kRows * kCols);
  for (hsize_t r = 0; r < kRows; ++r)
    for (hsize_t c = 0; c < kCols; ++c) data[r * kCols + c] = source_value(r, c);
  const hsize_t dims[2] = {kRows, kCols};
  hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t dset = H5Dcreate2(file, "f64", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0 || space < 0 || dset < 0 ||
      H5Dwrite(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
    throw std::runtime_error("cannot create " + path + " with libhdf5");
  H5Dclose(dset);
  H5Sclose(space);
  H5Fclose(file);
}

void test_hdf5(const std::string &path) {
  create_file(path);
  Handle file, dset;
  must(vh5_file_open(path.c_str(), 0, &file.id), "vh5_file_open");
  must(vh5_dataset_open(file.id, "f64", &dset.id), "vh5_dataset_open");

  // Destination: float64 4x3 in Fortran order (axis 0 varies fastest), strides in BYTES.
  const uint64_t shape[2] = {4, 3};
  const int64_t strides[2] = {sizeof(double), 4 * sizeof(double)};
  std::vector<double> out(12, -1.0);
  vh5_array dst = {};
  dst.base = out.data();
  dst.base_len = out.size() * sizeof(double);
  dst.offset = 0;
  dst.dtype = VH5_DTYPE_FLOAT64;
  dst.itemsize = sizeof(double);
  dst.ndim = 2;
  dst.shape = shape;
  dst.strides = strides;
  // One slice (ELEMENTS): src rows 1..4 (step 1) x columns 1,3,5 (step 2),
  // into dst rows 0..3 x columns 0..2.
  const uint64_t src_start[2] = {1, 1}, dst_start[2] = {0, 0}, count[2] = {4, 3};
  const uint64_t src_step[2] = {1, 2}, dst_step[2] = {1, 1};
  must(vh5_read_many_slices(dset.id, &dst, 1, src_start, dst_start, count, src_step, dst_step, 0),
       "vh5_read_many_slices");
  for (uint64_t i = 0; i < 4; ++i)
    for (uint64_t j = 0; j < 3; ++j) {
      const double want = source_value(1 + i, 1 + 2 * j);
      check(out[i + 4 * j] == want,
            "dst[" + std::to_string(i) + "][" + std::to_string(j) + "] == " + std::to_string(want));
    }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE.h5 (created by this program)\n", argv[0]);
    return 2;
  }
  try {
    test_payload();
    test_hdf5(argv[1]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
  if (failures) {
    std::fprintf(stderr, "consumer full (C++): %d failure(s)\n", failures);
    return 1;
  }
  std::printf("consumer full (C++): payload copy and Fortran-order many-slice read OK\n");
  return 0;
}
