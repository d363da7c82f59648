// C++17 test of the vh5.hpp write / copy wrappers: vh5::copy_many_slices (memmove rule,
// clip, errors as vh5::Error), vh5::write_many_slices into a temporary copy of
// ../shared/data/real/test1.nc opened with vh5::READ_WRITE, read back with
// vh5::read_many_slices; a read-only File refuses the write. The HDF5 part skips when the
// shared data directory is absent.
#include "vh5.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "check.h"  // CHECK (counts failures), finish()

using Tab = std::vector<uint64_t>;

static void copies() {
  std::vector<double> a(10);
  std::iota(a.begin(), a.end(), 0.0);
  vh5::ArrayRef<double> ra{a.data(), a.size(), {10}, {}};
  vh5::copy_many_slices(ra, ra, Tab{0}, Tab{2}, Tab{5});
  CHECK((a == std::vector<double>{0, 1, 0, 1, 2, 3, 4, 7, 8, 9}));
  // clip: src[8:13] -> dst[0:5] copies 2 elements
  std::vector<double> b(4, -1.0);
  vh5::ArrayRef<double> rb{b.data(), b.size(), {4}, {}};
  vh5::copy_many_slices(ra, rb, Tab{8}, Tab{0}, Tab{5}, Tab{}, Tab{}, VH5_SLICES_CLIP);
  CHECK((b == std::vector<double>{8, 9, -1, -1}));
  try {
    vh5::copy_many_slices(ra, rb, Tab{8}, Tab{0}, Tab{5});
    CHECK(false);
  } catch (const vh5::Error &e) {
    CHECK(e.status() == VH5_ERR_OUT_OF_BOUNDS);
    CHECK(std::string(e.what()).find("row 0 axis 0") != std::string::npos);
  }
  try {
    vh5::copy_many_slices(ra, rb, Tab{0, 0}, Tab{0}, Tab{1});
    CHECK(false);
  } catch (const vh5::Error &e) {
    CHECK(e.status() == VH5_ERR_INVALID_ARGUMENT);
  }
  CHECK((b == std::vector<double>{8, 9, -1, -1}));
}

int main() {
  copies();
  const char *dir = std::getenv("VH5_SHARED_DATA");
  const char *tmp = std::getenv("VH5_TEST_TMP");
  std::string orig = std::string(dir ? dir : "../shared/data") + "/real/test1.nc";
  std::string path = std::string(tmp ? tmp : "/tmp") + "/vh5_test_cpp_write.nc";
  if (!std::ifstream(orig).good()) {
    std::cout << "SKIP hdf5 part of test_cpp_write: " << orig << " not found (set VH5_SHARED_DATA)\n";
    return failures ? 1 : 0;
  }
  {
    std::ifstream in(orig, std::ios::binary);
    std::ofstream out(path, std::ios::binary);
    out << in.rdbuf();
  }
  std::vector<double> src = {10, 20, 30, 40};
  vh5::ArrayRef<double> rs{src.data(), src.size(), {1, 2, 2}, {}};
  try {
    vh5::File ro(orig);
    vh5::Dataset d = ro.dataset("tas");
    vh5::write_many_slices(rs, d, Tab{0, 0, 0}, Tab{0, 0, 0}, Tab{1, 2, 2});
    CHECK(false);
  } catch (const vh5::Error &e) {
    CHECK(e.status() == VH5_ERR_INVALID_ARGUMENT);
    CHECK(std::string(e.what()).find("no write intent") != std::string::npos);
  }
  {
    vh5::File f(path, vh5::READ_WRITE);
    vh5::Dataset d = f.dataset("tas");
    // tas[11, 62:64, 126:128] = src, then tas[0, 0, 0] = src[0, 1, 1] with a second row
    vh5::write_many_slices(rs, d, Tab{0, 0, 0, 0, 1, 1}, Tab{11, 62, 126, 0, 0, 0}, Tab{1, 2, 2, 1, 1, 1});
  }
  vh5::File f(path);
  vh5::Dataset d = f.dataset("tas");
  std::vector<double> out(5, 0.0);
  vh5::ArrayRef<double> ro{out.data(), out.size(), {1, 1, 5}, {}};
  // read tas[11, 62:64, 126:128] into out[0:4] (as 1x1x4 is not its shape, use two rows)
  vh5::read_many_slices(d, ro, Tab{11, 62, 126, 11, 63, 126, 0, 0, 0}, Tab{0, 0, 0, 0, 0, 2, 0, 0, 4},
                        Tab{1, 1, 2, 1, 1, 2, 1, 1, 1});
  CHECK((out == std::vector<double>{10, 20, 30, 40, 40}));
  std::remove(path.c_str());
  return finish("test_cpp_write");
}
