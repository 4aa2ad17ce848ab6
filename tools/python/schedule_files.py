"""Writing the files the schedule generators produce (tools/python/*_schedules.py)."""
import os


def write_atomic(path, text):
    """Writes `text` to `path` through a temporary file, so no reader sees half a file."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
