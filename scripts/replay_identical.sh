#!/usr/bin/env bash
# Checks that two mugraph builds generate byte-identical kernel.cu, PTX and manifest.json for
# every shipped schedule (schedules/shipped.txt) and every found one (schedules/found/): run it
# before merging a change to planning or code generation that must leave static schedules as
# they were.
#   [ARCH=sm_80] scripts/replay_identical.sh OLD_MUGRAPH NEW_MUGRAPH [WORK_DIR]
# ARCH: the target (default sm_90). A schedule both builds refuse alike (e.g. one tuned for
# sm_90 that does not fit sm_80) counts as agreeing. Exit 0 when every file agrees; 1 with the
# differing files listed otherwise.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_MUGRAPH NEW_MUGRAPH [WORK_DIR]" >&2
  exit 2
fi
old=$1
new=$2
work=${3:-$(mktemp -d)}
mkdir -p "$work"
arch=${ARCH:-sm_90}
cd "$(dirname "$0")/.."
schedules=()
while read -r file _; do
  case "$file" in '' | '#'*) continue ;; esac
  schedules+=("schedules/$file")
done <schedules/shipped.txt
schedules+=(schedules/found/*.json)
status=0
for schedule in "${schedules[@]}"; do
  name=$(basename "$schedule" .json)
  failed=""
  for side in old new; do
    binary=$old
    [ "$side" = new ] && binary=$new
    if ! "$binary" replay "$schedule" --arch "$arch" --out "$work/$side/$name" \
      >"$work/$side.$name.log" 2>&1; then
      failed="$failed $side"
    fi
  done
  if [ -n "$failed" ]; then
    if [ "$failed" = " old new" ] && cmp -s "$work/old.$name.log" "$work/new.$name.log"; then
      echo "refused alike: $schedule ($(head -c 200 "$work/new.$name.log"))"
    else
      echo "replay failed ($failed ): $schedule (see $work/*.$name.log)" >&2
      status=1
    fi
    continue
  fi
  for file in kernel.cu "$arch.ptx" manifest.json; do
    if ! cmp -s "$work/old/$name/$file" "$work/new/$name/$file"; then
      echo "differs: $schedule $file" >&2
      status=1
    fi
  done
done
[ $status -eq 0 ] && echo "identical: ${#schedules[@]} schedules on $arch (kernel.cu, PTX, manifest.json)"
exit $status
