"""ctypes bindings of libmugraph.so (capi/mugraph.h): the C++ partitioner and kernel launcher.

The library and the `mugraph` command come from a build of this repository: $MUGRAPH_BUILD_DIR
(lib/libmugraph.so, bin/mugraph), or else the repository's build/ next to this package.
"""
import ctypes
import json
import os

MG_OK = 0


class MugraphError(RuntimeError):
    """A failure reported by the C API, with its message."""


def build_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.path.normpath(os.path.join(here, "..", "..", "build"))
    return os.environ.get("MUGRAPH_BUILD_DIR", default)


def cli_path():
    return os.path.join(build_dir(), "bin", "mugraph")


_library = None


def library():
    global _library
    if _library is None:
        path = os.path.join(build_dir(), "lib", "libmugraph.so")
        if not os.path.exists(path):
            raise MugraphError(f"{path} is missing: build mugraph (scripts/setup.sh) or set "
                               "MUGRAPH_BUILD_DIR to a build of it")
        lib = ctypes.CDLL(path)
        lib.mg_version.restype = ctypes.c_char_p
        lib.mg_last_error.restype = ctypes.c_char_p
        lib.mg_free_string.argtypes = [ctypes.c_void_p]
        lib.mg_partition.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.mg_variant_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.mg_variant_close.argtypes = [ctypes.c_void_p]
        lib.mg_variant_describe.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        lib.mg_variant_launch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
                                          ctypes.c_size_t, ctypes.c_uint64, ctypes.c_void_p]
        lib.mg_variant_launch_dims.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t,
            ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t, ctypes.c_uint64, ctypes.c_void_p]
        _library = lib
    return _library


def _check(code):
    if code != MG_OK:
        raise MugraphError(library().mg_last_error().decode("utf-8", "replace"))


def _take_string(pointer):
    try:
        return ctypes.string_at(pointer.value).decode("utf-8")
    finally:
        library().mg_free_string(pointer)


def version():
    return library().mg_version().decode()


def partition(graph):
    """The C++ partition of a graph dict (fx_graph.to_graph_json): subgraphs and left-outs."""
    result = ctypes.c_void_p()
    _check(library().mg_partition(json.dumps(graph).encode(), ctypes.byref(result)))
    return json.loads(_take_string(result))


class Variant:
    """A variant directory loaded on the current CUDA device (the primary context)."""

    def __init__(self, directory):
        self._handle = ctypes.c_void_p()
        _check(library().mg_variant_open(directory.encode(), ctypes.byref(self._handle)))
        described = ctypes.c_void_p()
        _check(library().mg_variant_describe(self._handle, ctypes.byref(described)))
        self.description = json.loads(_take_string(described))
        self.directory = directory

    @property
    def tensors(self):
        return self.description["tensors"]

    @property
    def workspace_bytes(self):
        return self.description["workspace_bytes"]

    @property
    def dims(self):
        """The dynamic dims whose lengths the kernels take ({"name", "min", "max"}, in the
        order launch's `lengths` follow); empty for a static variant."""
        return self.description.get("dims", [])

    def launch(self, addresses, workspace, stream, lengths=()):
        array = (ctypes.c_uint64 * len(addresses))(*addresses)
        if not self.dims:
            _check(library().mg_variant_launch(self._handle, array, len(addresses), workspace,
                                               ctypes.c_void_p(stream)))
            return
        values = (ctypes.c_int64 * len(lengths))(*lengths)
        _check(library().mg_variant_launch_dims(self._handle, array, len(addresses), values,
                                                len(lengths), workspace, ctypes.c_void_p(stream)))

    def __del__(self):
        if getattr(self, "_handle", None) and _library is not None:
            _library.mg_variant_close(self._handle)
            self._handle = None
