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
# sim.wall_s (host time) is written as 0 and the provenance section (which
# build and checkout wrote the file) is left out: `kvsim check` skips both.
set -eu
kvsim=${1:-build/kvsim}
here=$(dirname "$0")
root=$here/../..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in default shared-prefix preempt-recompute preempt-swap qwen3-32b-tp4; do
  "$kvsim" run "$root/configs/scenarios/$name.yaml" --quiet --out "$tmp/$name"
  sed 's/"wall_s": [0-9.eE+-]*/"wall_s": 0.0/' "$tmp/$name/metrics.json" | awk '
    skip { if ($0 == "  }") skip = 0; next }
    $0 == "  \"provenance\": {" { sub(/,$/, "", prev); skip = 1; next }
    { if (have) print prev; prev = $0; have = 1 }
    END { if (have) print prev }' > "$here/$name.metrics.json"
  echo "refreshed $here/$name.metrics.json"
done
