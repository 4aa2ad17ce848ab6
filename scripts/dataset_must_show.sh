#!/usr/bin/env bash
# Builds the must-show equivalent-PTX dataset of issue 29 on this machine (no GPU): eight
# classes (GQA prefill and decode, GEMMs of three shapes, a gated MLP, RMSNorm + matmul,
# LoRA), each with mugraph's variants (saved schedules, search-found ones in schedules/found)
# and external members from Triton and, for the GEMMs, CUTLASS and TVM (tools/python/
# add_external_members.py), plus one deliberately wrong Triton member kept aside for the
# device run to plant. The GPU machine then checks and times it: scripts/device_run.sh dataset.
#
#   bash scripts/dataset_must_show.sh [OUT]     (default out/ds29; members in OUT.members)
#
# CUTLASS members need the nvidia-cutlass package and TVM members apache-tvm (pip install
# nvidia-cutlass apache-tvm; or EXTERNAL_PYTHONPATH=folders they were installed into with
# pip --target, colon-separated), and both nvcc.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/ds29}
members=$out.members
mg=${MUGRAPH_BINARY:-build/bin/mugraph}
export TRITON_DEFAULT_FP_FUSION=1 MUGRAPH_BINARY=$mg
export PYTHONPATH="${EXTERNAL_PYTHONPATH:+$EXTERNAL_PYTHONPATH:}${PYTHONPATH:-}"
rm -rf "$out" "$members" && mkdir -p "$members/schedules"

# mugraph's variants: one class per program, from saved schedules.
for s in gqa.split_kv.json found/gqa.v*.json found/gqa_decode.v*.json gemm_1024.tiled.json \
         gemm_1024.warpgroups.json found/gemm.v*.json gemm_4096.tiled.json \
         gemm_4096.warpgroups.json matmul_m16.best.json mlp_batch16.best.json \
         found/rmsnorm_matmul.v*.json found/lora_batch16.v*.json; do
  for f in schedules/$s; do cp "$f" "$members/schedules/"; done
done
"$mg" dataset --from-schedules "$members/schedules" --out "$out"

# External members: PROGRAM FAMILY SOURCES.
while read -r program family sources; do
  python3 tools/python/add_external_members.py --program "schedules/$program" \
    --family "$family" --sources "$sources" --out "$members/external" --dataset "$out"
done <<'LIST'
gqa.mg             attention       triton
gqa_decode.mg      attention       triton
gemm_1024.mg       matmul          triton,cutlass,tvm
gemm_4096.mg       matmul          triton,cutlass,tvm
matmul_m16.mg      matmul          triton,cutlass,tvm
mlp_batch16.mg     gated_mlp       triton
rmsnorm_matmul.mg  rmsnorm_matmul  triton
lora_batch16.mg    lora            triton
LIST

# The planted wrong member (its loop over K stops a tile short), for the device run.
python3 tools/python/add_external_members.py --program schedules/gemm_1024.mg \
  --family matmul --plant-wrong --out "$members/wrong"

"$mg" dataset check "$out"
python3 - "$out" <<'PY'
import json, sys
classes = json.load(open(sys.argv[1] + "/classes.json"))["classes"]
print(f"{len(classes)} classes:")
for c in classes:
    print(f"  {c['class']}: {len(c['members'])} members")
PY
