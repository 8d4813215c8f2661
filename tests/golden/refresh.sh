#!/bin/sh
# Refreshes the golden metrics on purpose: after a change that is meant to
# move the numbers (a timing fix, a new scheduler rule), run
#
#   tests/golden/refresh.sh [path/to/kvsim]        (default: build/kvsim)
#
# from the repository root, review `git diff tests/golden/` (every changed
# number is a behaviour change you are signing off), and commit it with the
# change. Each tests/golden/NAME.metrics.json is the metrics.json of
# configs/scenarios/NAME.yaml; add a scenario by adding its name below.
# sim.wall_s (host time) is written as 0: `kvsim check` skips it anyway.
set -eu
kvsim=${1:-build/kvsim}
here=$(dirname "$0")
root=$here/../..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in default shared-prefix preempt-recompute preempt-swap qwen3-32b-tp4; do
  "$kvsim" run "$root/configs/scenarios/$name.yaml" --quiet --out "$tmp/$name"
  sed 's/"wall_s": [0-9.eE+-]*/"wall_s": 0.0/' "$tmp/$name/metrics.json" > "$here/$name.metrics.json"
  echo "refreshed $here/$name.metrics.json"
done
