"""One subgraph's program to verified variants: `mugraph superoptimize`, through the cache."""
import json
import os
import subprocess

from . import _capi, cache


class Options:
    """What the search may spend per subgraph, and whether it times variants on the GPU."""

    def __init__(self, time_limit=60, max_variants=4, profile=True, threads=None):
        self.time_limit = time_limit
        self.max_variants = max_variants
        self.profile = profile
        self.threads = threads


def _search(program_text, options, target, directory):
    program = os.path.join(directory, "program.mg")
    with open(program, "w") as f:
        f.write(program_text)
    command = [_capi.cli_path(), "superoptimize", program, "--out",
               os.path.join(directory, "variants"), "--time-limit", str(options.time_limit),
               "--max-variants", str(options.max_variants), "--arch", target]
    if options.profile:
        command.append("--profile")
    if options.threads:
        command += ["--threads", str(options.threads)]
    done = subprocess.run(command, capture_output=True, text=True)
    summary_path = os.path.join(directory, "variants", "summary.json")
    summary = {}
    if os.path.exists(summary_path):
        with open(summary_path) as f:
            summary = json.load(f)
    variants = [v for v in summary.get("variants", [])
                if os.path.exists(os.path.join(directory, "variants", v["name"], "manifest.json"))]
    result = {"variants": [{"name": v["name"], "hash": v["hash"], "level": v["level"],
                            "measured_us": v.get("measured_us"), "cost_us": v.get("cost")}
                           for v in variants],
              "ranked_by": summary.get("ranked_by"), "seconds": summary.get("seconds"),
              "exit_code": done.returncode}
    # What --profile's GPU check dropped, with the error it measured (kept for the report).
    dropped = [line.removeprefix("mugraph: ") for line in done.stderr.splitlines()
               if ": dropped, " in line]
    if dropped:
        result["dropped"] = dropped
    if not variants:
        reason = summary.get("no_variants") or done.stderr.strip().splitlines()[-1:] or ["?"]
        result["no_variants"] = reason if isinstance(reason, str) else reason[0]
        if dropped:
            result["no_variants"] += " (" + "; ".join(dropped) + ")"
    return result


def variants_for(program_text, program_hash, target, options):
    """(entry directory, result, cached): the program's ranked variants, searched once."""
    path = cache.entry_path(_capi.version(), target, program_hash, program_text)
    result = cache.load(path)
    if result is not None:
        return path, result, True
    result = cache.store(path, lambda tmp: _search(program_text, options, target, tmp))
    return path, result, False


def variant_directory(entry, name):
    return os.path.join(entry, "variants", name)
