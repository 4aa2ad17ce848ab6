#!/usr/bin/env bash
# Searches program files on this machine as a new user would (no GPU, no --profile), one
# `mugraph superoptimize` per program into DIR/<program>/ (3 variants, SEARCH_ARGS added), for
# `RUNS=DIR scripts/device_run.sh runs` on the GPU machine, which times them against PyTorch.
# A program already searched into DIR is skipped. TIME_LIMIT_S 0: no limit.
#   scripts/search_runs.sh DIR TIME_LIMIT_S PROGRAM.mg...
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/search_runs.sh DIR TIME_LIMIT_S PROGRAM.mg...}
limit=${2:?usage: scripts/search_runs.sh DIR TIME_LIMIT_S PROGRAM.mg...}
shift 2
mkdir -p "$out"
for p in "$@"; do
  c=$(basename "$p" .mg)
  if [[ -f $out/$c/summary.json ]]; then echo "$c: done before"; continue; fi
  start=$(date +%s)
  limits=()
  [[ $limit != 0 ]] && limits=(--time-limit "$limit")
  if build/bin/mugraph superoptimize "$p" --arch sm_90 "${limits[@]}" --max-variants 3 \
      ${SEARCH_ARGS:-} --out "$out/$c.tmp" > "$out/$c.log" 2>&1; then
    rm -rf "$out/$c" && mv "$out/$c.tmp" "$out/$c"
    echo "$c: $(( $(date +%s) - start )) s"
  else
    echo "$c: failed, exit $? ($out/$c.log)"
  fi
done
