#!/usr/bin/env bash
# Lent-GPU fine-tune rounds (README "Train on a GPU"): several `segviz.train --init` runs at once on
# one card, each checkpoint then packed as one float16 tar (segviz.pack) for the file return; the
# CUDA smoke tests (pytest -m gpu) run beside them. ROUND picks the runs:
#
#   bash scripts/gpu_finetune.sh OUT DATA_DIR PRE                       # ROUND=e2e-abbr (session 9)
#   ROUND=webnlg-clean [MIN=5.5] bash scripts/gpu_finetune.sh OUT DATA_DIR   # session 10 (MIN: --time-limit, default 6)
#   ROUND=webnlg-wd [MIN=5] bash scripts/gpu_finetune.sh OUT DATA_DIR      # session 13
#   ROUND=webnlg-sub [MIN=4] bash scripts/gpu_finetune.sh OUT DATA_DIR     # session 13, second round
#   ROUND=webnlg-fig [MIN=4] bash scripts/gpu_finetune.sh OUT DATA_DIR     # session 21
#
# e2e-abbr: the E2E fine-tunes with invented names that have an abbreviation's full stop inside
# them (train --abbreviations). PRE/e2e-seg and PRE/e2e-pg are the checkpoints the shipped
# substitution fine-tune started from (git show 2f61e37:checkpoints/e2e-seg/..., 012c557:...):
# `*-abbr` repeats that fine-tune (e2e-seg epochs 19-20, e2e-pg 7-8, lr 0.0002, --substitute 0.5)
# with --abbreviations; `*-abbr-more` continues the shipped checkpoints two more epochs the same way.
# webnlg-clean: the WebNLG checkpoints fine-tuned on the training references the checker finds
# exact (train --clean, as the E2E ones were), and `webnlg-seg-more` the same epochs without it.
# webnlg-wd: the shipped WebNLG checkpoints four more epochs on the same references (the clean list
# they were fine-tuned on), with word dropout on the decoder input (train --word-dropout) and
# without it (`*-more`, the control for the extra epochs). It ran on the session-12 checkpoints (epoch 32;
# git 50cc80d): to run it again, put those in checkpoints/ first, as the shipped ones now stop at epoch 40.
# webnlg-sub: the session-13 checkpoints four more epochs with more of the training examples given
# invented names (--substitute 0.8 / 1.0; `*-sub5`: 0.5 as before, the control).
# webnlg-fig: the shipped WebNLG checkpoints four more epochs with invented dates and numbers in a
# share of the examples (train --figures 0.5 / 1.0), and without (`*-more44`, `*-more46`: the control).
# Checkpoint choice: validation loss on the tune half of dev (--val-half tune).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=$1; DATA=$2; PRE=${3:-}; DEVICE=${DEVICE:-cuda}; ROUND=${ROUND:-e2e-abbr}
[ "$ROUND" != e2e-abbr ] || [ -n "$PRE" ] || { echo "ROUND=e2e-abbr needs PRE (the checkpoints before substitution)" >&2; exit 2; }
CK=${CK:-/tmp/gpu-ck}; mkdir -p "$CK" "$OUT"
export PYTHONUNBUFFERED=1
if [ "$ROUND" = e2e-abbr ]; then
  COMMON=(--dataset e2e --device "$DEVICE" --data-dir "$DATA" --val-half tune --substitute 0.5 --abbreviations
          --lr 0.0002 --threads 3)  # fmt: skip
  declare -A JOBS=(
    [e2e-seg-abbr]="--model seg --init $PRE/e2e-seg --epochs 20"
    [e2e-pg-abbr]="--model pg --init $PRE/e2e-pg --epochs 8"
    [e2e-seg-abbr-more]="--model seg --init checkpoints/e2e-seg --epochs 22"
    [e2e-pg-abbr-more]="--model pg --init checkpoints/e2e-pg --epochs 10"
  )
elif [ "$ROUND" = webnlg-clean ]; then
  COMMON=(--dataset webnlg --device "$DEVICE" --data-dir "$DATA" --val-half tune --substitute 0.5 --threads 3
          --time-limit "${MIN:-6}")  # fmt: skip
  declare -A JOBS=(
    [webnlg-seg-clean]="--model seg --init checkpoints/webnlg-seg --clean --lr 0.0002 --epochs 32"
    [webnlg-seg-clean-hi]="--model seg --init checkpoints/webnlg-seg --clean --lr 0.0005 --epochs 32"
    [webnlg-seg-more]="--model seg --init checkpoints/webnlg-seg --lr 0.0002 --epochs 32"
    [webnlg-pg-clean]="--model pg --init checkpoints/webnlg-pg --clean --lr 0.0002 --epochs 42"
  )
elif [ "$ROUND" = webnlg-wd ]; then
  COMMON=(--dataset webnlg --device "$DEVICE" --data-dir "$DATA" --val-half tune --substitute 0.5 --threads 3
          --clean --clean-list scripts/webnlg-clean-s11.json --lr 0.0002 --time-limit "${MIN:-5}")  # fmt: skip
  declare -A JOBS=(
    [webnlg-seg-more]="--model seg --init checkpoints/webnlg-seg --epochs 36"
    [webnlg-seg-wd15]="--model seg --init checkpoints/webnlg-seg --epochs 36 --word-dropout 0.15"
    [webnlg-seg-wd30]="--model seg --init checkpoints/webnlg-seg --epochs 36 --word-dropout 0.3"
    [webnlg-pg-more]="--model pg --init checkpoints/webnlg-pg --epochs 46"
    [webnlg-pg-wd15]="--model pg --init checkpoints/webnlg-pg --epochs 46 --word-dropout 0.15"
  )
elif [ "$ROUND" = webnlg-sub ]; then
  COMMON=(--dataset webnlg --device "$DEVICE" --data-dir "$DATA" --val-half tune --threads 3
          --clean --clean-list scripts/webnlg-clean-s11.json --lr 0.0002 --time-limit "${MIN:-4}")  # fmt: skip
  declare -A JOBS=(
    [webnlg-seg-sub5]="--model seg --init checkpoints/webnlg-seg --epochs 44 --substitute 0.5"
    [webnlg-seg-sub8]="--model seg --init checkpoints/webnlg-seg --epochs 44 --substitute 0.8"
    [webnlg-seg-sub10]="--model seg --init checkpoints/webnlg-seg --epochs 44 --substitute 1.0"
    [webnlg-pg-sub8]="--model pg --init checkpoints/webnlg-pg --epochs 46 --substitute 0.8"
  )
elif [ "$ROUND" = webnlg-fig ]; then
  COMMON=(--dataset webnlg --device "$DEVICE" --data-dir "$DATA" --val-half tune --threads 3 --substitute 0.5
          --clean --clean-list scripts/webnlg-clean-s11.json --lr 0.0002 --time-limit "${MIN:-4}")  # fmt: skip
  declare -A JOBS=(
    [webnlg-seg-fig5]="--model seg --init checkpoints/webnlg-seg --epochs 44 --figures 0.5"
    [webnlg-seg-fig10]="--model seg --init checkpoints/webnlg-seg --epochs 44 --figures 1.0"
    [webnlg-seg-more44]="--model seg --init checkpoints/webnlg-seg --epochs 44"
    [webnlg-pg-fig5]="--model pg --init checkpoints/webnlg-pg --epochs 46 --figures 0.5"
    [webnlg-pg-more46]="--model pg --init checkpoints/webnlg-pg --epochs 46"
  )
else
  echo "ROUND must be e2e-abbr, webnlg-clean, webnlg-wd, webnlg-sub or webnlg-fig, not $ROUND" >&2; exit 2
fi
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
