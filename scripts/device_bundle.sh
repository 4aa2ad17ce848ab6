#!/usr/bin/env bash
# Packs what a GPU machine needs to run mugraph built here (see DESIGN.md, "GPU machines"):
# stripped binaries plus the shared libraries the GPU image lacks (Z3, oneTBB, libonnx's
# protobuf classes for ONNX models, and Open MPI's in a build with MPI), into devbuild/ (ignored
# by git), small enough to carry.
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
# A build with MPI links Open MPI's libraries, which the GPU image may lack: carried too, so the
# binary loads there. A process started without mpirun never initializes MPI, so they are only
# loaded; mpirun itself is not carried (`device_run.sh distributed` says when there is none).
ldd build/bin/mugraph | awk '/lib(mpi|mpi_cxx|open-pal|open-rte|hwloc|event_core|event_pthreads)[-.]/ { print $3 }' |
  xargs -r -I{} cp -L {} devbuild/lib/
du -sh devbuild
