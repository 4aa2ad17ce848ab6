"""One-kernel flash-attention schedules for multi-head attention prefill at any length.

    python3 tools/python/prefill_schedules.py 2048 --q-tile 128 --kv-tile 64 --threads 256 \
        --out-dir schedules

Writes the program mha_prefill_<tokens>.mg (16 heads of d 128, `tokens` queries attending to
`tokens` keys, no mask, safe softmax with the 1/sqrt(d) scale; K stored [head, seq, dim] and
read through a transposed view) unless it exists, and its schedule
mha_prefill_<tokens>.<label>.json: one block graph over a grid of (heads, tokens / q-tile)
blocks, each loading its [q-tile, 128] query rows once and walking the keys and values in
tokens / kv-tile tiles with a running max (accum_max) and rescaled sums
(accum_rescaled_sum) of the exp-sum and of exp·V, dividing after the loop. The scale and the
exp run in the producers' register epilogues (fusion). `mugraph check` and `mugraph replay`
accept every schedule written here.
"""
import argparse
import json
import math
import os
import sys

from schedule_files import write_atomic

HEADS = 16
HEAD_DIM = 128


def tensor(name, shape, layout="row_major"):
    return {"name": name, "dtype": "f16", "shape": shape, "layout": layout}


def inputs(tokens):
    return [tensor("Q", [HEADS, tokens, HEAD_DIM]),
            tensor("K", [HEADS, HEAD_DIM, tokens], "transposed"),
            tensor("V", [HEADS, tokens, HEAD_DIM])]


def op(kind, ins, output, **attributes):
    return dict({"op": kind, "inputs": ins, "output": output}, **attributes)


def program_json(tokens):
    scale = 1 / math.sqrt(HEAD_DIM)
    return {"format": "mugraph.program", "version": 1, "name": f"mha_prefill_{tokens}",
            "inputs": inputs(tokens),
            "ops": [op("matmul", ["Q", "K"], "QK"), op("scale", ["QK"], "A", c=scale),
                    op("reduce_max", ["A"], "M", dim=2), op("sub", ["A", "M"], "D"),
                    op("exp", ["D"], "E"), op("reduce_sum", ["E"], "S", dim=2, to=1),
                    op("div", ["E", "S"], "P"), op("matmul", ["P", "V"], "O")],
            "outputs": ["O"]}


def program_text(tokens):
    return (f"# Multi-head attention prefill: {HEADS} heads, {tokens} query tokens attending to "
            f"{tokens} keys (no mask),\n"
            f"# head dim {HEAD_DIM}, safe softmax (the row max subtracted before exp). K is "
            "stored [head, seq, dim]\n"
            "# as a model's KV cache is, and read through a transposed view.\n"
            f"program mha_prefill_{tokens}\n"
            f"input Q f16 [{HEADS}, {tokens}, {HEAD_DIM}]\n"
            f"input K f16 [{HEADS}, {HEAD_DIM}, {tokens}] layout=transposed\n"
            f"input V f16 [{HEADS}, {tokens}, {HEAD_DIM}]\n"
            f"A = scale(matmul(Q, K), c={repr(1 / math.sqrt(HEAD_DIM))})\n"
            "M = reduce_max(A, dim=2)\n"
            "E = exp(sub(A, M))\n"
            "S = reduce_sum(E, dim=2)\n"
            "O = matmul(div(E, S), V)\n"
            "output O\n")


def schedule_json(tokens, label, q_tile, kv_tile, threads):
    def axes(x, y, z=-1):
        return {"x": x, "y": y, "z": z}
    scale = 1 / math.sqrt(HEAD_DIM)
    # Tiles that do not divide the tokens are declared; the last is partial.
    q = {"tile": [1, q_tile, HEAD_DIM]} if tokens % q_tile else {}
    k = {"tile": [1, HEAD_DIM, kv_tile]} if tokens % kv_tile else {}
    v = {"tile": [1, kv_tile, HEAD_DIM]} if tokens % kv_tile else {}
    ops = [
        {"op": "input", "from": "Q", "output": "q", "imap": axes(0, 1), "fmap": -1, **q},
        {"op": "input", "from": "K", "output": "k", "imap": axes(0, -1), "fmap": 2, **k},
        {"op": "input", "from": "V", "output": "v", "imap": axes(0, -1), "fmap": 1, **v},
        op("matmul", ["q", "k"], "qk"),
        op("scale", ["qk"], "a", c=scale),
        op("reduce_max", ["a"], "tile_max", dim=2),
        op("accum_max", ["tile_max"], "m"),
        op("sub", ["a", "m"], "shifted"),
        op("exp", ["shifted"], "e"),
        op("reduce_sum", ["e"], "s", dim=2, to=1),
        op("matmul", ["e", "v"], "p"),
        op("accum_rescaled_sum", ["s", "m"], "s_acc"),
        op("accum_rescaled_sum", ["p", "m"], "p_acc"),
        op("div", ["p_acc", "s_acc"], "out"),
        {"op": "output", "inputs": ["out"], "to": "O", "omap": axes(0, 1)},
    ]
    kernel = {"op": "block_graph", "name": "mha_flash", "inputs": ["Q", "K", "V"],
              "outputs": ["O"], "grid": {"x": HEADS, "y": -(-tokens // q_tile), "z": 1},
              "threads": threads, "forloop": -(-tokens // kv_tile), "ops": ops,
              "fusion": [{"producer": "qk", "fused": ["a"]},
                         {"producer": "shifted", "fused": ["e"]}]}
    return {"format": "mugraph.schedule", "version": 1,
            "name": f"mha_prefill_{tokens}.{label}", "program": program_json(tokens),
            "tensors": inputs(tokens) + [tensor("O", [HEADS, tokens, HEAD_DIM])],
            "kernels": [kernel], "outputs": ["O"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tokens", type=int)
    parser.add_argument("--q-tile", type=int, default=128)
    parser.add_argument("--kv-tile", type=int, default=64)
    parser.add_argument("--threads", type=int, default=256)
    parser.add_argument("--label", default="flash")
    parser.add_argument("--out-dir", default="schedules")
    args = parser.parse_args()
    for tile, what in ((args.q_tile, "--q-tile"), (args.kv_tile, "--kv-tile")):
        if tile <= 0 or tile > args.tokens:
            parser.error(f"{what} {tile} must be in 1..{args.tokens} tokens")
    os.makedirs(args.out_dir, exist_ok=True)
    program_path = os.path.join(args.out_dir, f"mha_prefill_{args.tokens}.mg")
    if not os.path.exists(program_path):
        write_atomic(program_path, program_text(args.tokens))
    schedule = schedule_json(args.tokens, args.label, args.q_tile, args.kv_tile, args.threads)
    path = os.path.join(args.out_dir, f"mha_prefill_{args.tokens}.{args.label}.json")
    write_atomic(path, json.dumps(schedule, indent=2) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
