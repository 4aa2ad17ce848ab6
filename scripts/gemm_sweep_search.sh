#!/usr/bin/env bash
# Searches issue 27's GEMM sweep (tools/python/gemm_sweep.py) on this machine, no GPU needed:
# one `mugraph superoptimize` per point, ranked by the cost model, the first SWEEP_MAX_VARIANTS (3) variants' code
# written, into DIR/<case>/. Carry DIR to the GPU machine and run
# `SWEEP_RUNS=DIR scripts/device_run.sh sweep` there to time them against cuBLAS.
#   [SWEEP_CASES=a,b] scripts/gemm_sweep_search.sh DIR [TIME_LIMIT_S (30)]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gemm_sweep_search.sh DIR [TIME_LIMIT_S]}
limit=${2:-30}
programs=$(mktemp -d)
trap 'rm -rf "$programs"' EXIT
python3 tools/python/gemm_sweep.py programs "$programs"
mkdir -p "$out"
for p in "$programs"/*.mg; do
  c=$(basename "$p" .mg)
  if [[ -n ${SWEEP_CASES:-} && ",$SWEEP_CASES," != *",$c,"* ]]; then continue; fi
  if [[ -f $out/$c/summary.json ]]; then echo "$c: done before"; continue; fi
  start=$(date +%s)
  if build/bin/mugraph superoptimize "$p" --arch sm_90 --time-limit "$limit" --max-variants "${SWEEP_MAX_VARIANTS:-3}" \
      --out "$out/$c.tmp" >"$out/$c.log" 2>&1; then
    rm -rf "$out/$c" && mv "$out/$c.tmp" "$out/$c"
    echo "$c: $(( $(date +%s) - start )) s"
  else
    echo "$c: failed ($out/$c.log)"
  fi
done
