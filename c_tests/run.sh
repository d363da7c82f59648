#!/usr/bin/env bash
# Compile every c_tests/test_*.c (C99) and c_tests/test_*.cpp (C++17) against include/vh5.h
# and the built libvh5.so, and run each. Usage: c_tests/run.sh [PROFILE_DIR] (default target/release).
set -euo pipefail
cd "$(dirname "$0")/.."
LIBDIR=$(cd "${1:-target/release}" && pwd)
OUT=c_tests/build
mkdir -p "$OUT"
CFLAGS="-std=c99 -Wall -Wextra -Werror -pedantic -g -Iinclude"
CXXFLAGS="-std=c++17 -Wall -Wextra -Werror -g -Iinclude -Ibindings/cpp"
LDFLAGS="-L$LIBDIR -Wl,-rpath,$LIBDIR -lvh5"
# The library's soname is libvh5.so.<major> (build.rs); cargo only writes libvh5.so, so give
# the loader the soname file next to it.
MAJOR=$(sed -n 's/^version = "\([0-9]*\)\..*/\1/p' Cargo.toml | head -n1)
ln -sf libvh5.so "$LIBDIR/libvh5.so.$MAJOR"
export VH5_SHARED_DATA="${VH5_SHARED_DATA:-$(cd .. && pwd)/shared/data}"
export VH5_TEST_TMP="${VH5_TEST_TMP:-$(mktemp -d)}"

# The header alone must compile as C99 and C++11 with warnings as errors.
printf '#include "vh5.h"\nint main(void){return 0;}\n' > "$OUT/header_c.c"
cc $CFLAGS "$OUT/header_c.c" -o "$OUT/header_c"
printf '#include "vh5.h"\nint main(){return 0;}\n' > "$OUT/header_cxx.cpp"
c++ -std=c++11 -Wall -Wextra -Werror -Iinclude "$OUT/header_cxx.cpp" -o "$OUT/header_cxx"
echo "header compiles as C99 and C++11"

# The README's C example must keep compiling against the current header.
python3 - "$OUT/readme_example.c" <<'PYEOF'
import re, sys
blocks = re.findall(r"```c\n(.*?)```", open("README.md").read(), re.S)
assert blocks, "README.md has no ```c example"
open(sys.argv[1], "w").write(blocks[0])
PYEOF
cc $CFLAGS -c "$OUT/readme_example.c" -o "$OUT/readme_example.o"
echo "README C example compiles"

# vh5.hpp under C++14 (or older) stops with one clear #error naming C++17, not pages of
# errors about std::data; the #error is the only diagnostic.
printf '#include "vh5.hpp"\nint main() { return 0; }\n' > "$OUT/hpp_cxx14.cpp"
for std in c++14 c++11; do
  if c++ -std=$std -Iinclude -Ibindings/cpp -fsyntax-only "$OUT/hpp_cxx14.cpp" > "$OUT/hpp_cxx14.log" 2>&1; then
    echo "vh5.hpp compiled under -std=$std: it needs C++17" >&2; exit 1
  fi
  grep -q 'vh5.hpp needs C++17 or later' "$OUT/hpp_cxx14.log" && [ "$(grep -c 'error:' "$OUT/hpp_cxx14.log")" = 1 ] \
    || { echo "vh5.hpp under -std=$std did not stop with its single C++17 #error:" >&2; cat "$OUT/hpp_cxx14.log" >&2; exit 1; }
done
echo "vh5.hpp under C++14 and C++11 stops with its C++17 #error"

# vh5.hpp refuses at compile time to write into an ArrayRef<const T> (static_assert naming
# the reason), to copy between element types, and element types without a VH5_DTYPE_* code
# (char, long double, ...: they compiled and failed at run time with "unknown dtype code 0");
# each snippet must fail to compile with it.
while IFS='|' read -r call why; do
  printf '#include "vh5.hpp"\nvoid f(const vh5::Dataset &d, const vh5::ArrayRef<double> &m, const vh5::ArrayRef<const double> &c,\n       const vh5::ArrayRef<float> &g, const std::vector<uint64_t> &t) {\n  (void)d; (void)m; (void)c; (void)g; (void)t;\n  %s;\n}\nint main() { return 0; }\n' "$call" > "$OUT/compile_fail.cpp"
  if c++ $CXXFLAGS -fsyntax-only "$OUT/compile_fail.cpp" > "$OUT/compile_fail.log" 2>&1; then
    echo "vh5.hpp accepted at compile time: $call" >&2; exit 1
  fi
  grep -q "$why" "$OUT/compile_fail.log" || { echo "vh5.hpp refused '$call' without saying '$why':" >&2; cat "$OUT/compile_fail.log" >&2; exit 1; }
done <<'CASES'
vh5::read_many_slices(d, c, t, t, t)|read_many_slices writes dst: it cannot be an ArrayRef<const T>
vh5::copy_many_slices(m, c, t, t, t)|copy_many_slices writes dst: it cannot be an ArrayRef<const T>
vh5::copy_many_slices(c, g, t, t, t)|copy_many_slices copies elements of one type
(void)vh5::ArrayRef<char>{nullptr, 0, {0}, {}}.c_array()|no VH5_DTYPE_. for this element type; supported: bool, float, double
(void)vh5::ArrayRef<long double>{nullptr, 0, {0}, {}}.c_array()|no VH5_DTYPE_. for this element type
(void)vh5::ArrayRef<char16_t>{nullptr, 0, {0}, {}}.c_array()|not char (signedness varies: use int8_t or uint8_t)
CASES
echo "vh5.hpp refuses const destinations, mixed types and element types without a dtype code at compile time"

pass=0; fail=0; failed=""
for src in c_tests/test_*.c c_tests/test_*.cpp; do
  [ -e "$src" ] || continue
  name=$(basename "${src%.*}")
  case "$src" in
    *.c) cc $CFLAGS "$src" -o "$OUT/$name" $LDFLAGS -lm ;;
    *.cpp) c++ $CXXFLAGS "$src" -o "$OUT/$name" $LDFLAGS ;;
  esac
  if "$OUT/$name"; then pass=$((pass+1)); else fail=$((fail+1)); failed="$failed $name"; fi
done
echo "c_tests: $pass passed, $fail failed"
[ "$fail" = 0 ] || { echo "failed:$failed" >&2; exit 1; }
