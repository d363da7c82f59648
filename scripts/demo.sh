#!/usr/bin/env bash
# vh5 demo: installs what is missing, builds everything, then
#  1. generates sample array payloads (Reductionist CBOR 0.12/0.13.0/0.13.1, big-endian,
#     RFC 8746 typed array, msgpack-numpy) and summarises them with `vh5 payload`;
#  2. generates a sample chunked, gzip-compressed HDF5 file and reads 10,000 random slices
#     from it with `vh5 read`;
#  3. runs on your own inputs when given:
#       scripts/demo.sh [PAYLOAD_FILE ...] [--h5 FILE DATASET]
set -euo pipefail

usage() {
  echo "usage: scripts/demo.sh [PAYLOAD_FILE ...] [--h5 FILE DATASET]" >&2
  exit 2
}

# Arguments are checked before anything is installed or built.
payloads=(); h5file=""; h5dset=""
while [ $# -gt 0 ]; do
  case "$1" in
    --h5)
      if [ $# -lt 3 ] || [ -z "$2" ] || [ -z "$3" ]; then
        echo "scripts/demo.sh: --h5 needs FILE and DATASET" >&2
        usage
      fi
      h5file=$2; h5dset=$3; shift 3 ;;
    -h|--help) usage ;;
    *) payloads+=("$1"); shift ;;
  esac
done

cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== building (release)"
cargo build --release --locked 2>&1 | tail -n 1
VH5=target/release/vh5
DEMO=.demo
mkdir -p "$DEMO/payloads"

echo; echo "== 1. payload views of generated samples ($DEMO/payloads)"
$VH5 payload --make-samples "$DEMO/payloads"
$VH5 payload "$DEMO"/payloads/*.cbor "$DEMO"/payloads/*.msgpack
echo "-- a Reductionist JSON error body passed by mistake is recognised (vh5 exits 1 for it):"
$VH5 payload "$DEMO/payloads/error_body.json" || true
if [ ${#payloads[@]} -gt 0 ]; then
  echo; echo "== payload views of your files"
  $VH5 payload "${payloads[@]}"
fi

echo; echo "== 2. many-slice read from a generated HDF5 file"
$VH5 make-sample "$DEMO/sample.h5"
$VH5 info "$DEMO/sample.h5"
$VH5 read "$DEMO/sample.h5" data --random 10000 --size 10,10 --seed 1

if [ -n "$h5file" ]; then
  echo; echo "== your file: $h5file $h5dset"
  $VH5 info "$h5file"
  $VH5 read "$h5file" "$h5dset" --random 10000 --size 4 --seed 1
fi
echo; echo "demo finished"
