"""Any program's search results against PyTorch on the same GPU, in one run: what a user who
brings their own program gets (issue 24's "programs tried as a new user would").

    python3 tools/python/program_bench.py RUN_DIR... --out bench_programs.json [--no-compile]

A RUN_DIR is a `mugraph superoptimize PROGRAM --out RUN_DIR` folder (summary.json and one
folder per verified variant, in the search's rank order), or one subgraph's folder of a
model's run (`superoptimize model.onnx --out DIR`: DIR/*/). No gpu_bench case has to know the
program: it is read from the first variant's schedule.json ("program", schedules/README.md)
and run as the PyTorch module `mugraph show --pytorch` prints for it (`pytorch_module`, the
dataset's one PyTorch form of each op) in float64 for the reference, in the program's
dtype eagerly, and under torch.compile max-autotune; softmax attention written as our programs
write it (`attention_form`) is also run by every scaled_dot_product_attention backend. Every
variant and PyTorch form is timed as gpu_bench times everything (CUDA-graph replays, do_bench
medians, L2 flushed) and checked against the reference first, output by output (the worst
error is reported; a program of several outputs is timed whole).

Inputs are fresh normal draws: standard deviation 1, except a rank-2 input read as a matmul's
right operand (a projection weight [K, N]), drawn at 1 / sqrt(K), the spread of an initialised
projection, so that activations keep unit scale through a layer as they do in a model.

JSON: {"device", "copy_bandwidth_bytes_per_s", "torch", "results": [program, ...]}; a
program has "program", "run", "outputs", "first_choice" (the search's rank 1), "rows" as gpu_bench's
({"impl", "us", "rel_error", "ratio_to_best_torch"} or {"impl", "us": null, "error"}).
"""
import argparse
import json
import math
import os
import subprocess
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))

_DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}


def mugraph_binary():
    """$MUGRAPH_BINARY, else bin/mugraph of $MUGRAPH_BUILD_DIR, else of build/."""
    if os.environ.get("MUGRAPH_BINARY"):
        return os.environ["MUGRAPH_BINARY"]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.path.join(os.environ.get("MUGRAPH_BUILD_DIR", os.path.join(root, "build")), "bin",
                        "mugraph")


def pytorch_module(path):
    """The program of `path` (a program or schedule file) as the PyTorch module `mugraph show
    --pytorch` prints (dataset/pytorch_program.h, the one PyTorch form of each op): it takes the
    inputs in program order and storage layout and computes in the dtype they arrive in."""
    shown = subprocess.run([mugraph_binary(), "show", "--pytorch", path], capture_output=True,
                           text=True)
    if shown.returncode != 0:
        raise ValueError(f"{path}: mugraph show --pytorch: {shown.stderr.strip()}")
    namespace = {}
    exec(compile(shown.stdout, f"{path} (mugraph show --pytorch)", "exec"), namespace)
    return namespace["Model"]()


def outputs_of(module, tensors):
    """The module's outputs on `tensors`, as a list in the program's order."""
    result = module(*tensors)
    return list(result) if isinstance(result, tuple) else [result]


def output_names(program):
    return [o if isinstance(o, str) else o["name"] for o in program["outputs"]]


def _storage_swap(layout):
    """The two dims a layout swaps in storage (graph::storedShape), or None."""
    return {"transposed": (-1, -2), "heads_transposed": (-2, -3)}.get(layout)


def to_storage(tensor, layout):
    swap = _storage_swap(layout)
    return tensor if swap is None else tensor.transpose(*swap).contiguous()


def from_storage(tensor, layout):
    swap = _storage_swap(layout)
    return tensor if swap is None else tensor.transpose(*swap)


def weight_inputs(program):
    """Rank-2 inputs read as a matmul's right operand: name -> K (their fan-in)."""
    ranks = {t["name"]: t for t in program["inputs"]}
    found = {}
    for op in program["ops"]:
        if op["op"] == "matmul" and op["inputs"][1] in ranks:
            t = ranks[op["inputs"][1]]
            if len(t["shape"]) == 2:
                found[t["name"]] = t["shape"][0]
    return found


def draw_inputs(program, device, generator=None):
    """Fresh normal draws in each input's logical shape and dtype (see the module's note)."""
    weights = weight_inputs(program)
    inputs = {}
    for t in program["inputs"]:
        std = 1.0 / math.sqrt(weights[t["name"]]) if t["name"] in weights else 1.0
        x = torch.randn(t["shape"], generator=generator, dtype=torch.float32, device=device) * std
        inputs[t["name"]] = x.to(_DTYPES[t["dtype"]])
    return inputs


def attention_form(program):
    """(Q, K, V, scale, causal) where the program is softmax attention as our programs write
    it (scale(matmul(Q, K)), an optional causal_mask, the safe softmax over the keys, then
    matmul(·, V), every operand a program input): PyTorch's best for it is then
    scaled_dot_product_attention, not the op-by-op form. `causal` is the mask's queries= (0:
    every row one sequence), or None. Else None."""
    ops = program["ops"]
    names = {t["name"] for t in program["inputs"]}
    causal = None
    if len(ops) == 9 and ops[2]["op"] == "causal_mask":
        causal = ops[2].get("queries", 0)
        ops = ops[:2] + ops[3:]
    kinds = ["matmul", "scale", "reduce_max", "sub", "exp", "reduce_sum", "div", "matmul"]
    if [o["op"] for o in ops] != kinds or output_names(program) != [ops[7]["output"]]:
        return None
    qk, scaled, mx, sub, ex, sm, dv, pv = ops
    a = program["ops"][2]["output"] if causal is not None else scaled["output"]
    last = len(next(t for t in program["inputs"] if t["name"] == qk["inputs"][0])["shape"]) - 1
    wired = (set(qk["inputs"]) <= names and pv["inputs"][1] in names
             and scaled["inputs"] == [qk["output"]] and mx["inputs"] == [a]
             and sub["inputs"] == [a, mx["output"]] and ex["inputs"] == [sub["output"]]
             and sm["inputs"] == [ex["output"]] and sm.get("to", 1) == 1
             and dv["inputs"] == [ex["output"], sm["output"]] and pv["inputs"][0] == dv["output"]
             and mx["dim"] % (last + 1) == last and sm["dim"] % (last + 1) == last)
    if not wired:
        return None
    return qk["inputs"][0], qk["inputs"][1], pv["inputs"][1], scaled["c"], causal


def timed(label, fn, refs, views=None):
    """fn() returns the outputs (a list, in the program's order): checked against `refs` (each
    seen through its view), the worst output's error reported, then timed as gpu_bench times
    everything; an exception on the way gives an error row."""
    import gpu_bench  # noqa: E402
    from mugraph_launch import relative_error  # noqa: E402

    views = views or [lambda out: out] * len(refs)
    try:
        outs = fn()
        torch.cuda.synchronize()
        error = max(relative_error(view(out), ref) for view, out, ref in zip(views, outs, refs))
        return {"impl": label, "us": gpu_bench.median_us(fn), "rel_error": error}
    except Exception as e:  # a backend that does not support the shape, a compile failure
        return gpu_bench.error_row(label, e)


def compiled(label, fn, args, refs):
    """torch.compile of fn(*args) (static shapes, gpu_bench's mode), tuned before it is timed."""
    import gpu_bench  # noqa: E402

    try:
        torch.compiler.reset()
        run = torch.compile(fn, mode=gpu_bench.COMPILE_MODE, dynamic=False)
    except Exception as e:
        return gpu_bench.error_row(label, e)
    return timed(label, lambda: run(*args), refs)


def sdpa_rows(form, inputs, refs):
    """Every SDPA backend on the program's inputs (heads as the batch dims), as gpu_bench times
    them for its attention cases."""
    import gpu_bench  # noqa: E402

    q_name, k_name, v_name, scale, causal = form
    q = inputs[q_name].unsqueeze(0)
    k = inputs[k_name].transpose(-1, -2).unsqueeze(0)
    v = inputs[v_name].unsqueeze(0)
    rows_, cols = q.shape[-2], k.shape[-2]
    mask, is_causal = None, False
    if causal is not None:
        if causal not in (0, rows_):
            return []  # several sequences folded into the rows: no SDPA call computes that
        if rows_ == cols:
            is_causal = True
        else:  # bottom-right aligned, gpu_bench's causal mask
            mask = gpu_bench.causal_bias(rows_, cols, q.device).to(q.dtype)
    backends = {
        "torch.sdpa_cudnn": torch.nn.attention.SDPBackend.CUDNN_ATTENTION,
        "torch.sdpa_flash": torch.nn.attention.SDPBackend.FLASH_ATTENTION,
        "torch.sdpa_efficient": torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION,
        "torch.sdpa_math": torch.nn.attention.SDPBackend.MATH,
    }
    rows = []
    for label, backend in backends.items():
        with torch.nn.attention.sdpa_kernel(backend):
            rows.append(timed(label, lambda: [F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, scale=scale, is_causal=is_causal).squeeze(0)], refs))
    return rows


def run_program(run_dir, compile_torch, device="cuda"):
    """One search's variants and the program's PyTorch forms, timed in this process. `run_dir`
    is a `superoptimize --out` folder: a program's, or one subgraph's of a model's run."""
    from mugraph_launch import Variant  # noqa: E402 (needs a GPU and cupy)

    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    names = [v["name"] for v in summary.get("variants", [])]
    if not names:
        return {"run": run_dir, "error": "the run has no verified variant"}
    with open(os.path.join(run_dir, names[0], "schedule.json")) as f:
        program = json.load(f)["program"]
    outs = output_names(program)
    out_layouts = ["row_major" if isinstance(o, str) else o.get("layout", "row_major")
                   for o in program["outputs"]]
    inputs = draw_inputs(program, device)
    layouts = {t["name"]: t.get("layout", "row_major") for t in program["inputs"]}
    stored = {n: to_storage(t, layouts[n]) for n, t in inputs.items()}
    module = pytorch_module(os.path.join(run_dir, names[0], "schedule.json"))
    args = [stored[t["name"]] for t in program["inputs"]]
    refs = outputs_of(module, [a.double() for a in args])

    def eager(*xs):
        return outputs_of(module, xs)

    rows = [timed("torch.eager", lambda: eager(*args), refs)]
    if compile_torch:
        rows.append(compiled("torch.compile", eager, args, refs))
    form = attention_form(program)
    if form is not None:
        rows += sdpa_rows(form, inputs, refs)
    views = [lambda out, layout=layout: from_storage(out, layout) for layout in out_layouts]
    for rank, name in enumerate(names, 1):
        try:
            variant = Variant(os.path.join(run_dir, name))
            results = {n: variant.empty(n) for n in outs}
            tensors = dict(stored, **results)

            def launch(variant=variant, tensors=tensors, results=results):
                variant.launch(tensors)
                return [results[n] for n in outs]
            row = timed(f"mugraph.{name}", launch, refs, views)
        except Exception as e:
            import gpu_bench  # noqa: E402

            row = gpu_bench.error_row(f"mugraph.{name}", e)
        row["rank"] = rank
        rows.append(row)
    best_torch = min((r["us"] for r in rows if r["impl"].startswith("torch") and r["us"]),
                     default=None)
    for r in rows:
        if best_torch and r["us"]:
            r["ratio_to_best_torch"] = best_torch / r["us"]
    return {"program": program["name"], "run": run_dir, "outputs": len(outs),
            "first_choice": f"mugraph.{names[0]}", "rows": rows}


def print_table(results):
    for result in results:
        if "error" in result:
            print(f"{result.get('program', result['run'])}: {result['error']}")
            continue
        print(result["program"])
        for r in result["rows"]:
            if r["us"] is None:
                print(f"  {r['impl']:<28} error: {r['error']}")
                continue
            ratio = r.get("ratio_to_best_torch")
            first = "  (first choice)" if r["impl"] == result["first_choice"] else ""
            print(f"  {r['impl']:<28} {r['us']:9.2f} us  rel err {r['rel_error']:.1e}"
                  f"  {'' if ratio is None else f'{ratio:.2f}x of best PyTorch'}{first}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="superoptimize --out folders")
    parser.add_argument("--out", required=True, help="JSON to write")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    options = parser.parse_args()
    if not torch.cuda.is_available():
        print("program_bench: no CUDA device here (this bench times kernels on a GPU)",
              file=sys.stderr)
        return 2
    for run in options.runs:
        if not os.path.isfile(os.path.join(run, "summary.json")):
            print(f"program_bench: {run}: no summary.json (not a superoptimize --out folder)",
                  file=sys.stderr)
            return 2
    import gpu_bench  # noqa: E402

    payload = {"device": torch.cuda.get_device_name(),
               "copy_bandwidth_bytes_per_s": gpu_bench.copy_bandwidth(),
               "torch": torch.__version__, "results": []}
    for i, run in enumerate(options.runs, 1):
        print(f"== {run} ({i} of {len(options.runs)})", flush=True)
        try:
            result = run_program(run, not options.no_compile)
        except Exception as e:  # one program's failure is reported, the rest still run
            result = {"run": run, "error": gpu_bench.short_error(e)}
        print_table([result])
        payload["results"].append(result)
        # Written after every program, whole: a run stopped part way keeps what it measured.
        temporary = options.out + ".tmp"
        with open(temporary, "w") as f:
            json.dump(payload, f, indent=1)
        os.replace(temporary, options.out)
    print(f"wrote {options.out}")


if __name__ == "__main__":
    sys.exit(main())
