// C++17 tests of bindings/cpp/vh5.hpp: RAII handles, exceptions with status + message,
// read_many_slices over std::vector, PayloadView typed access on misaligned and
// big-endian data, count decoding. Values are hand-computed or from h5py (test1.nc).
#include "vh5.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

static int failures = 0;
#define CHECK(cond, what)                                             \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, what); \
      failures++;                                                     \
    }                                                                 \
  } while (0)

template <class F>
static int32_t status_of(F &&f) {
  try {
    f();
  } catch (const vh5::Error &e) {
    return e.status();
  }
  return VH5_OK;
}

static void payloads() {
  // Reductionist 0.13.1 layout: float64 [2] = {1.5, -2.5}, count [3, 300], little-endian.
  // The data starts at byte 8 (after the map head and "bytes" key + byte-string head).
  const std::vector<uint8_t> msg = {
      0xa7, 0x65, 'b', 'y', 't', 'e', 's', 0x50, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, 0, 0, 0, 0, 0, 0, 0x04, 0xc0,
      0x65, 'd', 't', 'y', 'p', 'e', 0x67, 'f', 'l', 'o', 'a', 't', '6', '4', 0x65, 's', 'h', 'a', 'p', 'e', 0x81, 0x02,
      0x6e, 's', 'h', 'a', 'p', 'e', '_', 'a', 's', '_', 'b', 'y', 't', 'e', 's', 0x40, 0x65, 'c', 'o', 'u', 'n', 't',
      0x82, 0x03, 0x19, 0x01, 0x2c, 0x6e, 'c', 'o', 'u', 'n', 't', '_', 'a', 's', '_', 'b', 'y', 't', 'e', 's', 0x40,
      0x6a, 'b', 'y', 't', 'e', '_', 'o', 'r', 'd', 'e', 'r', 0x66, 'l', 'i', 't', 't', 'l', 'e'};
  // Shift by one byte so the data is misaligned for double.
  std::vector<uint8_t> shifted(msg.size() + 1);
  std::copy(msg.begin(), msg.end(), shifted.begin() + 1);
  vh5::PayloadView v(shifted.data() + 1, msg.size());
  CHECK(v.shape() == std::vector<uint64_t>{2}, "shape [2]");
  CHECK(v.dtype() == VH5_DTYPE_FLOAT64, "dtype float64");
  CHECK(v.raw().data_offset == 8, "data offset 8");
  CHECK(v.at<double>(0) == 1.5 && v.at<double>(1) == -2.5, "typed access");
  CHECK((v.to_vector<double>() == std::vector<double>{1.5, -2.5}), "to_vector");
  CHECK((v.counts() == std::vector<int64_t>{3, 300}), "counts");
  CHECK(status_of([&] { v.at<float>(0); }) == VH5_ERR_DTYPE, "wrong T is a dtype error");
  CHECK(status_of([&] { v.at<double>(2); }) == VH5_ERR_OUT_OF_BOUNDS, "index 2 out of bounds");

  // RFC 8746 tag 82 (float64 big-endian) typed array: {1.0, -2.0}; needs a swap on x86.
  const std::vector<uint8_t> be = {0xd8, 82, 0x50, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xc0, 0, 0, 0, 0, 0, 0, 0};
  vh5::PayloadView b(be);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  CHECK(b.needs_swap(), "big-endian data needs a swap on this little-endian host");
#endif
  CHECK(b.at<double>(0) == 1.0 && b.at<double>(1) == -2.0, "big-endian typed access");
  CHECK((b.to_vector<double>() == std::vector<double>{1.0, -2.0}), "big-endian copy in native order");
  CHECK(b.counts().empty(), "no counts");

  // Errors carry status + message.
  const std::vector<uint8_t> truncated(msg.begin(), msg.begin() + 20);
  try {
    vh5::PayloadView t(truncated);
    CHECK(false, "truncated payload must throw");
  } catch (const vh5::Error &e) {
    CHECK(e.status() == VH5_ERR_MALFORMED, "truncated -> MALFORMED");
    CHECK(std::string(e.what()).find("VH5_ERR_MALFORMED") == 0, "what() starts with the status name");
  }
}

static void documents() {
  // CBOR document [_ "a", 86(float64 LE 1.5), {"k": null}] walked by vh5::Document.
  const std::vector<uint8_t> m = {0x9f, 0x61, 'a', 0xd8, 86, 0x48, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f,
                                  0xa1, 0x61, 'k', 0xf6, 0xff};
  vh5::Document d(m, PAYLOAD_DOC_CBOR);
  CHECK(d.items().size() == 6 && d.views().size() == 1, "6 items, 1 view");
  CHECK(d.text(d.items()[1]) == "a", "text item");
  const payload_view &v = d.view(d.items()[2]);
  CHECK(v.dtype == VH5_DTYPE_FLOAT64 && v.data == m.data() + 6, "typed array view into the input");
  CHECK(status_of([&] { d.view(d.items()[1]); }) == VH5_ERR_INVALID_ARGUMENT, "text is not a view");
  const std::vector<uint8_t> cut(m.begin(), m.begin() + 10);
  CHECK(status_of([&] { vh5::Document t(cut, PAYLOAD_DOC_CBOR); }) == VH5_ERR_MALFORMED, "truncated document");
}

static void hdf5(const std::string &dir) {
  const std::string path = dir + "/real/test1.nc";
  if (!std::ifstream(path)) {
    std::printf("SKIP hdf5 part of test_cpp_wrapper: %s not found (set VH5_SHARED_DATA)\n", path.c_str());
    return;
  }
  vh5::File f(path);
  vh5::Dataset d = f.dataset("/tas");
  CHECK((d.shape() == std::vector<uint64_t>{12, 64, 128}), "tas shape");
  // tas[0:12:5, 10, 20:30:4] -> out[0:3, 0, 0:3]; then tas[11, 63, 127] -> out[2, 0, 2].
  std::vector<double> out(9, 0.0);
  vh5::ArrayRef<double> dst{out.data(), out.size(), {3, 1, 3}, {}};
  std::vector<uint64_t> src_start = {0, 10, 20, 11, 63, 127}, dst_start = {0, 0, 0, 2, 0, 2},
                        count = {3, 1, 3, 1, 1, 1}, src_step = {5, 1, 4, 1, 1, 1};
  vh5::read_many_slices(d, dst, src_start, dst_start, count, src_step);
  const double want[9] = {276.3569641113281, 275.7984619140625, 273.9180603027344,
                          279.783935546875,  278.8504638671875, 277.31146240234375,
                          273.4346923828125, 274.2020568847656, 256.9337158203125};
  for (int i = 0; i < 9; i++) CHECK(out[i] == want[i], "tas value");

  // Fortran-order destination through byte strides: element (i,0,k) at i*8 + k*24.
  std::vector<double> fo(9, 0.0);
  vh5::ArrayRef<double> fdst{fo.data(), fo.size(), {3, 1, 3}, {8, 24, 24}};
  vh5::read_many_slices(d, fdst, src_start, dst_start, count, src_step);
  CHECK(fo[0] == want[0] && fo[3] == want[1] && fo[1] == want[3] && fo[8] == want[8], "Fortran-order values");

  std::vector<uint64_t> bad = {0, 10, 20, 11, 63, 128};
  CHECK(status_of([&] { vh5::read_many_slices(d, dst, bad, dst_start, count, src_step); }) == VH5_ERR_OUT_OF_BOUNDS,
        "out of bounds throws OUT_OF_BOUNDS");
  CHECK(status_of([&] { vh5::read_many_slices(d, dst, bad, dst_start, count, src_step, {}, VH5_SLICES_CLIP); }) == VH5_OK,
        "clip mode accepts it");
  std::vector<uint64_t> five = {3, 1, 3, 1, 1};
  try {
    vh5::read_many_slices(d, dst, src_start, dst_start, five, src_step);
    CHECK(false, "a count table of 5 values for ndim 3 must throw");
  } catch (const vh5::Error &e) {
    CHECK(e.status() == VH5_ERR_INVALID_ARGUMENT && std::string(e.what()).find("count has 5 values") != std::string::npos,
          "the message blames the count table");
  }
  // The 0-d dataset `height` (a scalar): ndim 0, empty tables, one element copied.
  vh5::Dataset height = f.dataset("/height");
  double h = -1.0;
  vh5::ArrayRef<double> scalar{&h, 1, {}, {}};
  std::vector<uint64_t> none;
  vh5::read_many_slices(height, scalar, none, none, none);
  CHECK(h == 2.0, "height is 2.0 m in test1.nc");
  std::vector<uint64_t> short_table = {0, 10};
  CHECK(status_of([&] { vh5::read_many_slices(d, dst, short_table, dst_start, count); }) == VH5_ERR_INVALID_ARGUMENT,
        "table of the wrong length");
  CHECK(status_of([&] { f.dataset("/no/such"); }) == VH5_ERR_NOT_FOUND, "missing dataset");
  // Group members: the root lists tas as a dataset; a dataset is not a group.
  auto root = f.members("/");
  CHECK(std::find(root.begin(), root.end(), std::make_pair('d', std::string("tas"))) != root.end(), "members lists tas");
  CHECK(status_of([&] { f.members("/tas"); }) == VH5_ERR_INVALID_ARGUMENT, "members of a dataset");
  // The link itself: tas is a hard link (empty value); a missing name throws NOT_FOUND.
  CHECK(f.link("tas") == std::make_pair('h', std::string()), "tas is a hard link");
  CHECK(status_of([&] { f.link("no_such"); }) == VH5_ERR_NOT_FOUND, "link of a missing name");
  CHECK(status_of([&] { f.link("/"); }) == VH5_ERR_INVALID_ARGUMENT, "the root is reached by no link");
  // A destination in the non-native byte order (VH5_SLICES_SWAPPED): the same values, bytes reversed.
  std::vector<double> sw(9, 0.0);
  vh5::ArrayRef<double> sdst{sw.data(), sw.size(), {3, 1, 3}, {}};
  vh5::read_many_slices(d, sdst, src_start, dst_start, count, src_step, {}, VH5_SLICES_SWAPPED);
  for (int i = 0; i < 9; i++) {
    unsigned char b[8];
    std::memcpy(b, &sw[i], 8);
    std::reverse(b, b + 8);
    double v;
    std::memcpy(&v, b, 8);
    CHECK(v == want[i], "swapped destination holds the values in the other byte order");
  }
  CHECK(status_of([&] { vh5::File missing(dir + "/real/no_such.nc"); }) == VH5_ERR_IO, "missing file");

  // Move semantics: the moved-from object no longer owns the id.
  vh5::Dataset moved = std::move(d);
  CHECK(moved.id() >= 0 && d.id() == -1, "move transfers ownership");
  moved.close();
  CHECK(status_of([&] { moved.close(); }) == VH5_OK, "closing twice through the wrapper is a no-op");
}

int main() {
  const char *dir = std::getenv("VH5_SHARED_DATA");
  payloads();
  documents();
  hdf5(dir ? dir : "../shared/data");
  CHECK(vh5::version() == VH5_VERSION_STRING, "version");
  vh5::Hdf5Info h = vh5::hdf5_version();
  uint32_t minor = 0;
  CHECK(vh5_hdf5_version(nullptr, &minor, nullptr, nullptr) == VH5_OK && h.minor == minor, "hdf5_version minor");
  CHECK(((h.major == 1 && h.minor >= 10) || h.major >= 2) && (h.origin == "system" || h.origin == "vendored"), "hdf5_version version and origin");
  if (failures) {
    std::fprintf(stderr, "test_cpp_wrapper: %d failures\n", failures);
    return 1;
  }
  std::printf("test_cpp_wrapper: all checks passed\n");
  return 0;
}
