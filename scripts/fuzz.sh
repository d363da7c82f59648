#!/usr/bin/env bash
# Fuzz the payload decoder and the many-slice engine with libFuzzer (cargo-fuzz), one target
# after another.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET ...]     (default 60 s, all targets)
#
# Targets (fuzz/fuzz_targets/): payload_decode (arbitrary bytes), payload_cbor_structured,
# payload_msgpack_structured (structure-aware builders), payload_document (whole msgpack /
# CBOR documents, decode_document + payload_decode_document), payload_ffi (the C ABI with raw
# pointers and guard bytes), slices_copy (vh5_copy_many_slices, memory -> memory),
# slices_read and slices_write (vh5_read_many_slices / vh5_write_many_slices on HDF5 fixture
# datasets created at start-up): random ranks, shapes, layouts, tables and flags against the
# independent oracle fuzz/src/slices.rs, buffers allocated at exactly their declared length
# (ASan catches any overrun). Each starts from the committed seeds in fuzz/corpus/<target>/
# plus, for the byte-level targets, the real vectors of ../shared/data (fuzz/seed.sh);
# new inputs go to fuzz/work/<target>/ (not committed). Crashes, OOMs and timeouts land in
# fuzz/artifacts/<target>/ and make the script exit 1 after all targets have run.
# Prints per target: executions (stat::number_of_executed_units), libFuzzer's final cov:
# (edges) and ft: (features), corpus size, and the verdict.
#
# Toolchain: cargo-fuzz passes nightly-only flags (-Zsanitizer=address, ...) to rustc. The
# project pins stable Rust, so this script sets RUSTC_BOOTSTRAP=1, which lets a stable rustc
# accept -Z flags. It is used for this out-of-workspace fuzz build only, never for the
# library the project ships. cargo-fuzz is installed with `cargo install cargo-fuzz` when
# missing. Jobs run under `nice -n 19` (set VH5_FUZZ_NICE=0 to disable).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
ALL="payload_decode payload_cbor_structured payload_msgpack_structured payload_ffi payload_document slices_copy slices_read slices_write"
TARGETS=${*:-$ALL}
export RUSTC_BOOTSTRAP=1
NICE="nice -n 19"
[ "${VH5_FUZZ_NICE:-1}" = 0 ] && NICE=""

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  t0=$(date +%s)
  $NICE cargo install cargo-fuzz --locked 2>&1 | tail -n 1
  echo "cargo-fuzz installed in $(( $(date +%s) - t0 )) s"
fi

# -O -a: optimised, with debug assertions and integer-overflow checks (-O alone turns them
# off), so an arithmetic overflow in vh5 is a crash, not a silently wrapped value.
echo "== building fuzz targets (release + debug assertions + overflow checks, ASan)"
t0=$(date +%s)
(cd fuzz && $NICE cargo fuzz build -O -a 2>&1 | grep -E "^error|Finished" || true)
[ -x fuzz/target/x86_64-unknown-linux-gnu/release/payload_decode ] || { echo "fuzz build failed"; exit 1; }
echo "built in $(( $(date +%s) - t0 )) s"

mkdir -p fuzz/work
SUMMARY=fuzz/work/summary.txt
: > "$SUMMARY"
failed=""
for t in $TARGETS; do
  work=fuzz/work/$t
  mkdir -p "$work" "fuzz/corpus/$t" "fuzz/artifacts/$t"
  case $t in
    payload_decode|payload_ffi) bash fuzz/seed.sh "fuzz/work/shared-seeds" >/dev/null ;;
  esac
  extra=""
  case $t in
    payload_decode) [ -d fuzz/work/shared-seeds ] && extra=fuzz/work/shared-seeds ;;
    payload_ffi) [ -d fuzz/work/shared-seeds-ffi ] || {
        # the FFI target reads 2 header bytes (flags, alignment pad) before the payload
        mkdir -p fuzz/work/shared-seeds-ffi
        for f in fuzz/work/shared-seeds/*; do [ -e "$f" ] && { printf '\0\0'; cat "$f"; } > "fuzz/work/shared-seeds-ffi/$(basename "$f")"; done
      }
      extra=fuzz/work/shared-seeds-ffi ;;
  esac
  # The slices targets with 2-3 threads: libFuzzer's leak check after each input races with
  # vh5's worker threads still running their thread-local destructors (glibc's
  # __cxa_thread_atexit_impl list, freed only when the thread has exited): a known
  # LeakSanitizer false positive, so leak detection is off for them (ASan stays on; the C
  # programs run under LSan in c_tests/sanitize.sh).
  case $t in
    slices_read|slices_write) opts="-detect_leaks=0" ;;
    *) opts="" ;;
  esac
  log=fuzz/work/$t.log
  echo "== fuzzing $t for $SECS s"
  set +e
  (cd fuzz && $NICE cargo fuzz run -O -a "$t" "work/$t" "corpus/$t" ${extra:+"../$extra"} -- \
      -max_total_time="$SECS" -print_final_stats=1 -rss_limit_mb=2048 -timeout=10 -max_len=16384 $opts \
      > "work/$t.log" 2>&1)
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  final=$(grep -E "^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE)" "$log" | tail -n 1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$final")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$final")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9a-zA-Z]*\).*/\1/p' <<<"$final")
  verdict=ok
  if [ $rc != 0 ]; then
    verdict="FAILED (rc $rc): $(grep -E "ERROR: libFuzzer|SUMMARY|panicked at|Test unit written" "$log" | head -n 3 | tr '\n' ' ')"
    failed="$failed $t"
  fi
  line="$t: ${SECS}s executions=${execs:-?} cov=${cov:-?} ft=${ft:-?} corpus=${corp:-?} $verdict"
  echo "$line" | tee -a "$SUMMARY"
done
echo "== summary (also in $SUMMARY)"
cat "$SUMMARY"
[ -z "$failed" ] || { echo "fuzzing found failures in:$failed (artifacts in fuzz/artifacts/, logs in fuzz/work/)"; exit 1; }
