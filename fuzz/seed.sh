#!/usr/bin/env bash
# Add the real payload vectors from ../shared/data (never copied into the repo) to a fuzz
# working corpus at run time: the hex messages of payloads/reductionist_vectors.json and the
# recorded server responses payloads/server/*.cbor (and error bodies *.body).
# Usage: fuzz/seed.sh OUT_DIR   (OUT_DIR gets one file per message; prints how many).
# Does nothing (exit 0, says why) when the shared data is absent.
set -euo pipefail
OUT=${1:?usage: fuzz/seed.sh OUT_DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${VH5_SHARED_DATA:-$ROOT/../shared/data}
P=$DATA/payloads
if [ ! -d "$P" ]; then
  echo "seed.sh: no shared payloads at $P (set VH5_SHARED_DATA): using the committed seeds only"
  exit 0
fi
mkdir -p "$OUT"
n=0
if [ -f "$P/reductionist_vectors.json" ]; then
  n=$(python3 - "$P/reductionist_vectors.json" "$OUT" <<'PY'
import json, sys, pathlib
vecs = json.load(open(sys.argv[1]))
out = pathlib.Path(sys.argv[2])
n = 0
for name, v in vecs.items():
    h = v.get("hex") if isinstance(v, dict) else None
    if h:
        (out / f"shared-vector-{name}").write_bytes(bytes.fromhex(h))
        n += 1
print(n)
PY
)
fi
for f in "$P"/server/*.cbor "$P"/server/*.body; do
  [ -e "$f" ] || continue
  cp "$f" "$OUT/shared-server-$(basename "$f")"
  n=$((n+1))
done
echo "seed.sh: $n shared messages -> $OUT"
