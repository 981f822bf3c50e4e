#!/usr/bin/env bash
# The lent-GPU round of session 9 (README "Train on a GPU"): the E2E fine-tunes with invented
# names that have an abbreviation's full stop inside them (train --abbreviations), four runs at once
# on one card, then each checkpoint packed as one float16 tar (segviz.pack) for the file return;
# the CUDA smoke tests (pytest -m gpu) run beside them.
#
#   bash scripts/gpu_finetune.sh OUT DATA_DIR PRE     # PRE: the checkpoints before substitution
#
# PRE/e2e-seg and PRE/e2e-pg are the checkpoints the shipped substitution fine-tune started from
# (git show 2f61e37:checkpoints/e2e-seg/..., 012c557:checkpoints/e2e-pg/...): `*-abbr` repeats
# that fine-tune (e2e-seg epochs 19-20, e2e-pg 7-8, lr 0.0002, --substitute 0.5) with
# --abbreviations; `*-abbr-more` continues the shipped checkpoints two more epochs the same way.
# Checkpoint choice: validation loss on the tune half of dev (--val-half tune).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; DATA=$2; PRE=$3; DEVICE=${DEVICE:-cuda}
CK=${CK:-/tmp/gpu-ck}; mkdir -p "$CK" "$OUT"
export PYTHONUNBUFFERED=1
COMMON=(--dataset e2e --device "$DEVICE" --data-dir "$DATA" --val-half tune --substitute 0.5 --abbreviations
        --lr 0.0002 --threads 3)  # fmt: skip
declare -A JOBS=(
  [e2e-seg-abbr]="--model seg --init $PRE/e2e-seg --epochs 20"
  [e2e-pg-abbr]="--model pg --init $PRE/e2e-pg --epochs 8"
  [e2e-seg-abbr-more]="--model seg --init checkpoints/e2e-seg --epochs 22"
  [e2e-pg-abbr-more]="--model pg --init checkpoints/e2e-pg --epochs 10"
)
PIDS=()
for name in "${!JOBS[@]}"; do
  # shellcheck disable=SC2086  # the job's flags are words
  python -m segviz.train --out "$CK/$name" ${JOBS[$name]} "${COMMON[@]}" 2>&1 \
    | grep --line-buffered -v "%|" | sed -u "s/^/[$name] /" >>"$CK/train.log" &
  PIDS+=($!)
done
if [ "$DEVICE" = cuda ]; then
  python -m pytest -q -m gpu tests/test_device.py -p no:cacheprovider -s 2>&1 | tail -n 15 | tee "$OUT/pytest-gpu.log"
fi
wait "${PIDS[@]}"
grep -h "epoch\|rror\|stopping" "$CK/train.log" | tail -n 40
for name in "${!JOBS[@]}"; do
  [ -f "$CK/$name/model.safetensors" ] && python -m segviz.pack "$CK/$name" "$OUT/$name.tar"
done
cp "$CK/train.log" "$OUT/train.log"
ls -la "$OUT"
