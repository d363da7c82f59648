// vh5.hpp - header-only C++17 wrapper over the vh5 C ABI (include/vh5.h).
//
// - Every failing C call throws vh5::Error carrying the vh5_status and the library's
//   message (vh5_last_error_message of the calling thread).
// - vh5::File / vh5::Dataset are move-only RAII owners of vh5 (libhdf5) ids.
// - vh5::read_many_slices / write_many_slices / copy_many_slices take any contiguous
//   containers (std::vector, std::array, ...) as slice tables.
// - vh5::PayloadView decodes a payload WITHOUT copying: it borrows the caller's bytes, which
//   must outlive it. Typed element access is safe on misaligned data and non-native byte
//   order (memcpy + byte swap); counts decode into std::vector<int64_t>.
//
// Thread-safety: as the C ABI: distinct objects may be used from different threads;
// libhdf5 calls are serialised inside vh5.
#ifndef VH5_HPP
#define VH5_HPP

#include "vh5.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace vh5 {

namespace detail {
/// `vh5_dtype_name(code)`, or "dtype code N" for a code it does not know (it returns NULL).
inline std::string dtype_name_or_code(uint32_t code) {
  const char *n = vh5_dtype_name(code);
  return n ? std::string(n) : "dtype code " + std::to_string(code);
}
}  // namespace detail


/// A failed vh5 call: status code, its name and the library's message.
class Error : public std::runtime_error {
 public:
  Error(int32_t status, const std::string &message)
      : std::runtime_error(std::string(vh5_status_name(status)) + ": " + message), status_(status) {}
  /// The vh5_status code (VH5_ERR_*).
  int32_t status() const noexcept { return status_; }
  /// The status name, e.g. "VH5_ERR_OUT_OF_BOUNDS".
  const char *status_name() const noexcept { return vh5_status_name(status_); }

 private:
  int32_t status_;
};

namespace detail {
/// The calling thread's last vh5 error message.
inline std::string last_message() {
  std::string msg(256, '\0');
  size_t n = vh5_last_error_message(&msg[0], msg.size());
  if (n >= msg.size()) {
    msg.assign(n + 1, '\0');
    vh5_last_error_message(&msg[0], msg.size());
  }
  msg.resize(n);
  return msg;
}
/// Throw vh5::Error unless status is VH5_OK.
inline void check(int32_t status) {
  if (status != VH5_OK) throw Error(status, last_message());
}
/// The result of a C function of the two-call protocol (vh5_group_members, vh5_link_get):
/// `call(buf, cap, len_out)` returns a status; a size query (buf NULL, cap 0), then the copy,
/// again when the result grew between the two calls (another writer of the file). Throws
/// vh5::Error.
template <class Call>
std::string two_call(Call call) {
  for (;;) {
    size_t need = 0;
    check(call(nullptr, 0, &need));
    std::string buf(need, '\0');
    size_t got = 0;
    vh5_status st = call(reinterpret_cast<uint8_t *>(&buf[0]), buf.size(), &got);
    if (st == VH5_ERR_BUFFER_TOO_SMALL) continue;  // the result changed between the calls
    check(st);
    buf.resize(got);
    return buf;
  }
}
template <class T>
constexpr uint32_t dtype_of() {
  if (std::is_same<T, bool>::value) return VH5_DTYPE_BOOL;
  if (std::is_same<T, int8_t>::value) return VH5_DTYPE_INT8;
  if (std::is_same<T, int16_t>::value) return VH5_DTYPE_INT16;
  if (std::is_same<T, int32_t>::value) return VH5_DTYPE_INT32;
  if (std::is_same<T, int64_t>::value) return VH5_DTYPE_INT64;
  if (std::is_same<T, uint8_t>::value) return VH5_DTYPE_UINT8;
  if (std::is_same<T, uint16_t>::value) return VH5_DTYPE_UINT16;
  if (std::is_same<T, uint32_t>::value) return VH5_DTYPE_UINT32;
  if (std::is_same<T, uint64_t>::value) return VH5_DTYPE_UINT64;
  if (std::is_same<T, float>::value) return VH5_DTYPE_FLOAT32;
  if (std::is_same<T, double>::value) return VH5_DTYPE_FLOAT64;
  return VH5_DTYPE_INVALID;
}
}  // namespace detail

/// The library version string ("0.1.0").
inline std::string version() { return vh5_version_string(); }

/// The libhdf5 vh5 calls (`vh5_hdf5_version`, `vh5_hdf5_origin`).
struct Hdf5Info {
  uint32_t major = 0, minor = 0, release = 0;
  bool threadsafe = false;  ///< libhdf5 built thread-safe (vh5 serialises its calls anyway)
  std::string origin;       ///< "system" (shared library of the system), "vendored" (static-hdf5) or "h5py" (h5py-bound build)
  uint32_t build_major = 0, build_minor = 0, build_release = 0;  ///< HDF5 headers vh5 was compiled against
};

/// Version, origin and thread-safety of the libhdf5 vh5 uses. Throws vh5::Error
/// (VH5_ERR_HDF5) if libhdf5 cannot report them.
inline Hdf5Info hdf5_version() {
  Hdf5Info i;
  uint8_t ts = 0;
  detail::check(vh5_hdf5_version(&i.major, &i.minor, &i.release, &ts));
  i.threadsafe = ts != 0;
  i.origin = vh5_hdf5_origin();
  vh5_hdf5_build_version(&i.build_major, &i.build_minor, &i.build_release);
  return i;
}

/// Move-only owner of one vh5/libhdf5 id (file or dataset); closes it on destruction.
class Handle {
 public:
  Handle() = default;
  explicit Handle(int64_t id) noexcept : id_(id) {}
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  Handle(Handle &&o) noexcept : id_(std::exchange(o.id_, -1)) {}
  Handle &operator=(Handle &&o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, -1);
    }
    return *this;
  }
  ~Handle() { reset(); }
  /// The raw id (valid while this object lives).
  int64_t id() const noexcept { return id_; }
  /// Close now (errors on close are ignored here; use close() to see them).
  void reset() noexcept {
    if (id_ >= 0) vh5_close(id_);
    id_ = -1;
  }
  /// Close now, throwing vh5::Error on failure.
  void close() {
    if (id_ >= 0) {
      int64_t id = std::exchange(id_, -1);
      detail::check(vh5_close(id));
    }
  }

 private:
  int64_t id_ = -1;
};

class Dataset;

/// An HDF5 file opened by vh5 (read-only unless flags say otherwise).
class File {
 public:
  /// Open `path` (bytes: UTF-8 not required); throws vh5::Error (VH5_ERR_IO for a missing or
  /// non-HDF5 file).
  explicit File(const std::string &path, uint32_t flags = 0) {
    int64_t id = -1;
    detail::check(vh5_file_open(path.c_str(), flags, &id));
    h_ = Handle(id);
  }
  int64_t id() const noexcept { return h_.id(); }
  void close() { h_.close(); }
  /// Open the dataset at `name` (paths with groups; bytes matched exactly, UTF-8 not required:
  /// pass a name `members` gave); throws VH5_ERR_NOT_FOUND if missing.
  inline Dataset dataset(const std::string &name) const;
  /// Members of the group at `group` ("/" = root) as (kind, name) pairs in h5py's order
  /// (creation order for a group that tracks it, else name order; see
  /// vh5_group_members: kind 'g' group, 'd' dataset, 't' named datatype, 'e' external link,
  /// 's' dangling soft link, '?' other). `recursive`: every hard link below the group, names
  /// relative to it. Names are the bytes stored in the file, not necessarily UTF-8 (files
  /// written by other tools may hold Latin-1 names); `group` is bytes too. Throws vh5::Error.
  std::vector<std::pair<char, std::string>> members(const std::string &group = "/", bool recursive = false) const {
    uint32_t flags = recursive ? VH5_GROUP_RECURSIVE : 0;
    std::string buf = detail::two_call([&](uint8_t *b, size_t cap, size_t *len) {
      return vh5_group_members(h_.id(), group.c_str(), flags, b, cap, len);
    });
    std::vector<std::pair<char, std::string>> out;
    for (size_t i = 0; i < buf.size();) {
      size_t end = buf.find('\0', i);
      out.emplace_back(buf[i], buf.substr(i + 1, end - i - 1));
      i = end + 1;
    }
    return out;
  }
  /// The link at `name` itself, not followed (vh5_link_get): its kind ('h' hard, 's' soft,
  /// 'e' external, '?' user-defined) and value: a soft link's target path; an external link's
  /// file name, a NUL byte and the object path; empty otherwise. Bytes as stored (UTF-8 not
  /// required). Throws vh5::Error (VH5_ERR_NOT_FOUND when no link has that name).
  std::pair<char, std::string> link(const std::string &name) const {
    uint8_t kind = 0;
    std::string buf = detail::two_call([&](uint8_t *b, size_t cap, size_t *len) {
      return vh5_link_get(h_.id(), name.c_str(), &kind, b, cap, len);
    });
    if (!buf.empty()) buf.pop_back();  // drop the final NUL
    return {static_cast<char>(kind), buf};
  }

 private:
  Handle h_;
};

/// An open dataset: shape, dtype and chunking via info(); source of read_many_slices.
class Dataset {
 public:
  explicit Dataset(int64_t id) noexcept : h_(id) {}
  /// A Dataset on the caller's own open dataset id `hdf5_id` (e.g. from H5Dopen2) of the SAME
  /// libhdf5 vh5 calls: vh5 takes its own reference (vh5_dataset_from_hdf5_id), so destroying
  /// this object leaves the caller's id open. Throws vh5::Error (VH5_ERR_INVALID_HANDLE when
  /// it is not an open dataset id of vh5's libhdf5).
  static Dataset from_hdf5_id(int64_t hdf5_id) {
    int64_t id = -1;
    detail::check(vh5_dataset_from_hdf5_id(hdf5_id, &id));
    return Dataset(id);
  }
  int64_t id() const noexcept { return h_.id(); }
  void close() { h_.close(); }
  /// Shape, chunk shape, dtype, byte order and filters of the dataset.
  vh5_dataset_info info() const {
    vh5_dataset_info out;
    detail::check(vh5_dataset_get_info(h_.id(), &out));
    return out;
  }
  /// The client data values of filter `index` (pipeline order), e.g. {level} for gzip.
  std::vector<uint32_t> filter_params(uint32_t index) const {
    size_t n = 0;
    detail::check(vh5_dataset_filter_params(h_.id(), index, nullptr, 0, &n));
    std::vector<uint32_t> v(n);
    detail::check(vh5_dataset_filter_params(h_.id(), index, v.data(), v.size(), &n));
    v.resize(std::min(n, v.size()));
    return v;
  }
  /// The dataset's extents in elements.
  std::vector<uint64_t> shape() const {
    vh5_dataset_info i = info();
    return std::vector<uint64_t>(i.shape, i.shape + i.ndim);
  }

 private:
  Handle h_;
};

inline Dataset File::dataset(const std::string &name) const {
  int64_t id = -1;
  detail::check(vh5_dataset_open(h_.id(), name.c_str(), &id));
  return Dataset(id);
}

/// Describe a caller-owned array of T (C order unless byte strides are given) for vh5.
/// `data` points at element [0,...,0]; `total_elems` is the number of T in the buffer starting
/// at `data` (negative strides are not expressible through this helper: use vh5_array).
template <class T>
struct ArrayRef {
  T *data;
  size_t total_elems;
  std::vector<uint64_t> shape;
  std::vector<int64_t> strides;  // bytes; empty = C order
  vh5_array c_array() const {
    vh5_array a;
    std::memset(&a, 0, sizeof a);
    a.base = const_cast<void *>(static_cast<const void *>(data));
    a.base_len = total_elems * sizeof(T);
    a.offset = 0;
    a.dtype = detail::dtype_of<T>();
    a.itemsize = sizeof(T);
    a.ndim = static_cast<uint32_t>(shape.size());
    a.shape = shape.data();
    a.strides = strides.empty() ? nullptr : strides.data();
    return a;
  }
};

/// Copy many hyperslabs of `src` into `dst` (see vh5_read_many_slices). Each table holds
/// nslices x ndim uint64 values in row-major order (any contiguous container); steps may
/// be empty containers (all 1). Flags: VH5_SLICES_CLIP, VH5_SLICES_CONVERT,
/// VH5_SLICES_SWAPPED (`dst` holds its elements in the byte order opposite to the host's).
/// Throws vh5::Error.
template <class T, class Table>
void read_many_slices(const Dataset &src, const ArrayRef<T> &dst, const Table &src_start, const Table &dst_start,
                      const Table &count, const Table &src_step = Table(), const Table &dst_step = Table(),
                      uint32_t flags = 0) {
  static_assert(std::is_same<typename std::decay<decltype(*std::data(src_start))>::type, uint64_t>::value,
                "slice tables hold uint64_t");
  // ndim 0 (a scalar dataset): tables have no columns and one row copies the one element.
  const size_t ndim = dst.shape.size();
  if (ndim > 0 && std::size(count) % ndim != 0)
    throw Error(VH5_ERR_INVALID_ARGUMENT, "count has " + std::to_string(std::size(count)) +
                                              " values, not a multiple of ndim = " + std::to_string(ndim));
  const size_t n = ndim == 0 ? 1 : std::size(count) / ndim;
  auto check_len = [&](const Table &t, const char *name, bool optional) {
    size_t len = std::size(t);
    if ((optional && len == 0) || len == n * ndim) return;
    throw Error(VH5_ERR_INVALID_ARGUMENT, std::string(name) + " has " + std::to_string(len) +
                                              " values, expected nslices*ndim = " + std::to_string(n * ndim) +
                                              " (nslices = " + std::to_string(n) + " from count)");
  };
  check_len(src_start, "src_start", false);
  check_len(dst_start, "dst_start", false);
  check_len(count, "count", false);
  check_len(src_step, "src_step", true);
  check_len(dst_step, "dst_step", true);
  vh5_array a = dst.c_array();
  detail::check(vh5_read_many_slices(src.id(), &a, n, std::data(src_start), std::data(dst_start), std::data(count),
                                     std::size(src_step) ? std::data(src_step) : nullptr,
                                     std::size(dst_step) ? std::data(dst_step) : nullptr, flags));
}

/// A decoded payload borrowing the caller's bytes (which must outlive it). No copy is made.
class PayloadView {
 public:
  /// Decode `len` bytes at `buf` (flags: PAYLOAD_REQUIRE_ALIGNED, PAYLOAD_REQUIRE_NATIVE).
  PayloadView(const uint8_t *buf, size_t len, uint32_t flags = 0) : buf_(buf), len_(len) {
    detail::check(payload_decode_view(buf, len, flags, &v_));
  }
  explicit PayloadView(const std::vector<uint8_t> &bytes, uint32_t flags = 0)
      : PayloadView(bytes.data(), bytes.size(), flags) {}
  /// A view of a temporary would dangle as soon as the statement ends: refused at compile time.
  explicit PayloadView(std::vector<uint8_t> &&bytes, uint32_t flags = 0) = delete;

  /// The raw C view (pointers into the caller's buffer).
  const payload_view &raw() const noexcept { return v_; }
  std::vector<uint64_t> shape() const { return std::vector<uint64_t>(v_.shape, v_.shape + v_.ndim); }
  uint64_t size() const noexcept { return v_.nelements; }
  uint32_t dtype() const noexcept { return v_.dtype; }
  bool aligned() const noexcept { return v_.aligned != 0; }
  bool needs_swap() const noexcept { return v_.needs_swap != 0; }

  /// Element i as T (T must match dtype()): unaligned-safe load plus byte swap when the
  /// payload's byte order is not native. Throws on a dtype mismatch or i out of range.
  template <class T>
  T at(uint64_t i) const {
    static_assert(std::is_trivially_copyable<T>::value, "T must be trivially copyable");
    if (detail::dtype_of<T>() != v_.dtype)
      throw Error(VH5_ERR_DTYPE, std::string("payload dtype is ") + detail::dtype_name_or_code(v_.dtype));
    if (i >= v_.nelements) throw Error(VH5_ERR_OUT_OF_BOUNDS, "element " + std::to_string(i) + " of " + std::to_string(v_.nelements));
    unsigned char tmp[sizeof(T)];
    std::memcpy(tmp, v_.data + i * sizeof(T), sizeof(T));
    if (v_.needs_swap) std::reverse(tmp, tmp + sizeof(T));
    T out;
    std::memcpy(&out, tmp, sizeof(T));
    return out;
  }

  /// All elements as a native-order, aligned std::vector<T> (payload_copy_data).
  template <class T>
  std::vector<T> to_vector() const {
    if (detail::dtype_of<T>() != v_.dtype)
      throw Error(VH5_ERR_DTYPE, std::string("payload dtype is ") + detail::dtype_name_or_code(v_.dtype));
    std::vector<T> out(static_cast<size_t>(v_.nelements));
    size_t written = 0;
    detail::check(payload_copy_data(buf_, len_, out.data(), out.size() * sizeof(T), &written));
    return out;
  }

  /// The per-element counts (any stored form) as native int64; empty when absent.
  std::vector<int64_t> counts() const {
    std::vector<int64_t> out(static_cast<size_t>(v_.count_len));
    size_t written = 0;
    detail::check(payload_decode_count(buf_, len_, out.data(), out.size(), &written));
    out.resize(written);
    return out;
  }

 private:
  const uint8_t *buf_;
  size_t len_;
  payload_view v_{};
};

/// A whole msgpack or CBOR document walked in one pass (payload_decode_document): every
/// value as a payload_item (pre-order: parent before children) and every array in it as a
/// payload_view borrowing the caller's bytes (which must outlive the Document). The item and
/// view lists are owned here; no array data is copied.
class Document {
 public:
  /// Walk `len` bytes at `buf` (format: PAYLOAD_DOC_AUTO, PAYLOAD_DOC_CBOR, PAYLOAD_DOC_MSGPACK).
  /// Throws vh5::Error with the library's status and message on failure.
  Document(const uint8_t *buf, size_t len, uint32_t format = PAYLOAD_DOC_AUTO) : buf_(buf), len_(len) {
    size_t ni = 0, nv = 0;
    // First call with a guess; on VH5_ERR_BUFFER_TOO_SMALL the counts are the needed sizes.
    items_.resize(std::min<size_t>(len, 256));
    views_.resize(8);
    vh5_status st = payload_decode_document(buf, len, format, items_.data(), items_.size(), views_.data(),
                                            views_.size(), &ni, &nv);
    if (st == VH5_ERR_BUFFER_TOO_SMALL) {
      items_.resize(ni);
      views_.resize(nv);
      st = payload_decode_document(buf, len, format, items_.data(), items_.size(), views_.data(), views_.size(),
                                   &ni, &nv);
    }
    detail::check(st);
    items_.resize(ni);
    views_.resize(nv);
  }
  explicit Document(const std::vector<uint8_t> &bytes, uint32_t format = PAYLOAD_DOC_AUTO)
      : Document(bytes.data(), bytes.size(), format) {}
  /// A document of a temporary would dangle as soon as the statement ends: refused at compile time.
  explicit Document(std::vector<uint8_t> &&bytes, uint32_t format = PAYLOAD_DOC_AUTO) = delete;

  const std::vector<payload_item> &items() const noexcept { return items_; }
  const std::vector<payload_view> &views() const noexcept { return views_; }
  /// The view of an item of kind PAYLOAD_ITEM_ARRAY_VIEW; throws for other kinds.
  const payload_view &view(const payload_item &it) const {
    if (it.kind != PAYLOAD_ITEM_ARRAY_VIEW || it.value >= views_.size())
      throw Error(VH5_ERR_INVALID_ARGUMENT, "item of kind " + std::to_string(it.kind) + " is not an array view");
    return views_[static_cast<size_t>(it.value)];
  }
  /// The content of a TEXT / BYTES / EXT item (not of an indefinite-length string: use its chunks).
  std::string text(const payload_item &it) const {
    if ((it.kind != PAYLOAD_ITEM_TEXT && it.kind != PAYLOAD_ITEM_BYTES && it.kind != PAYLOAD_ITEM_EXT) ||
        (it.flags & PAYLOAD_ITEM_INDEFINITE) || it.data_offset + it.data_len > len_)
      throw Error(VH5_ERR_INVALID_ARGUMENT, "item has no contiguous content");
    return std::string(reinterpret_cast<const char *>(buf_ + it.data_offset), static_cast<size_t>(it.data_len));
  }

 private:
  const uint8_t *buf_;
  size_t len_;
  std::vector<payload_item> items_;
  std::vector<payload_view> views_;
};

// ---------------------------------------------------------------------------------------
// Writes (array -> dataset) and memory copies (array -> array).

/// Flag for vh5::File: open read-write (needed by write_many_slices): File f(path, vh5::READ_WRITE).
constexpr uint32_t READ_WRITE = VH5_FILE_READ_WRITE;
/// Flag for vh5::File (security): allow datasets pointing at other files (external raw data,
/// virtual datasets, external links), refused by default: File f(path, vh5::ALLOW_EXTERNAL).
constexpr uint32_t ALLOW_EXTERNAL = VH5_FILE_ALLOW_EXTERNAL;

namespace detail {
/// nslices from the tables (each nslices x ndim values; steps may be empty), or throw.
template <class Table>
size_t table_rows(size_t ndim, const Table &src_start, const Table &dst_start, const Table &count,
                  const Table &src_step, const Table &dst_step) {
  static_assert(std::is_same<typename std::decay<decltype(*std::data(src_start))>::type, uint64_t>::value,
                "slice tables hold uint64_t");
  if (ndim == 0) throw Error(VH5_ERR_INVALID_ARGUMENT, "arrays must have at least one axis");
  const size_t n = std::size(count) / ndim;
  auto check_len = [&](const Table &t, const char *name, bool optional) {
    size_t len = std::size(t);
    if ((optional && len == 0) || len == n * ndim) return;
    throw Error(VH5_ERR_INVALID_ARGUMENT, std::string(name) + " has " + std::to_string(len) +
                                              " values, expected nslices*ndim = " + std::to_string(n * ndim));
  };
  check_len(src_start, "src_start", false);
  check_len(dst_start, "dst_start", false);
  check_len(count, "count", false);
  check_len(src_step, "src_step", true);
  check_len(dst_step, "dst_step", true);
  return n;
}
template <class Table>
const uint64_t *opt_table(const Table &t) {
  return std::size(t) ? std::data(t) : nullptr;
}
}  // namespace detail

/// Write many slices of the array `src` into dataset `dst` (see vh5_write_many_slices):
/// src_* tables index the ARRAY, dst_* tables the DATASET. The file must be open read-write
/// (File(path, vh5::READ_WRITE)). Flags: VH5_SLICES_CLIP, VH5_SLICES_CONVERT. Throws vh5::Error
/// (nothing written unless the status is VH5_ERR_HDF5, whose message names the rows written).
template <class T, class Table>
void write_many_slices(const ArrayRef<T> &src, const Dataset &dst, const Table &src_start, const Table &dst_start,
                       const Table &count, const Table &src_step = Table(), const Table &dst_step = Table(),
                       uint32_t flags = 0) {
  const size_t n = detail::table_rows(src.shape.size(), src_start, dst_start, count, src_step, dst_step);
  vh5_array a = src.c_array();
  detail::check(vh5_write_many_slices(dst.id(), &a, n, std::data(src_start), std::data(dst_start), std::data(count),
                                      detail::opt_table(src_step), detail::opt_table(dst_step), flags));
}

/// Copy many slices from array `src` into array `dst` in memory (see vh5_copy_many_slices).
/// They may share memory: each row then behaves as if its source were copied to a temporary
/// first (memmove semantics). Flags: VH5_SLICES_CLIP. Throws vh5::Error (nothing written).
template <class T, class Table>
void copy_many_slices(const ArrayRef<T> &src, const ArrayRef<T> &dst, const Table &src_start, const Table &dst_start,
                      const Table &count, const Table &src_step = Table(), const Table &dst_step = Table(),
                      uint32_t flags = 0) {
  const size_t n = detail::table_rows(dst.shape.size(), src_start, dst_start, count, src_step, dst_step);
  vh5_array a = src.c_array();
  vh5_array b = dst.c_array();
  detail::check(vh5_copy_many_slices(&a, &b, n, std::data(src_start), std::data(dst_start), std::data(count),
                                     detail::opt_table(src_step), detail::opt_table(dst_step), flags));
}

}  // namespace vh5

#endif  // VH5_HPP
