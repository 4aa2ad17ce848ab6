#!/usr/bin/env bash
# Packs what a GPU machine needs to run mugraph built here (see DESIGN.md, "GPU machines"):
# stripped binaries plus the shared libraries the GPU image lacks (Z3, oneTBB, and libonnx's
# protobuf classes for ONNX models), into devbuild/ (ignored by git), small enough to carry.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf devbuild && mkdir -p devbuild/bin devbuild/lib
for b in mugraph gpu_tests fingerprint_bench; do
  [ -x "build/bin/$b" ] && strip -o "devbuild/bin/$b" "build/bin/$b"
done
[ -f build/lib/libmugraph.so ] && strip -o devbuild/lib/libmugraph.so build/lib/libmugraph.so
for lib in libz3.so.4 libtbb.so.12 libonnx_proto.so.1 libprotobuf.so.32; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" devbuild/lib/
done
du -sh devbuild
