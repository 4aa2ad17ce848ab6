#!/usr/bin/env bash
# Searches one of issue 28's dynamic programs on this machine, no GPU needed: the dynamic
# program into DIR/dispatch, and the same program at each static length into
# DIR/static/<dim><N> (its one dynamic dim written in). Carry DIR to the GPU machine and run
# `DYNAMIC_RUNS=DIR scripts/device_run.sh dynamic` there.
#   scripts/dynamic_bench_search.sh DIR [LENGTHS (1,16,100,512,4096)] [PROGRAM]
# PROGRAM defaults to the projection tools/bench/dynamic_programs/gemm_dynamic_m_4096x4096.mg;
# DISPATCH=0 searches the static lengths only (the dispatch then comes from a `--profile` run
# on the GPU machine). SEARCH_ARGS: extra superoptimize flags for every search.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/dynamic_bench_search.sh DIR [LENGTHS] [PROGRAM]}
lengths=${2:-1,16,100,512,4096}
program=${3:-tools/bench/dynamic_programs/gemm_dynamic_m_4096x4096.mg}
mg=build/bin/mugraph
dim=$(sed -n -E 's/^dim ([A-Za-z_][A-Za-z0-9_]*) in .*/\1/p' "$program")
[[ $(wc -w <<<"$dim") == 1 ]] || { echo "$program: needs exactly one dynamic dim" >&2; exit 2; }
name=$(sed -n -E 's/^program ([^ ]+).*/\1/p' "$program")
mkdir -p "$out/static"
if [[ ${DISPATCH:-1} != 0 ]]; then
  rm -rf "$out/dispatch"
  "$mg" superoptimize "$program" --arch sm_90 --max-variants 8 --time-limit 60 ${SEARCH_ARGS:-} \
    --out "$out/dispatch" > "$out/dispatch.log" 2>&1
fi
for n in ${lengths//,/ }; do
  p=$(mktemp --suffix=.mg)
  # The program at one length: its dim line dropped and the length written into the shapes.
  sed -E -e "/^dim $dim /d" -e "/^input /s/\\b$dim\\b/$n/g" -e "s/^program .*/program ${name}_$dim$n/" \
    "$program" > "$p"
  rm -rf "$out/static/$dim$n"
  "$mg" superoptimize "$p" --arch sm_90 --max-variants 3 --time-limit 60 ${SEARCH_ARGS:-} \
    --out "$out/static/$dim$n" > "$out/static/$dim$n.log" 2>&1 || true
  rm -f "$p"
  echo "$dim=$n: $(grep -c '^ *[0-9] ' "$out/static/$dim$n.log") static variants"
done
[[ ${DISPATCH:-1} == 0 ]] || grep -A20 '^dispatch over' "$out/dispatch.log" | head -20
