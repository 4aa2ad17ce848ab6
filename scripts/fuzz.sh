#!/usr/bin/env bash
# Runs one fuzz target (fuzz/README.md) for SECONDS on its committed corpus:
#   scripts/fuzz.sh TARGET SECONDS
# The committed corpus fuzz/corpus/TARGET is only read; inputs that find new coverage go to
# $MUGRAPH_FUZZ_BUILD_DIR/fuzz-work/TARGET, and an input that crashes, hangs or leaks is saved
# under $MUGRAPH_FUZZ_BUILD_DIR/fuzz-artifacts/TARGET/ (copy it into the corpus as a
# regression input once fixed). SECONDS 0 runs each committed input once and stops.
# The targets are built by scripts/setup.sh where clang is installed (build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 2 ] || ! [[ $2 =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS (targets: fuzz/targets.cmake)" >&2
  exit 2
fi
target=$1
seconds=$2
build_dir=${MUGRAPH_FUZZ_BUILD_DIR:-build-fuzz}
fuzzer=$build_dir/bin/fuzz_$target
corpus=fuzz/corpus/$target
if [ ! -x "$fuzzer" ] || [ ! -d "$corpus" ]; then
  echo "fuzz: no $fuzzer or $corpus: build the targets with scripts/setup.sh (needs clang)" \
    "or see fuzz/README.md" >&2
  exit 2
fi
work=$build_dir/fuzz-work/$target
# The test suite's runs start from the committed corpus alone, in a folder emptied each time.
if [ -n "${MUGRAPH_FUZZ_FRESH_WORK_DIR:-}" ]; then
  work=$MUGRAPH_FUZZ_FRESH_WORK_DIR
  rm -rf "$work"
fi
artifacts=$build_dir/fuzz-artifacts/$target
mkdir -p "$work" "$artifacts"

# One process (-jobs 1 is libFuzzer's default): the machine is shared. A single input that
# runs 10 s is a hang; leaks are on (ASan's default).
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# Each input is written to a file (the readers take paths): in memory where there is /dev/shm.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi
options=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/")
if [ "$seconds" -eq 0 ]; then
  exec "$fuzzer" "${options[@]}" -runs=0 "$corpus"
fi
exec "$fuzzer" "${options[@]}" -max_total_time="$seconds" "$work" "$corpus"
