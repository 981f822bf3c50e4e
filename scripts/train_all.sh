#!/usr/bin/env bash
# Replay, from scratch, how every shipped checkpoint in checkpoints/ was trained.
#
#   bash scripts/train_all.sh [--dry-run] [OUT]     # OUT defaults to runs/replay; checkpoints/ is never touched
#
# Each `train` line is a command that was run (README "Reproduce"; commits e5c6014, 6d70ee0,
# 5b43a43, d037be8, 012c557, 2f61e37, and the lent-GPU runs of sessions 6, 9 and 10), in order, with --epochs set to the epoch where that run
# actually ended: most runs were stopped by hand for time, not by early stopping, so e.g. the first
# e2e-seg run, started with --epochs 10, is `--epochs 8` here. Run as written, every OUT/NAME ends
# with as many epochs in history.json, at the same learning rate per epoch, as checkpoints/NAME
# (tests/test_train_all.py checks that against the shipped history.json files). Every command is
# also appended to OUT/NAME/commands.txt, so each replayed checkpoint says how it was made; the
# training ones are also in its history.json (segviz.train records each stretch of epochs there),
# as they are in the shipped checkpoints' history.json, added from this script afterwards.
#
# Cost: the shipped runs took about 6 hours of 2-core CPU time in all (README "Reproduce");
# --threads 1 as they ran (several at once on 2 cores). `--dry-run` prints the commands only.
set -euo pipefail
cd "$(dirname "$0")/.."

DRY=
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
OUT=${1:-runs/replay}
PY=${PYTHON:-python3}

run() {  # print, record in OUT/NAME/commands.txt (NAME = $1), run
  local name=$1; shift
  echo "$*"
  [ -n "$DRY" ] && return 0
  mkdir -p "$OUT/$name"
  echo "$*" >>"$OUT/$name/commands.txt"
  "$@"
}

train() {  # train NAME ARGS...: one `python -m segviz.train` step writing OUT/NAME
  local name=$1; shift
  run "$name" "$PY" -m segviz.train --out "$OUT/$name" --threads 1 "$@"
}

# set_aside SUFFIX NAME...: OUT/NAME becomes OUT/NAME-SUFFIX (a --init source), and a new OUT/NAME
# starts with its commands.txt
set_aside() {
  local suffix=$1; shift
  for name in "$@"; do
    run "$name" mv "$OUT/$name" "$OUT/$name-$suffix"
    [ -n "$DRY" ] || { mkdir -p "$OUT/$name" && cp "$OUT/$name-$suffix/commands.txt" "$OUT/$name/"; }
  done
}

if [ -z "$DRY" ]; then
  for name in e2e-seg e2e-pg webnlg-seg webnlg-pg e2e-seg-ablation-w0 e2e-seg-ablation-w5; do
    if [ -e "$OUT/$name" ]; then echo "error: $OUT/$name exists; the replay starts from scratch (choose another OUT)" >&2; exit 2; fi
  done
fi

# ----- first session: the four models at once, lr 0.002 ------------------------------------------
train e2e-seg    --dataset e2e    --model seg --reg-weight 1 --epochs 8   # started with --epochs 10; stopped after 8
train e2e-pg     --dataset e2e    --model pg  --epochs 4                  # started with --epochs 10; stopped after 4

# ----- regulariser ablation: two small E2E runs, identical but for the weight ----------------------
train e2e-seg-ablation-w0 --dataset e2e --model seg --max-examples 6000 --max-val-examples 1000 --epochs 3 --reg-weight 0
train e2e-seg-ablation-w5 --dataset e2e --model seg --max-examples 6000 --max-val-examples 1000 --epochs 3 --reg-weight 5

# ----- second session: resumed from OUT/NAME/last/; --lr on --resume replaces the stored rate ------
train e2e-seg    --dataset e2e    --model seg --resume --epochs 10 --lr 0.0002
train e2e-seg    --dataset e2e    --model seg --resume --epochs 11 --lr 0.00002

# ----- E2E fine-tuning on the cleaned training references (--clean; README "Choices") --------------
# (the 26,554 references every E2E checker up to session 24's finds exact: --clean-list
# scripts/e2e-clean-s24-*.json, made by scripts/clean_list.py on git 390c73e; session 25's checker drops two
# more, whose references add "clowns is a restaurant near the portland arms .")
train e2e-seg --dataset e2e --model seg --resume --clean --clean-list scripts/e2e-clean-s24-all.json --epochs 15 --lr 0.0002
train e2e-seg --dataset e2e --model seg --resume --epochs 18   # stays --clean; epoch 18 rose: epoch 17's weights are kept
# e2e-pg went on from its epoch-4 weights with a fresh Adam state (the first session's resume state was
# incomplete): today that is --init from a copy of the epoch-4 checkpoint
run e2e-pg mv "$OUT/e2e-pg" "$OUT/e2e-pg-epoch4"
[ -n "$DRY" ] || { mkdir -p "$OUT/e2e-pg" && cp "$OUT/e2e-pg-epoch4/commands.txt" "$OUT/e2e-pg/"; }
train e2e-pg --dataset e2e --model pg --init "$OUT/e2e-pg-epoch4" --clean --clean-list scripts/e2e-clean-s24-all.json --epochs 6 --lr 0.0002

# ----- third session: both E2E models fine-tuned with invented names (--substitute 0.5, segviz/augment.py) ----
# --init starts a new folder from the best weights so far with a fresh Adam state (README "Reproduce")
set_aside before-substitute e2e-seg e2e-pg
train e2e-seg    --dataset e2e    --model seg --init "$OUT/e2e-seg-before-substitute"    --substitute 0.5 --epochs 20 --lr 0.0002
train e2e-pg     --dataset e2e    --model pg  --init "$OUT/e2e-pg-before-substitute"     --substitute 0.5 --epochs 8  --lr 0.0002

# ----- sixth session: WebNLG from scratch on a lent GPU (one H200; six runs at once, scripts/gpu_round.sh),
# at the paper's WebNLG size (hidden 256), with invented names from the start (--substitute 0.5) and the
# checkpoint chosen on the tune half of dev (--val-half tune). Each stretch was ended by --time-limit (6 min,
# then 4.3 min resumed; history.json keeps the command lines as run); --epochs here is where it ended.
# Without CUDA this runs on the CPU (about 25x slower: README "Train on a GPU").
train webnlg-seg --dataset webnlg --model seg --reg-weight 5 --max-seg-len 16 --hidden 256 --val-half tune --substitute 0.5 --epochs 14
train webnlg-seg --dataset webnlg --model seg --resume --substitute 0.5 --epochs 28
train webnlg-pg  --dataset webnlg --model pg  --hidden 256 --val-half tune --substitute 0.5 --epochs 19
train webnlg-pg  --dataset webnlg --model pg  --resume --substitute 0.5 --epochs 38

# ----- ninth session: both E2E models two more epochs with invented names, now also with an
# abbreviation's full stop inside ("St. Brouthal": --abbreviations, segviz/augment.py), on a lent GPU
# (scripts/gpu_finetune.sh, four runs at once on one H200, 20 s per epoch); --init: a fresh Adam state from
# the shipped weights; chosen over them on the tune half's stress suites (README "Choices")
set_aside before-abbreviations e2e-seg e2e-pg
train e2e-seg --dataset e2e --model seg --init "$OUT/e2e-seg-before-abbreviations" --val-half tune --clean-list scripts/e2e-clean-s24-tune.json --substitute 0.5 --abbreviations --epochs 22 --lr 0.0002
train e2e-pg  --dataset e2e --model pg  --init "$OUT/e2e-pg-before-abbreviations"  --val-half tune --clean-list scripts/e2e-clean-s24-tune.json --substitute 0.5 --abbreviations --epochs 10 --lr 0.0002

# ----- tenth session: both WebNLG models four more epochs on the training references the checker finds
# exact (--clean, as the E2E models in the first session), first on a lent GPU (ROUND=webnlg-clean
# scripts/gpu_finetune.sh, 15,067 of 18,102 references); --init: a fresh Adam state from the shipped
# weights; webnlg-seg at lr 0.0005 (chosen over 0.0002 and over four epochs without --clean on the tune
# half's stress suites, README "Choices"), webnlg-pg at 0.0002. Run again as written in session 11 on
# the 2-core CPU (--threads 2, 95–99 s per seg epoch) after the checker fix that keeps 15,415 of 18,102:
# those weights are the shipped ones. Since session 12 the step reads the references that checker kept
# (--clean-list scripts/webnlg-clean-s11.json, made by scripts/clean_list.py on git bca881c), not what
# today's checker keeps (15,628, another set: the same step then gives other weights, README "Choices")
set_aside before-clean webnlg-seg webnlg-pg
train webnlg-seg --dataset webnlg --model seg --init "$OUT/webnlg-seg-before-clean" --val-half tune --substitute 0.5 --clean --clean-list scripts/webnlg-clean-s11.json --epochs 32 --lr 0.0005
train webnlg-pg  --dataset webnlg --model pg  --init "$OUT/webnlg-pg-before-clean"  --val-half tune --substitute 0.5 --clean --clean-list scripts/webnlg-clean-s11.json --epochs 42 --lr 0.0002

# ----- thirteenth session: webnlg-seg eight more epochs on the same references at lr 0.0002, on a lent GPU
# (ROUND=webnlg-wd scripts/gpu_finetune.sh: run webnlg-seg-more, four epochs, the rate decayed to 0.00002 after
# the second; then resumed four more at 0.0002 with --resume --lr). Chosen over the session-12 weights, four
# epochs, and word dropout 0.05 / 0.15 / 0.3 on the tune half's long-input suite (README "Choices")
set_aside before-more webnlg-seg
train webnlg-seg --dataset webnlg --model seg --init "$OUT/webnlg-seg-before-more" --val-half tune --substitute 0.5 --clean --clean-list scripts/webnlg-clean-s11.json --epochs 36 --lr 0.0002
train webnlg-seg --dataset webnlg --model seg --resume --val-half tune --substitute 0.5 --clean --clean-list scripts/webnlg-clean-s11.json --epochs 40 --lr 0.0002

# ----- twenty-second session: both WebNLG models one more epoch with relation dropout (--relation-dropout 0.5,
# segviz/augment.py: each training record's relation words read as never seen with probability 0.5), on this
# 2-core CPU (6-7 min per epoch); --init: a fresh Adam state from the shipped weights. Chosen over the shipped
# weights and over --relation-dropout 0.3 (two epochs, the first the best on validation) on the tune half's
# stress suites (unseen relations and long inputs, README "Choices")
set_aside before-relations webnlg-seg webnlg-pg
train webnlg-seg --dataset webnlg --model seg --init "$OUT/webnlg-seg-before-relations" --val-half tune --substitute 0.5 --clean --clean-list scripts/webnlg-clean-s11.json --epochs 41 --lr 0.0002 --relation-dropout 0.5
train webnlg-pg  --dataset webnlg --model pg  --init "$OUT/webnlg-pg-before-relations"  --val-half tune --substitute 0.5 --clean --clean-list scripts/webnlg-clean-s11.json --epochs 43 --lr 0.0002 --relation-dropout 0.5

# ----- twenty-fourth session: both E2E models two more epochs with food / area / eatType values outside the
# closed sets (--open-values 0.5, segviz/augment.py), on this 2-core CPU (2 minutes per epoch); --init: a fresh
# Adam state from the shipped weights. Chosen over four epochs each on the tune half's closed-set and
# long-input suites (README "Values outside the closed sets")
set_aside before-open e2e-seg e2e-pg
train e2e-seg --dataset e2e --model seg --init "$OUT/e2e-seg-before-open" --substitute 0.5 --abbreviations --open-values 0.5 --clean --clean-list scripts/e2e-clean-s24-tune.json --val-half tune --epochs 24 --lr 0.0002
train e2e-pg  --dataset e2e --model pg  --init "$OUT/e2e-pg-before-open"  --substitute 0.5 --abbreviations --open-values 0.5 --clean --clean-list scripts/e2e-clean-s24-tune.json --val-half tune --epochs 12 --lr 0.0002

# ----- value lexicons and dev metrics of the four shipped systems ----------------------------------
# (E2E: --min-rate 0.02 and e2e-seg's default rules auto+fillers+paraphrases(+stating), chosen on the tune
# half of dev, README "Choices"; e2e-seg's lexicon from the checker-clean references (--clean,
# session 6), rarer words by lift and the segment words of its own alignment (--min-lift 20
# --segments, session 7); WebNLG: the defaults, webnlg-seg's value rules auto+once+qualifiers+spellings+forms+echo+onward+plurals and the relation words of its own alignment, --relations, session 18;
# +months for both WebNLG models since session 21, +doubles since session 22; +open+doubles for both E2E
# models since session 24; e2e-seg's segment words from its own alignment, each an attribute's own word
# (--attribute-lift 2, the default since session 25; session 24's lexicon kept session 9's segment words);
# +absent for e2e-seg since session 25, in free decoding too (README "Segment words of their own attribute");
# +second for both segment models since session 31, reading the PG beside them (README "A second opinion");
# +stating for webnlg-seg since session 32, a subject stating none of its records (README "Segments that state
# their own value"); +codes for both WebNLG models since session 33; +read for webnlg-seg since session 34, an
# object that is another entity of the input read by the mention rule (README "The checker reads what a text has said");
# +unheld for webnlg-seg since session 42, no number the input does not hold (README "Numbers the input does not hold");
# +planned for webnlg-seg since session 43, outside and begun under a forced plan too (README "A value inside a longer name, under a plan");
# +strangers for webnlg-seg since session 44, no entity word the input does not hold (README "Names the input does not hold");
# +babble for webnlg-seg since session 45, no relation word said twice in a segment (README "Relation words said twice in a segment");
# +numerals+alien since session 46, a figure written otherwise is that figure, no relation word of relations the input
# does not hold (README "A figure said twice, and relations the input does not hold"))
run e2e-seg    "$PY" -m segviz.lexicon --checkpoint "$OUT/e2e-seg" --min-rate 0.02 --min-lift 20 --value-rules auto+fillers+paraphrases+stating+open+doubles+absent+once+echo+read+foreign+spent+second+renorm --clean --segments
run e2e-pg     "$PY" -m segviz.lexicon --checkpoint "$OUT/e2e-pg" --min-rate 0.02 --value-rules auto+open+doubles
run webnlg-seg "$PY" -m segviz.lexicon --checkpoint "$OUT/webnlg-seg" --value-rules auto+once+qualifiers+spellings+forms+echo+onward+plurals+months+doubles+dates+second+stating+codes+read+literal+outside+heads+begun+resegment+split+unheld+planned+strangers+babble+numerals+alien+fullstop+renorm+heard --relations
run webnlg-pg  "$PY" -m segviz.lexicon --checkpoint "$OUT/webnlg-pg" --value-rules auto+months+doubles+dates+codes
for name in e2e-seg e2e-pg webnlg-seg webnlg-pg; do
  run "$name" "$PY" -m segviz.report --checkpoint "$OUT/$name" --out-dir "$OUT/outputs"
done
