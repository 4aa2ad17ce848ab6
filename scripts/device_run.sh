#!/usr/bin/env bash
# On the GPU machine, from the repository root with devbuild/ carried: the gpu-labelled
# tests, compute-sanitizer on the shipped schedules, the exported ONNX models searched and
# profiled (`onnx`), and the benchmark against PyTorch; `dataset` checks and times the
# equivalent-PTX dataset scripts/dataset_must_show.sh built (not part of `all`); `replays`
# benchmarks replay folders made on the development machine (REPLAYS, CASE or CASE.LABEL
# each), and `ncu` profiles the schedules NCU_SCHEDULES names (neither is part of `all`);
# `sweep` runs issue 27's GEMM sweep against cuBLAS (not part of `all`); `runs` times carried
# superoptimize runs (RUNS) against PyTorch, `programs` any program's runs (PROGRAM_RUNS) against
# its own PyTorch form, `dynamic` issue 28's dispatch over lengths
# (DYNAMIC_RUNS) against static variants and PyTorch's best (neither part of `all`);
# `dynamic_decode` runs the torch backend over a growing DynamicCache (test and bench; not part
# of `all`). `distributed` measures gqa, the decoder-block model and a 10-program dataset over 1, 2, 4
# and 8 MPI ranks against one process with every core (docs/distributed_search.md; not part of
# `all`; it says so plainly when this machine has no mpirun or the binary cannot load its MPI).
# Results land in $OUT (or ./device_out). BENCH_ARGS: extra gpu_bench.py arguments (--cases, --no-compile).
# ONNX_MODELS: the models of tests/onnx_import/models the onnx step searches (default: all exported ones).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device_out}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/devbuild/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export MUGRAPH_BINARY="$PWD/devbuild/bin/mugraph"
export MUGRAPH_SOURCE_DIR="$PWD"
mg="$PWD/devbuild/bin/mugraph"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step=${1:-all}

if [[ $step == all || $step == tests ]]; then
  echo "== gpu tests"
  devbuild/bin/gpu_tests 2>&1 | tee "$out/gpu_tests.log" | grep -E "^\[gpu\]|OK|FAILED|PASSED|SKIPPED"
fi

if [[ $step == all || $step == python ]]; then
  # The torch.compile backend (python/mugraph) on this GPU: its end-to-end test, then whole
  # models against eager and torch.compile (MODEL_BENCH_ARGS: extra model_bench.py arguments).
  echo "== python backend"
  export MUGRAPH_BUILD_DIR="$PWD/devbuild" PYTHONPATH="$PWD/python:${PYTHONPATH:-}"
  export MUGRAPH_CACHE_DIR="${MUGRAPH_CACHE_DIR:-$PWD/device_cache}"
  if [[ -z ${SKIP_PYTHON_TESTS:-} ]]; then
    (cd tests/python && python3 -m unittest -v test_gpu_backend test_gpu_dynamic \
      test_gpu_launch_dims) 2>&1 |
      tee "$out/python_gpu_tests.log" | tail -25
  fi
  python3 tools/python/model_bench.py --out "$out/model_bench.json" ${MODEL_BENCH_ARGS:-} \
    2>&1 | tee "$out/model_bench.log" | grep -v "^  " | grep -E "^(llama|qwen3|mistral|gpt2|gpt_neox|phi)|mugraph:|Error|error" | head -80
fi

if [[ $step == dynamic_decode ]]; then
  # The torch backend's dynamic decode (issue 28): its end-to-end test, then a DynamicCache
  # decode loop against eager and torch.compile (DECODE_BENCH_ARGS: dynamic_decode_bench.py's).
  echo "== dynamic decode through the torch backend"
  export MUGRAPH_BUILD_DIR="$PWD/devbuild" PYTHONPATH="$PWD/python:${PYTHONPATH:-}"
  export MUGRAPH_CACHE_DIR="${MUGRAPH_CACHE_DIR:-$PWD/device_cache}"
  if [[ -z ${SKIP_PYTHON_TESTS:-} ]]; then
    (cd tests/python && python3 -m unittest -v test_gpu_dynamic) 2>&1 |
      tee "$out/python_gpu_dynamic.log" | tail -25
  fi
  python3 tools/python/dynamic_decode_bench.py --out "$out/dynamic_decode_bench.json" \
    ${DECODE_BENCH_ARGS:-} 2>&1 | tee "$out/dynamic_decode_bench.log" | grep -v "^  \|Warning" | tail -60
fi

if [[ $step == all || $step == sanitize ]]; then
  echo "== compute-sanitizer"
  # The schedules schedules/shipped.txt marks `sanitize`.
  # SANITIZE_EXTRA: more schedules, as paths under schedules/ without .json (found/NAME).
  for s in $(awk '!/^#/ && $3 ~ /sanitize/ {sub(/\.json$/, "", $1); print $1}' schedules/shipped.txt) \
    ${SANITIZE_EXTRA:-}; do
    n=${s//\//_}
    "$mg" replay "schedules/$s.json" --out "/tmp/san_$n" >/dev/null || echo "replay $s failed"
    for tool in memcheck racecheck; do
      compute-sanitizer --tool $tool --error-exitcode 9 "$mg" replay "schedules/$s.json" \
        --out "/tmp/san_$n" --run --repetitions 1 > "$out/sanitize_${tool}_$n.log" 2>&1
      echo "$tool $s: exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize_${tool}_$n.log" | tail -1)"
    done
  done
fi

if [[ $step == all || $step == onnx ]]; then
  # The models PyTorch exported (tests/onnx_import/models): every subgraph searched, every
  # verified variant generated, checked against the interpreter and timed on the GPU.
  echo "== ONNX models"
  rm -rf /tmp/onnx_runs && mkdir -p /tmp/onnx_runs/logs
  for m in ${ONNX_MODELS:-llama_mlp rmsnorm attention_core gqa_attention_core decoder_block hf_llama hf_mistral hf_qwen3}; do
    "$mg" superoptimize "tests/onnx_import/models/$m.onnx" --profile --max-variants 8 \
      --time-limit "${ONNX_TIME_LIMIT:-30}" --out "/tmp/onnx_runs/$m" \
      >"/tmp/onnx_runs/logs/$m.txt" 2>"/tmp/onnx_runs/logs/$m.err"
    echo "$m: exit $?, $(grep -c 'does not match' "/tmp/onnx_runs/logs/$m.err") mismatches"
    cat "/tmp/onnx_runs/logs/$m.txt"
    cp "/tmp/onnx_runs/$m/summary.json" "/tmp/onnx_runs/logs/$m.summary.json"
  done
  tar czf "$out/onnx_runs.tgz" -C /tmp/onnx_runs logs
fi

if [[ $step == search ]]; then
  # Programs the repository ships no schedule for (tools/bench/programs/), as a new user would
  # bring them: `superoptimize --profile` on this GPU, then the fastest measured variant and
  # the cost model's first choice timed against PyTorch in one bench run.
  # SEARCH_PROGRAMS narrows the list; SEARCH_TIME_LIMIT is per program.
  echo "== search"
  rm -rf /tmp/search_runs /tmp/search_replays && mkdir -p /tmp/search_runs /tmp/search_replays
  programs=${SEARCH_PROGRAMS:-$(ls tools/bench/programs | sed 's/\.mg$//')}
  for p in $programs; do
    start=$(date +%s)
    "$mg" superoptimize "tools/bench/programs/$p.mg" --arch sm_90 --profile \
      --time-limit "${SEARCH_TIME_LIMIT:-60}" --max-variants "${SEARCH_MAX_VARIANTS:-8}" \
      --out "/tmp/search_runs/$p" >"$out/search_$p.txt" 2>"$out/search_$p.err"
    echo "$p: exit $?, $(( $(date +%s) - start )) s; $(grep -c 'dropped' "$out/search_$p.err") dropped"
    python3 tools/python/pick_variants.py "/tmp/search_runs/$p" /tmp/search_replays "$p"
  done
  cases=$(ls /tmp/search_replays | sed 's/\..*//' | sort -u | paste -sd, -)
  PYTHONUNBUFFERED=1 python3 tools/python/gpu_bench.py --replays /tmp/search_replays \
    --cases "$cases" --out "$out/bench_search.json" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_search.log"
fi

if [[ $step == runs ]]; then
  # Superoptimize runs made on the development machine (RUNS=DIR, one folder per gpu_bench case,
  # carried; e.g. issue 24's programs of tools/bench/programs/ searched without --profile):
  # every variant the cost model costs within 2x of its first, timed against PyTorch's best
  # (torch.compile included; BENCH_ARGS adds gpu_bench.py arguments). Not part of `all`.
  echo "== runs"
  rm -rf /tmp/run_replays && mkdir -p /tmp/run_replays
  for r in "${RUNS:?RUNS=DIR of superoptimize runs}"/*/; do
    python3 tools/python/pick_variants.py --all "$r" /tmp/run_replays "$(basename "$r")"
  done
  cases=$(ls /tmp/run_replays | sed 's/\..*//' | sort -u | paste -sd, -)
  PYTHONUNBUFFERED=1 python3 tools/python/gpu_bench.py --replays /tmp/run_replays \
    --cases "$cases" --out "$out/bench_runs.json" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_runs.log" |
    grep -v "logit std"
fi

if [[ $step == programs ]]; then
  # Programs searched on the development machine as a new user would (PROGRAM_RUNS=DIR, one
  # `superoptimize --out` folder per program, carried): every verified variant and the
  # program's own PyTorch form, eager and torch.compile max-autotune, timed in one run
  # (tools/python/program_bench.py; no gpu_bench case needed). BENCH_ARGS: --no-compile.
  echo "== programs"
  PYTHONUNBUFFERED=1 python3 tools/python/program_bench.py "${PROGRAM_RUNS:?PROGRAM_RUNS=DIR}"/*/ \
    --out "$out/bench_programs.json" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_programs.log"
fi

if [[ $step == dynamic ]]; then
  # Issue 28's dynamic programs (DYNAMIC_RUNS=DIR from scripts/dynamic_bench_search.sh,
  # carried): the dispatch over the lengths at each length against the static search's
  # variants and PyTorch's best. DYNAMIC_KIND: gemm (default), decode or prefill. With DYNAMIC_PROGRAM,
  # the dispatch is searched here first, ranked by measured times (`superoptimize --profile
  # --max-variants DYNAMIC_VARIANTS`, default 16) into DIR/dispatch, resumed from DIR/search.ckpt
  # where the search was made on another machine (its `--checkpoint`), so only the GPU's part
  # runs here. DYNAMIC_BENCH_ARGS: more dynamic_bench.py flags (--every-variant). Not part of
  # `all`.
  echo "== dynamic"
  runs=${DYNAMIC_RUNS:?DYNAMIC_RUNS=DIR from scripts/dynamic_bench_search.sh}
  if [[ -n ${DYNAMIC_PROGRAM:-} ]]; then
    rm -rf "$runs/dispatch"
    start=$(date +%s)
    resume=()
    [[ -f $runs/search.ckpt ]] && resume=(--checkpoint "$runs/search.ckpt" --resume)
    "$mg" superoptimize "$DYNAMIC_PROGRAM" --arch sm_90 --profile "${resume[@]}" \
      --max-variants "${DYNAMIC_VARIANTS:-16}" --out "$runs/dispatch" > "$out/dispatch_search.log" 2>&1
    echo "profiled search of $DYNAMIC_PROGRAM: exit $?, $(( $(date +%s) - start )) s"
    grep -A12 '^dispatch over' "$out/dispatch_search.log"
    cp "$runs/dispatch/summary.json" "$out/dispatch_summary.json" 2>/dev/null
    cp "$runs/dispatch/dispatch.json" "$out/dispatch.json" 2>/dev/null
  fi
  PYTHONUNBUFFERED=1 python3 tools/python/dynamic_bench.py --kind "${DYNAMIC_KIND:-gemm}" \
    --dispatch "$runs/dispatch" --static "$runs/static" ${DYNAMIC_LENGTHS:+--lengths "$DYNAMIC_LENGTHS"} \
    ${DYNAMIC_BENCH_ARGS:-} \
    --out "$out/dynamic_${DYNAMIC_KIND:-gemm}.json" 2>&1 | tee "$out/dynamic_${DYNAMIC_KIND:-gemm}.log"
fi

if [[ $step == sweep ]]; then
  # Issue 27's GEMM sweep (tools/python/gemm_sweep.py): each program searched here
  # (`superoptimize --profile`, SWEEP_TIME_LIMIT per program), or, with SWEEP_RUNS=DIR, the runs
  # made on another machine (`scripts/gemm_sweep_search.sh DIR`, carried), the variant timed
  # against cuBLAS in one bench run, then gemm_sweep.png and gemm_sweep.md. SWEEP_CASES narrows
  # the points (comma-separated case names); carried runs link every variant they wrote, the
  # bench timing each. The searches' logs come back packed (sweep_logs.tgz). Not part of `all`.
  echo "== sweep"
  rm -rf /tmp/sweep_programs /tmp/sweep_replays /tmp/sweep_logs
  mkdir -p /tmp/sweep_replays /tmp/sweep_logs
  python3 tools/python/gemm_sweep.py programs /tmp/sweep_programs
  runs=${SWEEP_RUNS:-/tmp/sweep_runs}
  for p in /tmp/sweep_programs/*.mg; do
    c=$(basename "$p" .mg)
    if [[ -n ${SWEEP_CASES:-} && ",$SWEEP_CASES," != *",$c,"* ]]; then continue; fi
    if [[ -z ${SWEEP_RUNS:-} ]]; then
      start=$(date +%s)
      "$mg" superoptimize "$p" --arch sm_90 --profile --time-limit "${SWEEP_TIME_LIMIT:-30}" \
        --max-variants "${SWEEP_MAX_VARIANTS:-4}" --out "$runs/$c" >"/tmp/sweep_logs/$c.txt" \
        2>"/tmp/sweep_logs/$c.err"
      echo "$c: exit $?, $(( $(date +%s) - start )) s"
    fi
    python3 tools/python/pick_variants.py ${SWEEP_RUNS:+--all} "$runs/$c" /tmp/sweep_replays "$c"
  done
  tar czf "$out/sweep_logs.tgz" -C /tmp sweep_logs
  cases=$(ls /tmp/sweep_replays | sed 's/\..*//' | sort -u | paste -sd, -)
  PYTHONUNBUFFERED=1 python3 tools/python/gpu_bench.py --replays /tmp/sweep_replays \
    --cases "$cases" --no-compile --out "$out/bench_sweep.json" 2>&1 | tee "$out/bench_sweep.log"
  if python3 -c "import matplotlib" 2>/dev/null; then
    python3 tools/python/bench_plots.py "$out/bench_sweep.json" --out-dir "$out"
  else
    echo "no matplotlib here: run tools/python/bench_plots.py bench_sweep.json where it imports"
  fi
fi

if [[ $step == all || $step == bench ]]; then
  echo "== benchmark"
  rm -rf /tmp/replays "$out/bench_gpu.json"  # nothing left from an earlier run
  mkdir -p /tmp/replays
  # case:schedule pairs, from schedules/shipped.txt (its bench_case column); a case's folder
  # CASE.LABEL is another of our variants of it.
  pairs=$(awk '!/^#/ && NF == 3 && $2 != "-" {sub(/\.json$/, "", $1); print $2 ":" $1}' \
    schedules/shipped.txt)
  # What the search found for each program (schedules/found/PROGRAM.vHASH.json), as
  # program:case pairs.
  found_programs="gqa:gqa_safe_mirage_shape gqa_decode:gqa_decode_4k gemm:gemm_1024
                  mlp_batch16:mlp_batch16"
  for ctx in 1k 2k 4k 8k 16k 32k 64k; do
    found_programs="$found_programs gqa_decode_$ctx:gqa_decode_$ctx"
  done
  for m in 1 4 8 16; do
    found_programs="$found_programs matmul_m$m:matmul_m$m"
  done
  for program_case in $found_programs; do
    for f in schedules/found/"${program_case%%:*}".v*.json; do
      [ -e "$f" ] || continue
      label=$(basename "$f" .json)
      pairs="$pairs ${program_case#*:}.found_${label#*.}:found/${label}"
    done
  done
  # Extra schedules carried in devbuild/bench/ (CASE.LABEL.json), e.g. an older version.
  for f in devbuild/bench/*.json; do
    [ -e "$f" ] || continue
    pairs="$pairs $(basename "$f" .json):../devbuild/bench/$(basename "$f" .json)"
  done
  for pair in $pairs; do
    schedule="schedules/${pair#*:}.json"
    if [ ! -e "$schedule" ]; then
      echo "note: no $schedule; case ${pair%%:*} has no variant from it"
      continue
    fi
    "$mg" replay "$schedule" --out "/tmp/replays/${pair%%:*}" >/dev/null \
      || echo "replay ${pair#*:} failed"
  done
  PYTHONUNBUFFERED=1 python3 tools/python/gpu_bench.py --replays /tmp/replays \
    --out "$out/bench_gpu.json" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_gpu.log"
  if [ ! -e "$out/bench_gpu.json" ]; then
    echo "note: no $out/bench_gpu.json; no plots"
  elif python3 -c "import matplotlib" 2>/dev/null; then
    python3 tools/python/bench_plots.py "$out/bench_gpu.json" --out-dir "$out"
  else
    echo "note: matplotlib does not import here; draw the plots elsewhere:" \
      "python3 tools/python/bench_plots.py bench_gpu.json"
  fi
fi

if [[ $step == dataset ]]; then
  # The equivalent-PTX dataset scripts/dataset_must_show.sh built on the development machine
  # (carried: DATASET, default out/ds29, and DATASET.members): first a copy with the planted
  # wrong Triton member, on which `dataset check --run` must fail and keep it out; then the
  # dataset itself, every member checked at three spreads and timed, the evidence recorded;
  # then the table and plot by source, and each export format with its record count and size.
  echo "== dataset"
  ds=${DATASET:-out/ds29}
  # The planted copy holds the wrong member's class alone (gemm_1024), to spend no GPU time
  # on the other classes twice; `dataset add` rewrites its index from the rows kept.
  # DATASET_PARTS=planted or =dataset runs one half (each well inside a 10-minute call).
  parts=${DATASET_PARTS:-planted,dataset}
  if [[ $parts == *planted* ]]; then
    rm -rf /tmp/ds_planted && mkdir -p /tmp/ds_planted
    planted_class=$(basename "$(ls -d "$ds"/gemm_1024-*)")
    cp -r "$ds/$planted_class" /tmp/ds_planted/
    grep "\"class\":\"$planted_class\"" "$ds/manifest.jsonl" > /tmp/ds_planted/manifest.jsonl
    "$mg" dataset add /tmp/ds_planted "$ds".members/wrong/* > "$out/dataset_planted.log" 2>&1
    "$mg" dataset check /tmp/ds_planted --run --record >> "$out/dataset_planted.log" 2>&1
    echo "planted wrong member: check --run exit $? (1 expected)"
    grep -E "wrong|FAILS|kept out|problems" "$out/dataset_planted.log" | tail -5
    "$mg" dataset check /tmp/ds_planted >> "$out/dataset_planted.log" 2>&1
    echo "planted, after --record: check exit $? (0 expected: the member is kept out, with its reason)"
  fi
  [[ $parts == *dataset* ]] || exit 0
  "$mg" dataset check "$ds" --run --record > "$out/dataset_check_run.log" 2>&1
  echo "dataset check --run --record: exit $? (0 expected)"
  tail -3 "$out/dataset_check_run.log"
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  python3 tools/python/dataset_report.py "$ds" --out "$out/dataset_by_source" --device "$device"
  for f in jsonl popcorn kernelbook; do
    "$mg" dataset export "$ds" --format $f --out "/tmp/export.$f.jsonl"
  done
  # One member per class and source launched by mugraph_launch.py (CuPy) from its manifest
  # alone, against PyTorch.
  python3 tools/python/example_cupy.py "$ds" > "$out/dataset_example_cupy.log" 2>&1
  echo "example_cupy.py: exit $?"; cat "$out/dataset_example_cupy.log"
  cp "$ds/manifest.jsonl" "$out/dataset_manifest.jsonl"
  cp "$ds/classes.json" "$out/dataset_classes.json"
fi

if [[ $step == replays ]]; then
  # Replay folders written here or on the development machine (`mugraph replay S --out
  # REPLAYS/CASE.LABEL`, e.g. by an older build for a before/after comparison), timed against
  # PyTorch in one run; BENCH_ARGS as for `bench` (--cases).
  echo "== replays"
  PYTHONUNBUFFERED=1 python3 tools/python/gpu_bench.py --replays "${REPLAYS:-out/replays}" \
    --out "$out/bench_replays.json" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_replays.log"
fi

if [[ $step == ncu ]]; then
  # Nsight Compute on each schedule of NCU_SCHEDULES (paths): speed of light, the tensor
  # pipe's utilization and the warps' issue stalls of every kernel of one run, then a table of
  # each kernel's duration (the replay's own check against the interpreter comes first).
  echo "== ncu"
  for s in ${NCU_SCHEDULES:-schedules/mha_prefill_2048.warpgroups.json}; do
    name=$(basename "$s" .json)
    kernels=$(python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))['kernels']))" "$s")
    "$mg" replay "$s" --out "/tmp/ncu_$name" --run --repetitions 20 2>&1 | grep -A2 "^gpu " ||
      { echo "replay $s failed"; continue; }
    ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
      --section Occupancy --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
      -k regex:mugraph -c "$kernels" "$mg" replay "$s" --out "/tmp/ncu_$name" --run --repetitions 1 \
      > "$out/ncu_$name.txt" 2>&1
    echo "ncu $name: exit $?"
    grep -E "^  mugraph|Duration|Compute \(SM\) Throughput|Memory Throughput|hmma_cycles_active|Registers Per|Achieved Occupancy" \
      "$out/ncu_$name.txt" | head -$((8 * kernels))
  done
fi

if [[ $step == distributed ]]; then
  # The table of docs/distributed_search.md on this machine's cores. Each run's wall time, load
  # average and output digest land in $out/distributed_*.json; DISTRIBUTED_RANKS overrides 1,2,4,8
  # and DISTRIBUTED_KINDS picks benches.
  echo "== distributed ($(nproc) cores)"
  if ldd "$mg" | grep -q "not found"; then
    echo "distributed: $mg cannot load its libraries here:"; ldd "$mg" | grep "not found"
  else
    command -v mpirun >/dev/null || echo "distributed: no mpirun on this machine: the MPI rows are not run, only the single-process ones"
    ranks=${DISTRIBUTED_RANKS:-1,2,4,8}
    # DISTRIBUTED_KINDS narrows the benches (program, model, dataset: all by default).
    kinds=",${DISTRIBUTED_KINDS:-program,model,dataset},"
    [[ $kinds == *,program,* ]] &&
      python3 tools/python/distributed_bench.py --binary "$mg" --warmup --kind program --program gqa \
        --search-args="--max-kernels 2" --ranks "$ranks" --out "$out/distributed_gqa.json"
    [[ $kinds == *,model,* ]] &&
      python3 tools/python/distributed_bench.py --binary "$mg" --warmup --kind model \
        --program tests/onnx_import/models/decoder_block.onnx --search-args="--max-kernels 2" \
        --spreads items,searches --ranks "$ranks" --out "$out/distributed_decoder_block.json"
    [[ $kinds == *,dataset,* ]] &&
      python3 tools/python/distributed_bench.py --binary "$mg" --warmup --kind dataset \
        --program "tools/bench/dataset_programs/*.mg" --search-args="--max-variants 4" \
        --spreads items,searches --ranks "$ranks" --out "$out/distributed_dataset.json"
  fi
fi
