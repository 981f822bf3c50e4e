#!/usr/bin/env bash
# One lent-GPU round (README "Train on a GPU"): the four systems retrained from scratch at once on
# one card, each a separate process, for a fixed budget (--time-limit; every finished epoch is
# saved whole), then each checkpoint packed as one tar with float16 weights (the device tool brings
# back at most 8 files of 16 MiB; `python -m segviz.pack --unpack` restores float32 files).
#
#   bash scripts/gpu_round.sh OUT DATA_DIR [MINUTES]     # e.g. on the device: $OUT /tmp/data 7
#   ONLY="webnlg-seg-h256 webnlg-pg-h256" EXTRA=--clean bash scripts/gpu_round.sh OUT DATA_DIR 6
#                                                        # some of the runs, with flags added (session 10)
#
# Checkpoint choice: validation loss on the tune half of dev only (--val-half tune).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; DATA=$2; MIN=${3:-7}; DEVICE=${DEVICE:-cuda}
CK=${CK:-/tmp/gpu-ck}; mkdir -p "$CK" "$OUT"
export PYTHONUNBUFFERED=1
COMMON=(--device "$DEVICE" --data-dir "$DATA" --val-half tune --substitute 0.5 --threads 2 --epochs 30 --time-limit "$MIN" ${EXTRA:-})
E2E=(--dataset e2e --clean --reg-weight 1)
WEB=(--dataset webnlg --reg-weight 5 --max-seg-len 16)
declare -A JOBS=(
  [e2e-seg-h512]="${E2E[*]} --model seg --hidden 512"
  [e2e-pg-h512]="${E2E[*]} --model pg --hidden 512"
  [webnlg-seg-h256]="${WEB[*]} --model seg --hidden 256"
  [webnlg-pg-h256]="${WEB[*]} --model pg --hidden 256"
  [webnlg-seg-h512]="${WEB[*]} --model seg --hidden 512"
  [webnlg-pg-h512]="${WEB[*]} --model pg --hidden 512"
)
read -ra NAMES <<<"${ONLY:-${!JOBS[*]}}"  # the runs asked for (ONLY), each once, all of them known
[ "${#NAMES[@]}" -gt 0 ] || { echo "ONLY names no run" >&2; exit 2; }
[ "$(printf '%s\n' "${NAMES[@]}" | sort | uniq -d)" = "" ] || { echo "ONLY names a run twice" >&2; exit 2; }
for name in "${NAMES[@]}"; do [ -n "${JOBS[$name]:-}" ] || { echo "no run named $name" >&2; exit 2; }; done
if [ "$DEVICE" = cuda ]; then  # the card, and each process's GPU memory every 20 s
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$CK/train.log"
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader -l 20 >"$CK/smi.log" 2>&1 &
  SMI=$!
fi
PIDS=()
for name in "${NAMES[@]}"; do
  # shellcheck disable=SC2086  # the job's flags are words
  timeout -s TERM $((MIN * 60 + 150)) python -m segviz.train --out "$CK/$name" ${JOBS[$name]} "${COMMON[@]}" \
    2>&1 | grep --line-buffered -v "%|" | sed -u "s/^/[$name] /" >>"$CK/train.log" &
  PIDS+=($!)
done
wait "${PIDS[@]}"
[ -n "${SMI:-}" ] && kill "$SMI"
grep -h "epoch\|error\|Error\|stopping" "$CK/train.log" | tail -n 80
for name in "${NAMES[@]}"; do
  [ -f "$CK/$name/model.safetensors" ] && python -m segviz.pack "$CK/$name" "$OUT/$name.tar"
done
cat "$CK/train.log" "$CK/smi.log" >"$OUT/train.log" 2>/dev/null
ls -la "$OUT"
