"""What a compile did, per graph: each subgraph (used, with its measured speedup, or fallen
back, with why) and every aten node left to PyTorch with its reason."""
import contextlib
import sys
import time

from . import cache


def search_line(result, cached):
    source = "cached" if cached else f"searched in {result.get('seconds') or 0:.0f} s"
    variants = result.get("variants", [])
    if not variants:
        return f"no variant ({result.get('no_variants', '?')}), {source}"
    best = variants[0]
    timing = f", {best['measured_us']:.1f} us" if best.get("measured_us") else ""
    return f"{len(variants)} variants, best {best['name']} ({best['level']}{timing}), {source}"


class GraphReport:
    def __init__(self, gm, writer, partition, decisions=None):
        self.gm = gm  # the aten graph the report describes
        # Seconds of each phase of this graph's compile and first call, summed: partition,
        # search_or_cache, check_and_substitute (the variants run and timed on the first call's
        # values; its parts as check_and_substitute/record, /check_variants (within it
        # /load_variants), /time_subgraphs and /substitute), rest_compile (Inductor, each graph
        # it compiled), whole_graph_timing.
        self.phases = {}
        self.decisions = decisions  # cache file of the measured decisions, or None
        self.earlier = cache.load_json(decisions) if decisions else None
        self.writer = writer
        self.partition = partition
        self.entries = {}  # subgraph name -> (cache entry, search result)
        self.subgraphs = {}  # subgraph name -> report row
        self.graph = None  # what runs the whole graph (finished), after the first call
        # (argument, its value before the first call) of each argument the graph writes
        self.inputs_before = []
        fx_names = [n.name for n in gm.graph.nodes if n.op == "call_function"]
        in_subgraph = {writer.origin.get(name) for s in partition["subgraphs"]
                       for name in s["nodes"]}
        reasons = {}
        for left in partition["unsupported"]:
            fx = writer.origin.get(left["node"], left["node"])
            reasons.setdefault(fx, writer.untranslated.get(fx, left["reason"]))
        self.left_to_pytorch = [(name, reasons.get(name, "read only by nodes left to PyTorch"))
                                for name in fx_names if name not in in_subgraph]

    @contextlib.contextmanager
    def phase(self, name):
        """Adds the seconds the block takes to `phases[name]`."""
        start = time.monotonic()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.monotonic() - start

    def searched(self, s, entry, result, cached):
        self.entries[s["name"]] = (entry, result)
        self.subgraphs[s["name"]] = {"name": s["name"], "nodes": len(s["nodes"]),
                                     "program_hash": s["program_hash"], "cached": cached,
                                     "verified": len(result.get("variants", [])),
                                     "status": "searched"}
        dims = [line[4:] for line in s["program_text"].splitlines() if line.startswith("dim ")]
        if dims:  # kernels that take these lengths serve every one (fx_dims.py)
            self.subgraphs[s["name"]]["dynamic"] = dims

    def used(self, s, variant, error):
        self.subgraphs[s["name"]].update(status="used", variant=variant["name"],
                                         max_relative_error=error)

    def fallback(self, s, why):
        self.subgraphs[s["name"]].update(status="pytorch", reason=why)

    def timed(self, name, variant, pytorch_us, ours_us, earlier=False):
        self.subgraphs[name].update(timed_variant=variant, pytorch_us=pytorch_us, ours_us=ours_us,
                                    speedup=pytorch_us / ours_us if ours_us else None,
                                    timed_earlier=earlier)

    def variant_timed(self, name, variant, us, why=None):
        """One variant's time on this GPU, where the search ranked them by its cost model."""
        row = self.subgraphs[name].setdefault("variants_us", {})
        row[variant] = us if why is None else f"did not run under a CUDA graph: {why}"

    def variant_before(self, name):
        """The variant an earlier compile of the same graph timed for this subgraph, or None."""
        row = (self.earlier or {}).get("subgraphs", {}).get(name)
        return row.get("variant") if row else None

    def measured_before(self, name, variant):
        """The times an earlier compile measured for this subgraph's variant, or None."""
        row = (self.earlier or {}).get("subgraphs", {}).get(name)
        return row if row and row.get("variant") == variant else None

    def decided_before(self):
        """The earlier compile's whole-graph decision, if it chose among the same subgraphs."""
        whole = (self.earlier or {}).get("graph")
        if whole and whole.get("used") == sorted(self.used_names()):
            return whole
        return None

    def used_names(self):
        return [name for name, r in self.subgraphs.items() if r["status"] == "used"]

    def remember(self):
        """Stores this compile's measured decisions for the next compile of the same graph:
        each timed subgraph's times with the variant timed (used or not: one PyTorch ran faster
        is not timed again either), and the whole graph's decision, also where no subgraph was
        used and the graph was therefore not timed whole."""
        if not self.decisions or not self.graph:
            return
        rows = {name: {"variant": r.get("timed_variant"), "pytorch_us": r["pytorch_us"],
                       "ours_us": r["ours_us"]}
                for name, r in self.subgraphs.items() if r.get("ours_us") is not None}
        stored = {"subgraphs": rows}
        # The whole graph's decision where it was made by timing, or where none was used;
        # a graph that runs our kernels untimed (end_to_end off) stores its subgraphs alone.
        if self.graph.get("ours_us") is not None or not self.graph["used"]:
            whole = {k: self.graph[k] for k in ("runs", "pytorch_us", "ours_us")}
            whole["used"] = sorted(self.graph["used"])
            stored["graph"] = whole
        cache.store_json(self.decisions, stored)

    def any_used(self):
        return any(r["status"] == "used" for r in self.subgraphs.values())

    def finished(self, chosen, rest, compiled, why=None, pytorch_us=None, ours_us=None,
                 earlier=False, rounds_us=None):
        """What runs the graph from now on: "mugraph" (our kernels in it) or "pytorch"; the
        rest's runner, whether it compiled (why not), and the whole graph's times both ways
        where they were measured (on an earlier compile of the same graph: `earlier`), with
        each timing round's ([PyTorch's], [ours]: timing.interleaved_us)."""
        self.graph = {"runs": chosen, "rest": rest, "compiled": compiled, "why": why,
                      "pytorch_us": pytorch_us, "ours_us": ours_us, "timed_earlier": earlier,
                      "used": self.used_names()}
        if rounds_us is not None:
            self.graph["rounds_us"] = {"pytorch": rounds_us[0], "mugraph": rounds_us[1]}
        if chosen == "pytorch" and (ours_us is not None or why):
            reason = why if ours_us is None else (
                f"the whole graph runs faster without our kernels ({pytorch_us:.1f} us, "
                f"with them {ours_us:.1f} us)")
            for row in self.subgraphs.values():
                if row["status"] == "used":
                    row.update(status="pytorch", reason=reason)

    def as_dict(self):
        return {"subgraphs": list(self.subgraphs.values()), "graph": self.graph,
                "phases_s": dict(self.phases),
                "left_to_pytorch": [{"node": n, "reason": r} for n, r in self.left_to_pytorch]}


def print_report(graph_report, verbose=True, stream=sys.stderr):
    if not verbose:
        return
    rows = list(graph_report.subgraphs.values())
    used = [r for r in rows if r["status"] == "used"]
    print(f"mugraph: {len(used)} of {len(rows)} subgraphs run our kernels", file=stream)
    for r in rows:
        if r["status"] == "used":
            timing = ""
            if r.get("speedup"):
                timing = (f", {r['pytorch_us']:.1f} us in PyTorch -> {r['ours_us']:.1f} us "
                          f"({r['speedup']:.2f}x)")
            lengths = f", at every length of {', '.join(r['dynamic'])}" if r.get("dynamic") else ""
            timed = r.get("variants_us", {})
            fastest = f", the fastest of {len(timed)} timed here" if len(timed) > 1 else ""
            print(f"  {r['name']}: {r['variant']}{timing}{lengths}{fastest}", file=stream)
        else:
            print(f"  {r['name']}: stays in PyTorch: {r.get('reason', '?')}", file=stream)
    if any(r["status"] == "used" and r.get("speedup") for r in rows):
        theirs = sum(r["pytorch_us"] for r in used if r.get("speedup"))
        ours = sum(r["ours_us"] for r in used if r.get("speedup"))
        print(f"mugraph: substituted subgraphs {theirs:.1f} us in PyTorch -> {ours:.1f} us",
              file=stream)
    whole = graph_report.graph
    if whole:
        line = f"mugraph: the rest runs in {whole['rest']}; the graph runs "
        line += "with our kernels" if whole["runs"] == "mugraph" else "without our kernels"
        if whole.get("ours_us"):
            line += (f" (whole graph {whole['pytorch_us']:.1f} us without them, "
                     f"{whole['ours_us']:.1f} us with them"
                     f"{', measured on an earlier compile' if whole['timed_earlier'] else ''})")
        if whole.get("why"):
            line += f": {whole['why']}"
        print(line, file=stream)
    if graph_report.phases:
        print("mugraph: seconds by phase: " + ", ".join(
            f"{k} {v:.1f}" for k, v in graph_report.phases.items()), file=stream)
    print(f"mugraph: {len(graph_report.left_to_pytorch)} aten nodes left to PyTorch", file=stream)
    for name, reason in graph_report.left_to_pytorch:
        print(f"  {name}: {reason}", file=stream)
