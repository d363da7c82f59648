// C++17 tests of the argument handling of bindings/cpp/vh5.hpp (regressions):
//  - ArrayRef strides: a strides vector that is neither empty nor one value per axis throws
//    VH5_ERR_INVALID_ARGUMENT naming src/dst (it was passed to C with ndim = shape.size(): a
//    heap over-read past the vector);
//  - std::array slice tables with the steps omitted (or `{}`): steps 1 (they defaulted to a
//    std::array of zeros: "src_step is 0");
//  - strings with an embedded NUL (File path, dataset name, members group, link name) throw
//    naming the argument (c_str() truncated them: "tas\0evil" opened /tas);
//  - 0-d arrays in copy_many_slices / write_many_slices (refused, as the C ABI accepts them);
//  - ArrayRef<const T> as a source: the dtype of T (it was dtype 0, "unknown dtype code 0");
//  - Dataset::null_dataspace() tells a null dataspace from a scalar (shape() is empty for both);
//  - Dataset::mem_type() gives vh5_dataset_mem_type's JSON text;
//  - element types named other than int64_t & co.: `long long` / `unsigned long long` (on
//    Linux distinct from int64_t / uint64_t, which are `long`) get the 64-bit codes (they were
//    dtype 0 at run time; types without a code, e.g. char, are now compile errors: run.sh).
// Values are hand-computed or from h5py (test1.nc). The HDF5 parts skip when the shared data
// directory is absent; the part that creates datasets skips when libhdf5's symbols are not
// exported (static-hdf5 build).
#include "vh5.hpp"

#include "hdf5_dlsym.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "check.h"  // CHECK (counts failures), finish()

using Tab = std::vector<uint64_t>;

/// The vh5::Error thrown by f (status VH5_OK and empty message when none was thrown).
template <class F>
static std::pair<int32_t, std::string> error_of(F &&f) {
  try {
    f();
  } catch (const vh5::Error &e) {
    return {e.status(), e.what()};
  }
  return {VH5_OK, ""};
}

static bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

static void strides_length_checked() {
  std::vector<double> a(64, 1.0), b(64, 0.0);
  vh5::ArrayRef<double> A{a.data(), 64, {4, 4, 4}, {}};
  vh5::ArrayRef<double> B{b.data(), 64, {4, 4, 4}, std::vector<int64_t>{128}};  // 1 stride for 3 axes
  Tab s{0, 0, 0}, c{2, 2, 2};
  auto e = error_of([&] { vh5::copy_many_slices(A, B, s, s, c); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT);
  CHECK(contains(e.second, "dst.strides has 1 values for 3 axes"));
  CHECK(std::all_of(b.begin(), b.end(), [](double x) { return x == 0.0; }));
  vh5::ArrayRef<double> A4{a.data(), 64, {4, 4, 4}, {128, 32, 8, 8}};  // one too many
  e = error_of([&] { vh5::copy_many_slices(A4, B, s, s, c); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "src.strides has 4 values for 3 axes"));
  e = error_of([&] { B.c_array(); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "array.strides has 1 values"));
  // one stride per axis (C order written out) is accepted
  vh5::ArrayRef<double> B3{b.data(), 64, {4, 4, 4}, {128, 32, 8}};
  vh5::copy_many_slices(A, B3, s, s, c);
  CHECK(b[0] == 1.0 && b[21] == 1.0 && b[2] == 0.0);
}

static void std_array_tables_steps_default_to_one() {
  std::vector<double> a(16), b(16, -1.0);
  std::iota(a.begin(), a.end(), 0.0);
  vh5::ArrayRef<double> A{a.data(), 16, {4, 4}, {}}, B{b.data(), 16, {4, 4}, {}};
  std::array<uint64_t, 2> start{0, 0}, count{2, 2}, at11{1, 1};
  vh5::copy_many_slices(A, B, start, start, count);  // steps omitted
  CHECK(b[0] == 0 && b[1] == 1 && b[4] == 4 && b[5] == 5 && b[2] == -1);
  vh5::copy_many_slices(A, B, at11, start, count, {}, {}, VH5_SLICES_CLIP);  // `{}` steps + flags
  CHECK(b[0] == 5 && b[1] == 6 && b[4] == 9 && b[5] == 10);
  std::array<uint64_t, 2> two{2, 2};
  vh5::copy_many_slices(A, B, start, start, count, two);  // explicit std::array steps, dst_step omitted
  CHECK(b[0] == 0 && b[1] == 2 && b[4] == 8 && b[5] == 10);
  vh5::copy_many_slices(A, B, at11, start, count, Tab{}, std::array<uint64_t, 0>{});  // empty step tables
  CHECK(b[0] == 5 && b[5] == 10);
  vh5::copy_many_slices(A, B, start, start, count, Tab{1, 1}, two);  // steps of another container type
  CHECK(b[0] == 0 && b[2] == 1 && b[8] == 4 && b[10] == 5);
  // an explicit step 0 is still the caller's error
  auto e = error_of([&] { vh5::copy_many_slices(A, B, start, start, count, std::array<uint64_t, 2>{}); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "src_step"));
}

static void zero_d_and_const_sources() {
  double a = 5, b = 0;
  vh5::ArrayRef<double> A{&a, 1, {}, {}}, B{&b, 1, {}, {}};
  Tab none;
  vh5::copy_many_slices(A, B, none, none, none);
  CHECK(b == 5);
  std::array<uint64_t, 0> no{};
  a = 6;
  vh5::copy_many_slices(A, B, no, no, no);
  CHECK(b == 6);
  auto e = error_of([&] { vh5::copy_many_slices(A, B, Tab{0}, none, none); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "src_start has 1 values, expected nslices*ndim = 0"));

  // ArrayRef<const T>: a read-only source with T's dtype
  const std::vector<double> ca(16, 2.5);
  std::vector<double> cb(16, 0.0);
  vh5::ArrayRef<const double> CA{ca.data(), 16, {4, 4}, {}};
  vh5::ArrayRef<double> CB{cb.data(), 16, {4, 4}, {}};
  CHECK(CA.c_array().dtype == VH5_DTYPE_FLOAT64);
  const vh5::ArrayRef<const uint16_t> cu{nullptr, 0, {0}, {}};
  CHECK(cu.c_array().dtype == VH5_DTYPE_UINT16);
  vh5::copy_many_slices(CA, CB, Tab{0, 0}, Tab{1, 1}, Tab{2, 2});
  CHECK(cb[5] == 2.5 && cb[10] == 2.5 && cb[0] == 0.0);
  const double cs = 7;
  vh5::ArrayRef<const double> CS{&cs, 1, {}, {}};
  vh5::copy_many_slices(CS, B, none, none, none);
  CHECK(b == 7);
}

static void integer_types_map_by_size_and_signedness() {
  static_assert(vh5::detail::dtype_of<long long>() == VH5_DTYPE_INT64, "long long is int64");
  static_assert(vh5::detail::dtype_of<unsigned long long>() == VH5_DTYPE_UINT64, "unsigned long long is uint64");
  static_assert(vh5::detail::dtype_of<long>() == (sizeof(long) == 8 ? VH5_DTYPE_INT64 : VH5_DTYPE_INT32), "long by size");
  static_assert(vh5::detail::dtype_of<signed char>() == VH5_DTYPE_INT8 && vh5::detail::dtype_of<unsigned char>() == VH5_DTYPE_UINT8,
                "signed/unsigned char are int8/uint8");
  static_assert(vh5::detail::dtype_of<const short>() == VH5_DTYPE_INT16 && vh5::detail::dtype_of<unsigned>() == VH5_DTYPE_UINT32,
                "short, unsigned");
  // a copy between long long arrays and one from long long to int64_t memory (same code)
  std::vector<long long> a{1, -2, 3, -4}, b(4, 0);
  vh5::ArrayRef<long long> A{a.data(), 4, {4}, {}}, B{b.data(), 4, {4}, {}};
  CHECK(A.c_array().dtype == VH5_DTYPE_INT64 && A.c_array().itemsize == 8);
  vh5::copy_many_slices(A, B, Tab{1}, Tab{0}, Tab{3});
  CHECK((b == std::vector<long long>{-2, 3, -4, 0}));
  std::vector<unsigned long long> u{1ULL << 63, 5};
  vh5::ArrayRef<const unsigned long long> U{u.data(), 2, {2}, {}};
  CHECK(U.c_array().dtype == VH5_DTYPE_UINT64);
}

static void nul_in_names(const std::string &path) {
  vh5::File f(path);
  auto e = error_of([&] { f.dataset(std::string("tas\0evil", 8)); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "embedded NUL byte in name at byte 3 of 8"));
  e = error_of([&] { vh5::File g(path + std::string("\0.bak", 5)); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "embedded NUL byte in path at byte " + std::to_string(path.size())));
  e = error_of([&] { f.members(std::string("/\0tas", 5)); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "embedded NUL byte in group at byte 1"));
  e = error_of([&] { f.link(std::string("tas\0", 4)); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "embedded NUL byte in name at byte 3"));
  CHECK(f.dataset("tas").id() >= 0);  // the same names without the NUL still work
  CHECK(f.link("tas").first == 'h');

  // std::array tables with the steps omitted on a dataset: tas[0, 10:14, 20:24]
  vh5::Dataset tas = f.dataset("tas");
  CHECK(!tas.null_dataspace());
  std::vector<double> out(16, 0.0), want(16, 0.0);
  vh5::ArrayRef<double> dst{out.data(), out.size(), {1, 4, 4}, {}};
  std::array<uint64_t, 3> s{0, 10, 20}, d{0, 0, 0}, c{1, 4, 4};
  vh5::read_many_slices(tas, dst, s, d, c);
  vh5::ArrayRef<double> wdst{want.data(), want.size(), {1, 4, 4}, {}};
  vh5::read_many_slices(tas, wdst, Tab{0, 10, 20}, Tab{0, 0, 0}, Tab{1, 4, 4}, Tab{1, 1, 1}, Tab{1, 1, 1});
  CHECK(out == want && out[0] != 0.0);
  // a short strides vector on a read destination
  vh5::ArrayRef<double> bad{out.data(), out.size(), {1, 4, 4}, {8}};
  e = error_of([&] { vh5::read_many_slices(tas, bad, s, d, c); });
  CHECK(e.first == VH5_ERR_INVALID_ARGUMENT && contains(e.second, "dst.strides has 1 values for 3 axes"));
  vh5::Dataset height = f.dataset("height");  // a scalar: shape() empty, not a null dataspace
  CHECK(height.shape().empty() && !height.null_dataspace());
  // Dataset::mem_type(): vh5_dataset_mem_type's text (tas in test1.nc: h5py's dtype <f8,
  // fill value 1e20 = bytes 00 00 00 80 1d af 15 44)
  std::string mt = tas.mem_type();
  CHECK(mt == "{\"file_type\":\"float64 (little-endian)\",\"fill_value\":\"000000801daf1544\",\"itemsize\":8,\"numpy\":\"<f8\"}");
}

/// Datasets created through the libhdf5 vh5 loaded: a null dataspace and a scalar, then a
/// 0-d write_many_slices from an ArrayRef<const double>.
static void created_datasets(const std::string &tmp) {
  vh5::hdf5_version();  // loads libhdf5
  using screate_fn = hid (*)(int);
  screate_fn screate = nullptr;
  *reinterpret_cast<void **>(&screate) = dlsym(RTLD_DEFAULT, "H5Screate");
  if (!hdf5_dlsym_load() || !screate) {
    std::cout << "SKIP created datasets of test_cpp_arguments: libhdf5's symbols are not exported (static build)\n";
    return;
  }
  h5.open();
  const hid P = 0;  // H5P_DEFAULT
  std::string path = tmp + "/vh5_test_cpp_arguments.h5";
  hid file = h5.fcreate(path.c_str(), 2u /* H5F_ACC_TRUNC */, P, P);
  CHECK(file >= 0);
  for (auto [name, cls] : {std::pair<const char *, int>{"empty", 2 /* H5S_NULL */}, {"scalar", 0 /* H5S_SCALAR */}}) {
    hid space = screate(cls);
    hid ds = h5.dcreate2(file, name, *h5.native_double, space, P, P, P);
    CHECK(space >= 0 && ds >= 0);
    h5.dclose(ds);
    h5.sclose(space);
  }
  h5.fclose(file);
  {
    vh5::File f(path, vh5::READ_WRITE);
    vh5::Dataset empty = f.dataset("empty"), scalar = f.dataset("scalar");
    CHECK(empty.shape().empty() && empty.null_dataspace());
    CHECK(scalar.shape().empty() && !scalar.null_dataspace());
    const double v = 4.25;
    vh5::ArrayRef<const double> src{&v, 1, {}, {}};
    Tab none;
    vh5::write_many_slices(src, scalar, none, none, none);  // 0-d write from a const source
    double back = 0;
    vh5::ArrayRef<double> dst{&back, 1, {}, {}};
    vh5::read_many_slices(scalar, dst, none, none, none);
    CHECK(back == 4.25);
    auto e = error_of([&] { vh5::read_many_slices(empty, dst, none, none, none); });
    CHECK(e.first == VH5_ERR_UNSUPPORTED && contains(e.second, "null dataspace"));
  }
  std::remove(path.c_str());
}

int main() {
  strides_length_checked();
  std_array_tables_steps_default_to_one();
  zero_d_and_const_sources();
  integer_types_map_by_size_and_signedness();
  const char *dir = std::getenv("VH5_SHARED_DATA");
  const char *tmp = std::getenv("VH5_TEST_TMP");
  std::string path = std::string(dir ? dir : "../shared/data") + "/real/test1.nc";
  if (std::ifstream(path).good())
    nul_in_names(path);
  else
    std::cout << "SKIP test1.nc part of test_cpp_arguments: " << path << " not found (set VH5_SHARED_DATA)\n";
  created_datasets(tmp ? tmp : "/tmp");
  return finish("test_cpp_arguments");
}
