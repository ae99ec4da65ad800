#!/usr/bin/env bash
# Every shipped baseline through a local submission service on this GPU, compared with harness eval.
# Usage (through the device tool): bash scripts/service_check.sh   (EVAL_FILES narrows the files;
# DEVICE=cpu for a dry run of the script on a machine without a GPU)
# Where fastapi/uvicorn are missing, carry their wheels in .whl-service/ (docs/service.md says how).
# Both sides run MODE (default leaderboard; benchmark is what `make eval` runs, and is quicker for the
# slow torch_reference baselines) with one secret seed (random, kept outside $OUT), so they time the
# same inputs; scripts/service_compare.py writes $OUT/compare.md and exits 1 when a verdict differs.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/service-check-out}
WORK=$(mktemp -d)
mkdir -p "$OUT/local" "$OUT/service"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD:${PYTHONPATH:-}"
source scripts/carried_wheels.sh
python3 -c "import fastapi, uvicorn, multipart, jinja2" || { echo "fastapi/uvicorn missing: see docs/service.md" >&2; exit 1; }

(umask 077; python3 -c "import secrets; print(secrets.randbits(62))" > "$WORK/secret")
DB="$WORK/service.db" PORT=8765
TOKEN=$(python3 -m harness user add gpu-check --db "$DB" | tail -n 1 | awk '{print $NF}')
python3 -m harness serve --port $PORT --db "$DB" --device "${DEVICE:-cuda}" --secret-seed-file "$WORK/secret" \
  --max-unfinished 100 --per-hour 1000 > "$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
get() {  # URL [TOKEN]: the body, with requests (curl may be missing on the GPU machine)
  python3 -c "import sys, requests; h = {'Authorization': 'Bearer ' + sys.argv[2]} if len(sys.argv) > 2 else {}; \
r = requests.get(sys.argv[1], headers=h, timeout=10); print(r.text); sys.exit(not r.ok)" "$@"
}
for _ in $(seq 120); do get "http://127.0.0.1:$PORT/" >/dev/null 2>&1 && break; sleep 1; done

for file in ${EVAL_FILES:-submissions/*/*.py}; do
  name=$(basename "$(dirname "$file")")__$(basename "$file" .py)
  echo "== $name: harness eval, then harness submit ($(date -u +%FT%TZ))"
  python3 -m harness eval "$file" --mode "${MODE:-leaderboard}" --device "${DEVICE:-cuda}" --secret-seed-file "$WORK/secret" \
    --json "$OUT/local/$name.json" > "$OUT/local/$name.txt" 2>&1
  echo "   eval exit $?"
  python3 -m harness submit "$file" --mode "${MODE:-leaderboard}" --server "http://127.0.0.1:$PORT" --token "$TOKEN" \
    --json "$OUT/service/$name.json" > "$OUT/service/$name.txt" 2>&1
  echo "   submit exit $?"
done
get "http://127.0.0.1:$PORT/" > "$OUT/index.html"
for p in nvfp4_gemv nvfp4_gemm nvfp4_dual_gemm nvfp4_group_gemm; do
  get "http://127.0.0.1:$PORT/leaderboards/$p" "$TOKEN" > "$OUT/leaderboard_$p.json"
done
kill $SERVER; wait $SERVER 2>/dev/null
if grep -rqF "$(cat "$WORK/secret")" "$OUT"; then echo "SECRET SEED FOUND UNDER $OUT" | tee "$OUT/SECRET_LEAK"; fi
python3 scripts/service_compare.py "$OUT/local" "$OUT/service" | tee "$OUT/compare.md"
