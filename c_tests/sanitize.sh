#!/usr/bin/env bash
# Run every C/C++ test program (c_tests/test_*.c, test_*.cpp) under two memory checkers:
#
#  1. AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer): the test program is
#     compiled with clang -fsanitize=address,undefined and linked against the normal
#     libvh5.so. The ASan runtime is linked into the executable, so it loads first and
#     intercepts malloc/free/memcpy for the whole process, Rust allocations included: leaks
#     anywhere (LSan), C-side out-of-bounds and UB are caught.
#  2. valgrind --leak-check=full --error-exitcode=1 on the plain (-O0 -g) build: checks every
#     load and store of the uninstrumented Rust library too (reads past a caller's buffer,
#     writes past a declared capacity, use of uninitialised memory, leaks), which ASan cannot
#     see inside code it did not instrument.
#
# Why not -Zsanitizer=address on the Rust library: that needs a nightly-flag rebuild of the
# whole crate and libhdf5-sys into a second target dir (minutes on 2 cores) and would still
# leave std and libhdf5 uninstrumented; valgrind covers all of it, every run, with no rebuild.
# The Rust code is additionally fuzzed under ASan by scripts/fuzz.sh.
#
# Usage: c_tests/sanitize.sh [PROFILE_DIR] (default target/release; the library must be built).
# Prints "sanitize: N passed, M failed" and exits 1 on any error or leak.
set -euo pipefail
cd "$(dirname "$0")/.."
LIBDIR=$(cd "${1:-target/release}" && pwd)
OUT=c_tests/build/sanitize
mkdir -p "$OUT"
MAJOR=$(sed -n 's/^version = "\([0-9]*\)\..*/\1/p' Cargo.toml | head -n1)
ln -sf libvh5.so "$LIBDIR/libvh5.so.$MAJOR"
export VH5_SHARED_DATA="${VH5_SHARED_DATA:-$(cd .. && pwd)/shared/data}"
export VH5_TEST_TMP="${VH5_TEST_TMP:-$(mktemp -d)}"
LDFLAGS="-L$LIBDIR -Wl,-rpath,$LIBDIR -lvh5"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# libhdf5 keeps global free lists alive until exit ("still reachable"): not errors here.
# Leaks that count: definite and indirect. "Possibly lost" is left out: valgrind reports it for
# memory that is still reachable through interior pointers, which is how hashbrown holds a
# process-wide HashMap's table (vh5's per-dataset metadata cache) and how std keeps the main
# thread's handle after std::thread::scope — both live until exit by design.
VALGRIND="valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99"
# (the same -Wall -Wextra -Werror flags as c_tests/run.sh)
pass=0; fail=0; failed=""
for src in c_tests/test_*.c c_tests/test_*.cpp; do
  [ -e "$src" ] || continue
  name=$(basename "${src%.*}")
  case "$src" in
    *.c) CC="clang -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude"; LIBS="-lm" ;;
    *.cpp) CC="clang++ -std=c++17 -Wall -Wextra -Werror -Iinclude -Ibindings/cpp"; LIBS="" ;;
  esac
  $CC $SAN "$src" -o "$OUT/$name.asan" $LDFLAGS $LIBS
  $CC -O0 -gdwarf-4 "$src" -o "$OUT/$name.plain" $LDFLAGS $LIBS
  ok=1
  if ! "$OUT/$name.asan" > "$OUT/$name.asan.log" 2>&1; then
    ok=0; echo "FAIL (ASan/UBSan/LSan) $name:"; tail -n 30 "$OUT/$name.asan.log"
  fi
  if ! $VALGRIND "$OUT/$name.plain" > "$OUT/$name.valgrind.log" 2>&1; then
    ok=0; echo "FAIL (valgrind) $name:"; tail -n 40 "$OUT/$name.valgrind.log"
  fi
  if [ $ok = 1 ]; then pass=$((pass+1)); echo "ok $name (ASan+UBSan+LSan, valgrind memcheck)"; else fail=$((fail+1)); failed="$failed $name"; fi
done
echo "sanitize: $pass passed, $fail failed"
[ "$fail" = 0 ] || { echo "failed:$failed (logs in $OUT)" >&2; exit 1; }

# Self-test: both checkers must flag a caller that lies about its capacity (heap overflow
# inside libvh5's copy) and leaks; otherwise the checks above prove nothing.
cc_self="clang -std=c99 -Iinclude c_tests/sanitize_selftest.c $LDFLAGS"
$cc_self $SAN -o "$OUT/selftest.asan"
$cc_self -O0 -gdwarf-4 -o "$OUT/selftest.plain"
if "$OUT/selftest.asan" > "$OUT/selftest.asan.log" 2>&1; then echo "sanitize self-test: ASan missed a heap overflow" >&2; exit 1; fi
grep -q "heap-buffer-overflow" "$OUT/selftest.asan.log" || { echo "sanitize self-test: ASan did not report the overflow" >&2; exit 1; }
if $VALGRIND "$OUT/selftest.plain" > "$OUT/selftest.valgrind.log" 2>&1; then echo "sanitize self-test: valgrind missed it" >&2; exit 1; fi
grep -q "Invalid write" "$OUT/selftest.valgrind.log" && grep -q "definitely lost" "$OUT/selftest.valgrind.log" || { echo "sanitize self-test: valgrind did not report the overflow and the leak" >&2; exit 1; }
echo "sanitize self-test: ASan and valgrind both catch a capacity overflow inside libvh5 (and valgrind the leak)"
