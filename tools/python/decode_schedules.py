"""Split-KV schedules for GQA decode at any context length.

    python3 tools/python/decode_schedules.py 1k 2k 8k 16k 64k --out-dir schedules
    python3 tools/python/decode_schedules.py 32k --splits 64 --forloop 8 --out-dir /tmp/s \
        --compare schedules/gqa_decode_32k.split_kv.json

Writes, for each context, the program gqa_decode_<ctx>.mg and its schedule
gqa_decode_<ctx>.split_kv.json: the same two-kernel FlashDecoding structure as the shipped
schedules/gqa_decode_32k.split_kv.json, with every shape, grid and loop count derived from the
context, the number of splits and the iterations per split.

The decode program: batch 1, 32 query heads in 8 KV groups of 4, head dim 128, safe softmax
(the row max subtracted before exp); the KV cache is stored [kv_head, seq, dim] and K is read
through a transposed view. The schedule:

- kernel 0 (gqa_decode_partial), grid (KV heads, splits): each block owns one KV head's
  `context / splits` positions and walks them in `forloop` tiles of
  `context / splits / forloop` rows with a running max, writing its rescaled partial exp·V
  (Opart, splits side by side along dim 2), exp-sum (Spart) and max (Mpart);
- kernel 1 (gqa_decode_combine), grid (KV heads, query heads per group), loops over the
  `splits` partials, rescales each by exp(m_j - m) and divides.

Without --splits, a context gets the most splits (a power of two) that keep the blocks at
most TARGET_BLOCKS, as long as each split still holds KV_TILE_ROWS rows; without --forloop,
the iterations per split make the KV tile KV_TILE_ROWS rows. Those defaults are what measured
fastest on an H100 from 1K to 64K (docs/measurements/decode_split_sweep_h100.txt): one block
of 128-row tiles per SM, the fewest partials for the combine to walk. `mugraph check` and
`mugraph replay` accept every schedule written here (the generated ones are checked that way
before they are shipped).
"""
import argparse
import json
import math
import os
import sys

KV_HEADS = 8
QUERY_HEADS_PER_KV_HEAD = 4
HEAD_DIM = 128
SCALE = 1 / math.sqrt(HEAD_DIM)
THREADS = 128
# The SM count of an H100 SXM (132 SMs): one block per SM, each streaming its split.
TARGET_BLOCKS = 132
# The KV rows a block loads per iteration.
KV_TILE_ROWS = 128


def parse_context(text):
    """'32k' -> 32768, '4096' -> 4096."""
    t = text.strip().lower()
    try:
        return int(t[:-1]) * 1024 if t.endswith("k") else int(t)
    except ValueError:
        raise ValueError(f"context '{text}': expected a number of positions, e.g. 4096 or 4k")


def context_label(context):
    """32768 -> '32k'; a context that is not a multiple of 1024 keeps its number."""
    return f"{context // 1024}k" if context % 1024 == 0 else str(context)


def default_splits(context, tile_rows=KV_TILE_ROWS):
    """The most power-of-two splits keeping KV_HEADS * splits <= TARGET_BLOCKS, capped so a
    split holds at least one tile of `tile_rows` positions."""
    splits = 1
    while KV_HEADS * 2 * splits <= TARGET_BLOCKS and context % (2 * splits * tile_rows) == 0:
        splits *= 2
    return splits


def partial_plan(context, tile_rows=KV_TILE_ROWS):
    """(splits, forloop, tile) for a context that is no whole number of tiles: KV tiles of a
    multiple of 16 positions up to `tile_rows` (64 to tile_rows), up to 64 per split, the
    last tile partial, chosen as its power-of-two neighbours are: the fewest waves of blocks
    over TARGET_BLOCKS, then tiles within 32 positions of `tile_rows`, then the most splits
    (blocks of the wave), then the fewest padded positions, then tiles nearest `tile_rows`; a
    split holds at least `tile_rows` positions. (Measured on an H100 at 5000: 15 splits of
    3 × 112 ran 21.5 µs, 16 of 4 × 80 22.1 µs.)
    The last split may hold fewer tiles than the others: its block skips the empty iterations
    (graph/tile_splits.h)."""
    best = None
    for tile in range(64, tile_rows + 1, 16):  # larger tiles outgrow an sm_80 block
        for forloop in range(1, 65):
            part = forloop * tile
            if part < tile_rows:
                continue  # a split holds at least tile_rows positions, as its neighbours do
            splits = -(-context // part)
            last = context - (splits - 1) * part
            if splits == 1 and last <= (forloop - 1) * tile:
                continue  # one split's loop must fill; a last split may run fewer iterations
            waves = -(-KV_HEADS * splits // TARGET_BLOCKS)
            key = (waves, abs(tile - tile_rows) // 32, -splits, splits * part - context,
                   abs(tile - tile_rows), forloop)
            if best is None or key < best[0]:
                best = (key, (splits, forloop, tile))
    return best[1]


def split_plan(context, splits=None, forloop=None, tile_rows=KV_TILE_ROWS):
    """(splits, forloop) for a context, the missing ones derived; raises ValueError when they
    do not tile the context (a context of no whole number of tiles, with neither given, gets
    partial tiles: see partial_plan)."""
    if context <= 0:
        raise ValueError(f"context {context}: must be positive")
    if splits is None and forloop is None and context % tile_rows:
        return partial_plan(context, tile_rows)[:2]
    if splits is None:
        splits = default_splits(context, tile_rows)
    if splits <= 0 or context % splits:
        raise ValueError(f"context {context}: {splits} splits do not divide it")
    if forloop is None:
        if (context // splits) % tile_rows:
            raise ValueError(f"context {context}: a split of {context // splits} positions is "
                             f"not a whole number of {tile_rows}-row tiles")
        forloop = max(1, context // splits // tile_rows)
    if forloop <= 0 or (context // splits) % forloop:
        raise ValueError(f"context {context}: {forloop} iterations do not divide a split of "
                         f"{context // splits} positions")
    return splits, forloop


# --- the program ---------------------------------------------------------------------------

def program_name(context):
    return f"gqa_decode_{context_label(context)}"


def input_shapes(context):
    """The program's inputs: name -> (shape, layout)."""
    return {"Q": ([KV_HEADS, QUERY_HEADS_PER_KV_HEAD, HEAD_DIM], "row_major"),
            "K": ([KV_HEADS, HEAD_DIM, context], "transposed"),
            "V": ([KV_HEADS, context, HEAD_DIM], "row_major")}


def program_text(context):
    """The program as .mg text (the format of schedules/gqa_decode_32k.mg)."""
    lines = [f"# GQA decode: batch 1, {KV_HEADS * QUERY_HEADS_PER_KV_HEAD} query heads in "
             f"{KV_HEADS} KV groups of {QUERY_HEADS_PER_KV_HEAD}, head dim {HEAD_DIM}, "
             f"{context} cached",
             "# positions. The KV cache is stored [kv_head, seq, dim]; K is read through a "
             "transposed view.",
             f"program {program_name(context)}"]
    for name, (shape, layout) in input_shapes(context).items():
        suffix = " layout=transposed" if layout == "transposed" else ""
        lines.append(f"input {name} f16 [{', '.join(map(str, shape))}]{suffix}")
    lines += [f"A = scale(matmul(Q, K), c={SCALE!r})",
              "M = reduce_max(A, dim=2)",
              "E = exp(sub(A, M))",
              "S = reduce_sum(E, dim=2)",
              "O = matmul(div(E, S), V)",
              "output O"]
    return "\n".join(lines) + "\n"


def op(kind, inputs, output, **attributes):
    return dict({"op": kind, "inputs": inputs, "output": output}, **attributes)


def tensor(name, dtype, shape, layout="row_major"):
    return {"name": name, "dtype": dtype, "shape": shape, "layout": layout}


def program_json(context):
    """The program as mugraph.program JSON, op for op what `mugraph` parses from
    program_text (nested calls get the names t0, t1, ... in the parser's order)."""
    return {
        "format": "mugraph.program", "version": 1, "name": program_name(context),
        "inputs": [tensor(name, "f16", shape, layout)
                   for name, (shape, layout) in input_shapes(context).items()],
        "ops": [op("matmul", ["Q", "K"], "t0"),
                op("scale", ["t0"], "A", c=SCALE),
                op("reduce_max", ["A"], "M", dim=2),
                op("sub", ["A", "M"], "t2"),
                op("exp", ["t2"], "E"),
                op("reduce_sum", ["E"], "S", dim=2, to=1),
                op("div", ["E", "S"], "t1"),
                op("matmul", ["t1", "V"], "O")],
        "outputs": ["O"]}


# --- the schedule --------------------------------------------------------------------------

def axis_map(grid, dims):
    """imap/omap: each grid axis to the dim it splits; an axis of size 1 maps -1."""
    return {axis: (dims.get(axis, -1) if grid[axis] > 1 else -1) for axis in ("x", "y", "z")}


def block_input(source, output, grid, dims, forloop, loop_dim, tile=None):
    item = {"op": "input", "from": source, "output": output, "imap": axis_map(grid, dims),
            "fmap": loop_dim if forloop > 1 else -1}
    if tile:
        item["tile"] = tile  # a declared tile: the last one is partial (graph/tile_splits.h)
    return item


def block_output(source, to, grid, dims):
    return {"op": "output", "inputs": [source], "to": to, "omap": axis_map(grid, dims)}


def partial_kernel(splits, forloop, tile_rows=None):
    """Kernel 0: block (head, split) walks its split in `forloop` tiles with a running max;
    with `tile_rows`, K and V declare tiles of that many positions (the last one partial)."""
    k_tile = [1, HEAD_DIM, tile_rows] if tile_rows else None
    v_tile = [1, tile_rows, HEAD_DIM] if tile_rows else None
    grid = {"x": KV_HEADS, "y": splits, "z": 1}
    # Grid x takes one KV head (dim 0 everywhere); grid y one split of the sequence: dim 2 of
    # K's logical [head, dim, seq], dim 1 of V, and the split's slot along dim 2 of the partials.
    outputs = {"x": 0, "y": 2}
    return {
        "op": "block_graph", "name": "gqa_decode_partial",
        "inputs": ["Q", "K", "V"], "outputs": ["Opart", "Spart", "Mpart"],
        "grid": grid, "threads": THREADS, "forloop": forloop,
        "ops": [block_input("Q", "q", grid, {"x": 0}, forloop, -1),
                block_input("K", "k", grid, {"x": 0, "y": 2}, forloop, 2, k_tile),
                block_input("V", "v", grid, {"x": 0, "y": 1}, forloop, 1, v_tile),
                op("matmul", ["q", "k"], "a"),
                op("scale", ["a"], "a_scaled", c=SCALE),
                op("reduce_max", ["a_scaled"], "tile_max", dim=2),
                op("accum_max", ["tile_max"], "m"),
                op("sub", ["a_scaled", "m"], "shifted"),
                op("exp", ["shifted"], "e"),
                op("reduce_sum", ["e"], "s", dim=2, to=1),
                op("matmul", ["e", "v"], "p"),
                op("accum_rescaled_sum", ["s", "m"], "s_acc"),
                op("accum_rescaled_sum", ["p", "m"], "p_acc"),
                block_output("p_acc", "Opart", grid, outputs),
                block_output("s_acc", "Spart", grid, outputs),
                block_output("m", "Mpart", grid, outputs)],
        "fusion": [{"producer": "a", "fused": ["a_scaled"]},
                   {"producer": "shifted", "fused": ["e"]}]}


def combine_kernel(splits):
    """Kernel 1: block (head, query row) loops over the splits' partials, rescaling each by
    exp(m_j - m) against the running max m, then divides."""
    grid = {"x": KV_HEADS, "y": QUERY_HEADS_PER_KV_HEAD, "z": 1}
    dims = {"x": 0, "y": 1}
    return {
        "op": "block_graph", "name": "gqa_decode_combine",
        "inputs": ["Opart", "Spart", "Mpart"], "outputs": ["O"],
        "grid": grid, "threads": THREADS, "forloop": splits,
        "ops": [block_input("Opart", "o", grid, dims, splits, 2),
                block_input("Spart", "s", grid, dims, splits, 2),
                block_input("Mpart", "m_j", grid, dims, splits, 2),
                op("accum_max", ["m_j"], "m"),
                op("sub", ["m_j", "m"], "dm"),
                op("exp", ["dm"], "f"),
                op("mul", ["o", "f"], "o_f"),
                op("mul", ["s", "f"], "s_f"),
                op("accum_rescaled_sum", ["o_f", "m"], "o_sum"),
                op("accum_rescaled_sum", ["s_f", "m"], "s_sum"),
                op("div", ["o_sum", "s_sum"], "out"),
                block_output("out", "O", grid, dims)],
        "fusion": [{"producer": "dm", "fused": ["f"]}]}


def schedule_json(context, splits, forloop, tile_rows=KV_TILE_ROWS):
    """The split-KV schedule (mugraph.schedule v1, no hash: `mugraph` computes it on read)."""
    program = program_json(context)
    partial = context % (splits * forloop * tile_rows) != 0 and context % tile_rows != 0
    rows = [KV_HEADS, QUERY_HEADS_PER_KV_HEAD]
    return {
        "format": "mugraph.schedule", "version": 1, "name": f"{program['name']}.split_kv",
        "program": program,
        "tensors": program["inputs"] + [
            tensor("Opart", "f32", rows + [splits * HEAD_DIM]),
            tensor("Spart", "f32", rows + [splits]),
            tensor("Mpart", "f32", rows + [splits]),
            tensor("O", "f16", rows + [HEAD_DIM])],
        "kernels": [partial_kernel(splits, forloop, tile_rows if partial else None),
                    combine_kernel(splits)],
        "outputs": ["O"]}


# --- comparing with a saved schedule -------------------------------------------------------

def structure(schedule):
    """A schedule without what does not change its kernels: its name, its program's name and
    the hashes."""
    s = json.loads(json.dumps(schedule))
    for d in (s, s.get("program", {})):
        d.pop("name", None)
        d.pop("hash", None)
    return s


def differences(a, b, path="$"):
    """Paths where two JSON values differ (first few)."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = []
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                side = "the generated" if key in a else "the saved"
                found.append(f"{path}.{key}: only in {side}")
            else:
                found += differences(a[key], b[key], f"{path}.{key}")
        return found
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} entries vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]


# --- writing -------------------------------------------------------------------------------

def write_file(path, text, force):
    """Writes text to path; an existing file with other content is kept unless `force`."""
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                print(f"{path}: unchanged")
                return True
        if not force:
            print(f"{path}: exists with other content; kept (--force replaces it)",
                  file=sys.stderr)
            return False
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    print(f"{path}: written")
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("contexts", nargs="+", help="context lengths: 4096, 4k, 64k, ...")
    parser.add_argument("--splits", type=int, help="splits of the KV sequence (grid y of "
                        "kernel 0); default: enough blocks to fill the GPU")
    parser.add_argument("--forloop", type=int, help="iterations per split; default: "
                        f"{KV_TILE_ROWS}-row KV tiles (see --tile-rows)")
    parser.add_argument("--tile-rows", type=int, default=KV_TILE_ROWS,
                        help="KV rows per iteration the defaults aim for")
    parser.add_argument("--out-dir", default="schedules")
    parser.add_argument("--no-program", action="store_true", help="write the schedule only")
    parser.add_argument("--force", action="store_true", help="replace files with other content")
    parser.add_argument("--compare", metavar="SCHEDULE",
                        help="report whether the (one) generated schedule has the kernels of "
                        "this saved one (names and hashes ignored); exit 1 if not")
    args = parser.parse_args()
    if args.compare and len(args.contexts) != 1:
        parser.error("--compare needs exactly one context")
    ok = True
    for text in args.contexts:
        try:
            context = parse_context(text)
            splits, forloop = split_plan(context, args.splits, args.forloop, args.tile_rows)
        except ValueError as e:
            parser.error(str(e))
        tile_rows = args.tile_rows
        if args.splits is None and args.forloop is None and context % args.tile_rows:
            tile_rows = partial_plan(context, args.tile_rows)[2]
        schedule = schedule_json(context, splits, forloop, tile_rows)
        rows = -(-context // (splits * forloop))
        if context % tile_rows and context % (splits * forloop * tile_rows):
            rows = tile_rows
        print(f"{program_name(context)}: {splits} splits x {forloop} iteration(s) of "
              f"{rows} KV rows; {KV_HEADS * splits} partial blocks")
        os.makedirs(args.out_dir, exist_ok=True)
        base = os.path.join(args.out_dir, program_name(context))
        if not args.no_program:
            ok &= write_file(base + ".mg", program_text(context), args.force)
        ok &= write_file(base + ".split_kv.json", json.dumps(schedule, indent=1) + "\n",
                         args.force)
        if args.compare:
            with open(args.compare) as f:
                saved = json.load(f)
            found = differences(structure(schedule), structure(saved))
            for line in found[:20]:
                print(f"  differs at {line}")
            print(f"compared with {args.compare}: "
                  f"{'same kernels' if not found else f'{len(found)} differences'}")
            ok &= not found
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
