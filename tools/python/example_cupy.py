"""Run one variant of a mugraph dataset with CuPy, from its manifest and PTX alone, on torch
tensors, and compare it with PyTorch (scaled_dot_product_attention for attention, torch.matmul
for a GEMM, a plain expression otherwise).

    python3 tools/python/example_cupy.py DATASET [CLASS/VARIANT ...]

With no variant named, one member of every class and source (mugraph, and the external
members from Triton or CUTLASS, launched through the same manifest) is run; a class whose
program has no PyTorch reference here is skipped with a note. Exit status 1 if any differs.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from mugraph_launch import Variant, dataset_members, relative_error  # noqa: E402

TOLERANCE = {"f16": 2e-2, "bf16": 5e-2, "f32": 1e-3}


def program_of(directory):
    """The program the variant implements, as plain JSON (schedule.json's "program"). An
    external member has no schedule: its class's program is that of any of our variants in
    the same class folder (`mugraph dataset check` confirms they are one program)."""
    candidates = [directory] + [os.path.join(os.path.dirname(directory), d)
                                for d in sorted(os.listdir(os.path.dirname(directory)))]
    for candidate in candidates:
        path = os.path.join(candidate, "schedule.json")
        if os.path.exists(path):
            with open(path) as f:
                return json.load(f)["program"]
    raise ValueError(f"{directory}: no variant of its class has a schedule.json")


def logical(variant, name, stored):
    """A tensor's logical view of its stored form (graph::storedShape's swap undone)."""
    layout = variant.tensors[name].get("layout")
    if layout == "transposed":
        return stored.transpose(-1, -2)
    if layout == "heads_transposed":
        return stored.transpose(-3, -2)
    return stored


def reference(program, variant, inputs):
    ops = [op["op"] for op in program["ops"]]
    x = {name: logical(variant, name, t).double() for name, t in inputs.items()}
    if ops.count("matmul") == 2 and "exp" in ops:  # attention: O = softmax(c·Q·K) V
        scale = next((op["c"] for op in program["ops"] if op["op"] == "scale"), 1.0)
        q, k, v = x["Q"], x["K"].transpose(-1, -2), x["V"]  # [G, R, D], [G, S, D], [G, S, D]
        o = torch.nn.functional.scaled_dot_product_attention(
            q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), scale=scale)
        return "scaled_dot_product_attention", o.squeeze(0)
    if ops == ["matmul"]:
        a, b = program["ops"][0]["inputs"]
        return "torch.matmul", torch.matmul(x[a], x[b])
    if ops == ["rms_norm", "matmul"]:  # rms_norm without epsilon, then a matmul
        xs = x["X"]
        return "rms_norm + torch.matmul", torch.matmul(
            xs / xs.pow(2).mean(-1, keepdim=True).sqrt(), x["W"])
    raise ValueError("no PyTorch reference for ops " + ", ".join(ops))


def run(dataset, key):
    directory = os.path.join(dataset, key)
    variant = Variant(directory)
    program = program_of(directory)
    torch.manual_seed(0)
    inputs = {}
    for name, t in variant.tensors.items():
        if t["role"] == "input":
            inputs[name] = (torch.rand(variant.storage_shape(name), device="cuda") - 0.5).to(
                variant.empty(name).dtype)
    outputs = {name: variant.empty(name) for name, t in variant.tensors.items()
               if t["role"] == "output"}
    for o in outputs.values():
        o.fill_(float("nan"))  # poison: an unwritten element shows
    variant.launch({**inputs, **outputs})
    torch.cuda.synchronize()
    try:
        what, want = reference(program, variant, inputs)
    except ValueError as e:
        print(f"{key}: skipped: {e}")
        return True
    (name, got), = outputs.items()
    got = logical(variant, name, got).double()
    error = relative_error(got, want)  # inf where an element was left unwritten (NaN)
    ok = error <= TOLERANCE[variant.tensors[name]["dtype"]]
    print(f"{key}: {len(variant.kernels)} kernel(s) from {variant.arch} PTX via CuPy; "
          f"max relative error vs {what}: {error:.2e} -> {'OK' if ok else 'MISMATCH'}")
    return ok


def main():
    dataset = sys.argv[1]
    keys = sys.argv[2:]
    if not keys:
        seen = set()
        for key, _, row in dataset_members(dataset):
            source = row["source"]["compiler"] if row.get("member") == "external" else "mugraph"
            if (row["class"], source) not in seen:
                seen.add((row["class"], source))
                keys.append(key)
    results = [run(dataset, key) for key in keys]
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
