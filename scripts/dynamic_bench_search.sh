#!/usr/bin/env bash
# Searches issue 28's dynamic-length GEMM on this machine, no GPU needed: the dynamic program
# (tools/bench/dynamic_programs/gemm_dynamic_m_4096x4096.mg) into DIR/dispatch, and the same
# GEMM at each static length into DIR/static/m<M>. Carry DIR to the GPU machine and run
# `DYNAMIC_RUNS=DIR scripts/device_run.sh dynamic` there.
#   scripts/dynamic_bench_search.sh DIR [LENGTHS (1,16,100,512,4096)]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/dynamic_bench_search.sh DIR [LENGTHS]}
lengths=${2:-1,16,100,512,4096}
mg=build/bin/mugraph
program=tools/bench/dynamic_programs/gemm_dynamic_m_4096x4096.mg
mkdir -p "$out/static"
rm -rf "$out/dispatch"
"$mg" superoptimize "$program" --arch sm_90 --max-variants 8 --time-limit 60 --out "$out/dispatch" \
  > "$out/dispatch.log" 2>&1
for m in ${lengths//,/ }; do
  p=$(mktemp --suffix=.mg)
  # The program at one length: its dim line dropped and m written in.
  sed -e '/^dim m /d' -e "s/\[m, /[$m, /" -e "s/^program .*/program gemm_m${m}_4096x4096/" \
    "$program" > "$p"
  rm -rf "$out/static/m$m"
  "$mg" superoptimize "$p" --arch sm_90 --max-variants 3 --time-limit 60 --out "$out/static/m$m" \
    > "$out/static/m$m.log" 2>&1
  rm -f "$p"
  echo "m=$m: $(grep -c '^ *[0-9] ' "$out/static/m$m.log") static variants"
done
grep -A20 '^dispatch over' "$out/dispatch.log" | head -20
