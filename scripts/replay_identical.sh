#!/usr/bin/env bash
# Checks that two mugraph builds generate byte-identical kernel.cu, PTX and manifest.json for
# every shipped schedule (schedules/shipped.txt) and every found one (schedules/found/): run it
# before merging a change to planning or code generation that must leave static schedules as
# they were.
#   scripts/replay_identical.sh OLD_MUGRAPH NEW_MUGRAPH [WORK_DIR]
# Exit 0 when every file agrees; 1 with the differing files listed otherwise.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD_MUGRAPH NEW_MUGRAPH [WORK_DIR]" >&2
  exit 2
fi
old=$1
new=$2
work=${3:-$(mktemp -d)}
mkdir -p "$work"
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
  for side in old new; do
    binary=$old
    [ "$side" = new ] && binary=$new
    if ! "$binary" replay "$schedule" --out "$work/$side/$name" >"$work/$side.$name.log" 2>&1; then
      echo "replay failed ($side): $schedule (see $work/$side.$name.log)" >&2
      status=1
    fi
  done
  for file in kernel.cu sm_90.ptx manifest.json; do
    if ! cmp -s "$work/old/$name/$file" "$work/new/$name/$file"; then
      echo "differs: $schedule $file" >&2
      status=1
    fi
  done
done
[ $status -eq 0 ] && echo "identical: ${#schedules[@]} schedules (kernel.cu, sm_90.ptx, manifest.json)"
exit $status
