#!/usr/bin/env bash
# Run every vh5 test: Rust unit/integration/property tests, header freshness, C and C++
# programs against the built library, and the Python tests. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== cargo build (release library, CLI)"
cargo build --release --locked 2>&1 | tail -n 2

echo "== cargo test"
cargo test --release --locked 2>&1 | tee /tmp/vh5-cargo-test.log | grep -E "^test result|FAILED|panicked|^error" || true
grep -q "test result: FAILED\|^error" /tmp/vh5-cargo-test.log && { echo "cargo test failed"; exit 1; }
grep -q "^test result: ok" /tmp/vh5-cargo-test.log || { echo "cargo test ran nothing"; exit 1; }

echo "== C and C++ tests"
bash c_tests/run.sh target/release
bash c_tests/sanitize.sh target/release   # ASan+UBSan+LSan and valgrind on the C programs
bash c_tests/install_check.sh

if [ "${VH5_FUZZ_SMOKE:-0}" = 1 ]; then
  echo "== fuzz smoke (VH5_FUZZ_SMOKE=1): 30 s per payload target"
  bash scripts/fuzz.sh 30
fi

echo "== Python tests"
export VH5_LIBRARY="$PWD/target/release/libvh5.so"
export VH5_CLI="$PWD/target/release/vh5"
python3 -m pytest -q tests/python
