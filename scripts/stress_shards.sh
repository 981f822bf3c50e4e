#!/usr/bin/env bash
# The stress suites in shards over many cores (README "Stress suites", session 16): each line of
# LIST is a run's NAME and its `python -m segviz.stress` arguments (with --shard I/N); the lines
# run P at a time (default: every core), one thread each, until DEADLINE seconds have passed;
# each finished shard is DIR/NAME.json, a line whose file is there is skipped, so the same call
# again goes on where the last stopped. Then `python -m segviz.stress --merge DIR/PREFIX*.json`.
#
#   bash scripts/stress_shards.sh DIR LIST DEADLINE      # e.g. runs/shards list.txt 480
#   python -m segviz.stress --merge runs/shards/wg-*.json --json runs/webnlg-guided.json
set -uo pipefail
cd "$(dirname "$0")/.."
DIR=$1; LIST=$2; END=$(($(date +%s) + $3)); P=${P:-$(nproc)}
mkdir -p "$DIR"
export DIR END PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
run_one() {
  local name=$1; shift
  local left=$((END - $(date +%s)))
  if [ -s "$DIR/$name.json" ] || [ "$left" -le 0 ]; then return 0; fi
  timeout "$left" python -m segviz.stress "$@" --threads 1 --json "$DIR/$name.part" >"$DIR/$name.md" 2>"$DIR/$name.err" \
    && mv "$DIR/$name.part" "$DIR/$name.json"
  echo "$name rc=$? $(date +%T)"
}
export -f run_one
# one line, one run: blank lines and comments left out, trailing blanks cut (xargs -L would join
# a line that ends in a blank to the next); arguments are words, no quotes
grep -v '^\s*\(#\|$\)' "$LIST" | sed 's/[[:space:]]*$//' | xargs -P "$P" -L 1 bash -c 'run_one "$@"' _
NAMES=$(grep -v '^\s*\(#\|$\)' "$LIST" | awk '{print $1}')
DONE=$(for n in $NAMES; do [ -s "$DIR/$n.json" ] && echo "$n"; done | wc -l)
echo "done: $DONE of $(echo "$NAMES" | wc -w) shards"
[ "$DONE" -eq "$(echo "$NAMES" | wc -w)" ]  # the status: 0 when every shard is done
