"""The persistent kernel cache: one entry per (mugraph version, target, program).

An entry is a directory under $MUGRAPH_CACHE_DIR (default $XDG_CACHE_HOME/mugraph, else
~/.cache/mugraph): program.mg, result.json (the search's verdict: its ranked variants, or why
there are none) and the variants' files as `mugraph superoptimize` writes them. Entries are
written whole into a temporary directory beside them and renamed into place, so a reader
never sees half an entry and two writers never mix theirs.
"""
import hashlib
import json
import os
import shutil
import tempfile

RESULT_FILE = "result.json"


def cache_root():
    if os.environ.get("MUGRAPH_CACHE_DIR"):
        return os.environ["MUGRAPH_CACHE_DIR"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mugraph")


def entry_key(version, target, program_hash, program_text):
    digest = hashlib.sha256("\n".join([version, target, program_text]).encode()).hexdigest()
    return f"{program_hash}-{digest[:16]}"


def entry_path(version, target, program_hash, program_text):
    return os.path.join(cache_root(), target,
                        entry_key(version, target, program_hash, program_text))


def load(path):
    """The entry's result.json, or None where there is no complete entry."""
    return load_json(os.path.join(path, RESULT_FILE))


def store(path, fill):
    """Creates the entry at `path`: fill(tmp_dir) writes its files; the rename publishes it.

    Returns the entry's result; where another process published it first, that one wins."""
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
    try:
        result = fill(tmp)
        with open(os.path.join(tmp, RESULT_FILE + ".tmp"), "w") as f:
            json.dump(result, f, indent=2)
        os.rename(os.path.join(tmp, RESULT_FILE + ".tmp"), os.path.join(tmp, RESULT_FILE))
        try:
            os.rename(tmp, path)
        except OSError:  # published meanwhile by another compile
            existing = load(path)
            if existing is None:
                raise
            return existing
        return result
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def decision_path(*parts):
    """Where the first call's measured decisions for one graph live (backend.py): a JSON
    file keyed by everything the times depend on (graph, device, PyTorch, settings)."""
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return os.path.join(cache_root(), "decisions", digest[:32] + ".json")


def load_json(path):
    """The JSON file's value, or None where it is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def store_json(path, value):
    """Writes value whole: a temporary file beside it, renamed over it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(value, f, indent=2)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
