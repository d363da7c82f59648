// vh5.hpp - header-only C++17 wrapper over the vh5 C ABI (include/vh5.h).
//
// - Every failing C call throws vh5::Error carrying the vh5_status and the library's
//   message (vh5_last_error_message of the calling thread).
// - vh5::File / vh5::Dataset are move-only RAII owners of vh5 (libhdf5) ids.
// - vh5::read_many_slices / write_many_slices / copy_many_slices take any contiguous
//   containers (std::vector, std::array, ...) as slice tables; omitted steps (or `{}`) are 1.
// - Strings passed down as C strings (paths, object names) must not contain a NUL byte: C would
//   end the string there and name another file or object, so such an argument throws
//   vh5::Error (VH5_ERR_INVALID_ARGUMENT) naming it.
// - vh5::PayloadView decodes a payload WITHOUT copying: it borrows the caller's bytes, which
//   must outlive it. Typed element access is safe on misaligned data and non-native byte
//   order (memcpy + byte swap); counts decode into std::vector<int64_t>.
//
// Thread-safety: as the C ABI: distinct objects may be used from different threads;
// libhdf5 calls are serialised inside vh5.
#ifndef VH5_HPP
#define VH5_HPP

// The wrapper needs C++17 (std::data / std::size, if constexpr, inline variables): under an
// older standard say so at once instead of pages of errors about std::data. MSVC reports
// __cplusplus as 199711L unless /Zc:__cplusplus is given; _MSVC_LANG holds its standard.
#if defined(_MSVC_LANG)
#define VH5_HPP_CPLUSPLUS _MSVC_LANG
#else
#define VH5_HPP_CPLUSPLUS __cplusplus
#endif
#if VH5_HPP_CPLUSPLUS < 201703L
#error "vh5.hpp needs C++17 or later: compile with -std=c++17 (MSVC: /std:c++17); the C header vh5.h alone works from C++11"
#else

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
/// Whether T is a character type (char, signed/unsigned char aside: `char`'s signedness
/// varies between platforms, and wchar_t / char16_t / char32_t are text).
template <class T>
constexpr bool is_char_type() {
  return std::is_same<T, char>::value || std::is_same<T, wchar_t>::value || std::is_same<T, char16_t>::value ||
         std::is_same<T, char32_t>::value
#if defined(__cpp_char8_t)
         || std::is_same<T, char8_t>::value
#endif
      ;
}
/// The VH5_DTYPE_* of element type T, or VH5_DTYPE_INVALID (cv-qualifiers ignored).
///
/// Integers map by signedness and size, not by name: `long long`, `long` and `int64_t` are
/// all VH5_DTYPE_INT64 where they are 8 bytes (on Linux `int64_t` is `long` and `long long`
/// is a distinct type of the same size and representation), `unsigned long long` is
/// VH5_DTYPE_UINT64, and so on for 1, 2 and 4 bytes. `char` (signedness varies by
/// platform) and the other character types have no code: use int8_t / uint8_t.
template <class T0>
constexpr uint32_t dtype_code() {
  using T = typename std::remove_cv<T0>::type;
  if (std::is_same<T, bool>::value) return sizeof(bool) == 1 ? VH5_DTYPE_BOOL : VH5_DTYPE_INVALID;
  if (std::is_same<T, float>::value) return VH5_DTYPE_FLOAT32;
  if (std::is_same<T, double>::value) return VH5_DTYPE_FLOAT64;
  if (!std::is_integral<T>::value || is_char_type<T>()) return VH5_DTYPE_INVALID;
  if (std::is_signed<T>::value) {
    if (sizeof(T) == 1) return VH5_DTYPE_INT8;
    if (sizeof(T) == 2) return VH5_DTYPE_INT16;
    if (sizeof(T) == 4) return VH5_DTYPE_INT32;
    if (sizeof(T) == 8) return VH5_DTYPE_INT64;
  } else {
    if (sizeof(T) == 1) return VH5_DTYPE_UINT8;
    if (sizeof(T) == 2) return VH5_DTYPE_UINT16;
    if (sizeof(T) == 4) return VH5_DTYPE_UINT32;
    if (sizeof(T) == 8) return VH5_DTYPE_UINT64;
  }
  return VH5_DTYPE_INVALID;
}
/// The VH5_DTYPE_* of element type T (see dtype_code); a type without one is a compile
/// error (it was a run-time "unknown dtype code 0" from the library).
template <class T0>
constexpr uint32_t dtype_of() {
  static_assert(dtype_code<T0>() != VH5_DTYPE_INVALID,
                "vh5: no VH5_DTYPE_* for this element type; supported: bool, float, double, and signed or unsigned "
                "integers of 1, 2, 4 or 8 bytes (int8_t ... uint64_t, long long, unsigned long long); not char "
                "(signedness varies: use int8_t or uint8_t), other character types, long double or class types");
  return dtype_code<T0>();
}
/// `s.c_str()` for a string passed to C, which ends at the first NUL byte: a string holding one
/// would silently name another file or object ("a.h5\0x" opens "a.h5"), so it throws
/// vh5::Error (VH5_ERR_INVALID_ARGUMENT) naming the argument `what` instead.
inline const char *c_string(const std::string &s, const char *what) {
  size_t nul = s.find('\0');
  if (nul != std::string::npos)
    throw Error(VH5_ERR_INVALID_ARGUMENT, std::string("embedded NUL byte in ") + what + " at byte " + std::to_string(nul) +
                                              " of " + std::to_string(s.size()) +
                                              " (C would end the string there and name another object)");
  return s.c_str();
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
  /// non-HDF5 file; VH5_ERR_INVALID_ARGUMENT for a path holding a NUL byte).
  explicit File(const std::string &path, uint32_t flags = 0) {
    int64_t id = -1;
    detail::check(vh5_file_open(detail::c_string(path, "path"), flags, &id));
    h_ = Handle(id);
  }
  int64_t id() const noexcept { return h_.id(); }
  void close() { h_.close(); }
  /// Open the dataset at `name` (paths with groups; bytes matched exactly, UTF-8 not required:
  /// pass a name `members` gave); throws VH5_ERR_NOT_FOUND if missing, VH5_ERR_INVALID_ARGUMENT
  /// for a name holding a NUL byte.
  inline Dataset dataset(const std::string &name) const;
  /// Members of the group at `group` ("/" = root) as (kind, name) pairs in h5py's order
  /// (creation order for a group that tracks it, else name order; see
  /// vh5_group_members: kind 'g' group, 'd' dataset, 't' named datatype, 'e' external link,
  /// 's' dangling soft link, '?' other). `recursive`: every hard link below the group, names
  /// relative to it. Names are the bytes stored in the file, not necessarily UTF-8 (files
  /// written by other tools may hold Latin-1 names); `group` is bytes too (no NUL byte). Throws
  /// vh5::Error.
  std::vector<std::pair<char, std::string>> members(const std::string &group = "/", bool recursive = false) const {
    uint32_t flags = recursive ? VH5_GROUP_RECURSIVE : 0;
    const char *g = detail::c_string(group, "group");
    std::string buf = detail::two_call([&](uint8_t *b, size_t cap, size_t *len) {
      return vh5_group_members(h_.id(), g, flags, b, cap, len);
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
  /// required). Throws vh5::Error (VH5_ERR_NOT_FOUND when no link has that name;
  /// VH5_ERR_INVALID_ARGUMENT for a name holding a NUL byte).
  std::pair<char, std::string> link(const std::string &name) const {
    const char *n = detail::c_string(name, "name");
    uint8_t kind = 0;
    std::string buf = detail::two_call([&](uint8_t *b, size_t cap, size_t *len) {
      return vh5_link_get(h_.id(), n, &kind, b, cap, len);
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
  /// The dataset's extents in elements. Empty both for a scalar (0-d, one element) and for a
  /// null dataspace (no element at all): tell them apart with null_dataspace().
  std::vector<uint64_t> shape() const {
    vh5_dataset_info i = info();
    return std::vector<uint64_t>(i.shape, i.shape + i.ndim);
  }
  /// True for a null dataspace (H5S_NULL, h5py's Empty): the dataset holds no elements and
  /// reads of it throw VH5_ERR_UNSUPPORTED; shape() is empty as for a scalar, which holds one
  /// (vh5_dataset_info.null_dataspace).
  bool null_dataspace() const { return info().null_dataspace != 0; }
  /// The memory type vh5 moves this dataset's elements with, as vh5_dataset_mem_type's JSON
  /// text: `{"itemsize": n, "numpy": D, "fill_value": F}` (D a numpy dtype description,
  /// null when numpy has none; F lowercase hex of one element or null). Compare a record
  /// type with D before moving VH5_DTYPE_OPAQUE records: another layout of the same size
  /// puts fields in the wrong places. Throws vh5::Error.
  std::string mem_type() const {
    return detail::two_call([&](uint8_t *b, size_t cap, size_t *len) { return vh5_dataset_mem_type(h_.id(), b, cap, len); });
  }

 private:
  Handle h_;
};

inline Dataset File::dataset(const std::string &name) const {
  int64_t id = -1;
  detail::check(vh5_dataset_open(h_.id(), detail::c_string(name, "name"), &id));
  return Dataset(id);
}

/// Describe a caller-owned array of T (C order unless byte strides are given) for vh5.
/// `data` points at element [0,...,0]; `total_elems` is the number of T in the buffer starting
/// at `data` (negative strides are not expressible through this helper: use vh5_array).
/// `strides` is empty or holds one value per axis of `shape`. A read-only array may be
/// `ArrayRef<const T>` (same dtype as T): accepted as a source (write_many_slices,
/// copy_many_slices' src), refused at compile time as a destination.
template <class T>
struct ArrayRef {
  T *data;
  size_t total_elems;
  std::vector<uint64_t> shape;
  std::vector<int64_t> strides;  // bytes; empty = C order
  /// The C description, pointing into this object's vectors (valid while it lives unchanged).
  /// Throws vh5::Error (VH5_ERR_INVALID_ARGUMENT, naming `what`) when `strides` is neither
  /// empty nor one value per axis: the library would read shape.size() strides from it.
  vh5_array c_array(const char *what = "array") const {
    if (!strides.empty() && strides.size() != shape.size())
      throw Error(VH5_ERR_INVALID_ARGUMENT, std::string(what) + ".strides has " + std::to_string(strides.size()) +
                                                " values for " + std::to_string(shape.size()) +
                                                " axes (shape): give one byte stride per axis, or none for C order");
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

/// The type of an omitted step table (the default of the step arguments, also what `{}`
/// gives there): no values, i.e. every step 1. A default-constructed std::array would be a
/// full-size table of zeros (step 0), so the steps do not default to the table type.
struct NoSteps {
  constexpr size_t size() const noexcept { return 0; }
  constexpr const uint64_t *data() const noexcept { return nullptr; }
};

namespace detail {
/// nslices from the tables (each nslices x ndim values; steps may be empty), or throw. ndim 0
/// (a scalar, 0-d arrays): the tables have no columns, one row copies the one element.
template <class Table, class SrcStep, class DstStep>
size_t table_rows(size_t ndim, const Table &src_start, const Table &dst_start, const Table &count,
                  const SrcStep &src_step, const DstStep &dst_step) {
  static_assert(std::is_same<typename std::decay<decltype(*std::data(src_start))>::type, uint64_t>::value,
                "slice tables hold uint64_t");
  static_assert(std::is_same<typename std::decay<decltype(*std::data(src_step))>::type, uint64_t>::value,
                "src_step holds uint64_t");
  static_assert(std::is_same<typename std::decay<decltype(*std::data(dst_step))>::type, uint64_t>::value,
                "dst_step holds uint64_t");
  if (ndim > 0 && std::size(count) % ndim != 0)
    throw Error(VH5_ERR_INVALID_ARGUMENT, "count has " + std::to_string(std::size(count)) +
                                              " values, not a multiple of ndim = " + std::to_string(ndim));
  const size_t n = ndim == 0 ? 1 : std::size(count) / ndim;
  auto check_len = [&](size_t len, const char *name, bool optional) {
    if ((optional && len == 0) || len == n * ndim) return;
    throw Error(VH5_ERR_INVALID_ARGUMENT, std::string(name) + " has " + std::to_string(len) +
                                              " values, expected nslices*ndim = " + std::to_string(n * ndim) +
                                              " (nslices = " + std::to_string(n) + " from count)");
  };
  check_len(std::size(src_start), "src_start", false);
  check_len(std::size(dst_start), "dst_start", false);
  check_len(std::size(count), "count", false);
  check_len(std::size(src_step), "src_step", true);
  check_len(std::size(dst_step), "dst_step", true);
  return n;
}
/// A step table for C: NULL when empty (all steps 1).
template <class Steps>
const uint64_t *opt_table(const Steps &t) {
  return std::size(t) ? std::data(t) : nullptr;
}
}  // namespace detail

/// Copy many hyperslabs of `src` into `dst` (see vh5_read_many_slices). Each table holds
/// nslices x ndim uint64 values in row-major order (any contiguous container); the steps may
/// be omitted, `{}` or empty containers (all 1), and may be of another container type than
/// the other tables. A 0-d (scalar) dataset is read with `dst.shape` empty and empty tables
/// (one row). Flags: VH5_SLICES_CLIP, VH5_SLICES_CONVERT, VH5_SLICES_SWAPPED (`dst` holds its
/// elements in the byte order opposite to the host's). `dst` is written, so `T` must not be
/// const. Throws vh5::Error.
template <class T, class Table, class SrcStep = NoSteps, class DstStep = NoSteps>
void read_many_slices(const Dataset &src, const ArrayRef<T> &dst, const Table &src_start, const Table &dst_start,
                      const Table &count, const SrcStep &src_step = SrcStep(), const DstStep &dst_step = DstStep(),
                      uint32_t flags = 0) {
  static_assert(!std::is_const<T>::value, "read_many_slices writes dst: it cannot be an ArrayRef<const T>");
  const size_t n = detail::table_rows(dst.shape.size(), src_start, dst_start, count, src_step, dst_step);
  vh5_array a = dst.c_array("dst");
  detail::check(vh5_read_many_slices(src.id(), &a, n, std::data(src_start), std::data(dst_start), std::data(count),
                                     detail::opt_table(src_step), detail::opt_table(dst_step), flags));
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


/// Write many slices of the array `src` into dataset `dst` (see vh5_write_many_slices):
/// src_* tables index the ARRAY, dst_* tables the DATASET. The file must be open read-write
/// (File(path, vh5::READ_WRITE)). Flags: VH5_SLICES_CLIP, VH5_SLICES_CONVERT. Throws vh5::Error
/// (nothing written unless the status is VH5_ERR_HDF5, whose message names the rows written).
/// Steps and 0-d arrays as in read_many_slices; `src` may be an ArrayRef<const T>.
template <class T, class Table, class SrcStep = NoSteps, class DstStep = NoSteps>
void write_many_slices(const ArrayRef<T> &src, const Dataset &dst, const Table &src_start, const Table &dst_start,
                       const Table &count, const SrcStep &src_step = SrcStep(), const DstStep &dst_step = DstStep(),
                       uint32_t flags = 0) {
  const size_t n = detail::table_rows(src.shape.size(), src_start, dst_start, count, src_step, dst_step);
  vh5_array a = src.c_array("src");
  detail::check(vh5_write_many_slices(dst.id(), &a, n, std::data(src_start), std::data(dst_start), std::data(count),
                                      detail::opt_table(src_step), detail::opt_table(dst_step), flags));
}

/// Copy many slices from array `src` into array `dst` in memory (see vh5_copy_many_slices).
/// They may share memory: each row then behaves as if its source were copied to a temporary
/// first (memmove semantics). Flags: VH5_SLICES_CLIP. Steps and 0-d arrays as in
/// read_many_slices. `src` may be an ArrayRef<const T>; `dst` is written, so its element type
/// must be T itself (checked at compile time). Throws vh5::Error (nothing written).
template <class S, class T, class Table, class SrcStep = NoSteps, class DstStep = NoSteps>
void copy_many_slices(const ArrayRef<S> &src, const ArrayRef<T> &dst, const Table &src_start, const Table &dst_start,
                      const Table &count, const SrcStep &src_step = SrcStep(), const DstStep &dst_step = DstStep(),
                      uint32_t flags = 0) {
  static_assert(!std::is_const<T>::value, "copy_many_slices writes dst: it cannot be an ArrayRef<const T>");
  static_assert(std::is_same<typename std::remove_const<S>::type, T>::value,
                "copy_many_slices copies elements of one type: src and dst must be ArrayRef<T> (src may be const T)");
  const size_t n = detail::table_rows(dst.shape.size(), src_start, dst_start, count, src_step, dst_step);
  vh5_array a = src.c_array("src");
  vh5_array b = dst.c_array("dst");
  detail::check(vh5_copy_many_slices(&a, &b, n, std::data(src_start), std::data(dst_start), std::data(count),
                                     detail::opt_table(src_step), detail::opt_table(dst_step), flags));
}

}  // namespace vh5

#endif  // VH5_HPP_CPLUSPLUS >= 201703L
#endif  // VH5_HPP
