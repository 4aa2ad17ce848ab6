#!/usr/bin/env bash
# Installs what mugraph needs, then configures and builds. Debian packages for the libraries;
# NVRTC and the CUDA driver API header (cuda.h) from the CUDA toolkit at $MUGRAPH_CUDA_HOME
# (default /usr/local/cuda), or, where there is none, from NVIDIA's wheels on the Python
# package index, unpacked into .whl/ (NVRTC needs no GPU and no driver). Builds into
# $MUGRAPH_BUILD_DIR (default build), and the fuzz targets with clang into
# $MUGRAPH_FUZZ_BUILD_DIR (default build-fuzz; fuzz/README.md). Idempotent: a second run
# with everything in place installs nothing and rebuilds only what changed.
#
# The main build is Release (-O3, no debug info: on CI's 2 cores debug info costs about a
# third of the compile time; MUGRAPH_BUILD_TYPE=RelWithDebInfo for a local build to debug).
#
# There is no second build of the product: the code has no runtime asserts (static_assert
# only), so a Debug build (which the test command made until session 56) compiled the same
# code again, about 170 of CI's 450 compiles, for nothing but the -O0 warnings; the Release
# build's -O3 warns about more. The fuzz build compiles the readers again, with clang.
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
  echo "setup: unknown option '$arg' (it takes none)" >&2
  exit 2
done

cuda_home=${MUGRAPH_CUDA_HOME:-/usr/local/cuda}
build_dir=${MUGRAPH_BUILD_DIR:-build}
build_type=${MUGRAPH_BUILD_TYPE:-Release}
# The wheels of the CUDA release the project is developed and its datasets built with, so
# the PTX is the same as with that toolkit. Any NVRTC from CUDA 11.8 on compiles for sm_90.
wheels=(nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96)
wheel_dir=.whl/cuda13
wheel_root=$wheel_dir/nvidia/cu13
min_cuda_version=11080

sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}" >&2
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${missing[@]}"
}

# Whether $1 holds NVRTC (library and header) and a cuda.h of CUDA >= 11.8.
has_nvrtc() {
  local root=$1 version
  compgen -G "$root/lib64/libnvrtc.so*" >/dev/null ||
    compgen -G "$root/lib/libnvrtc.so*" >/dev/null || return 1
  [ -f "$root/include/nvrtc.h" ] && [ -f "$root/include/cuda.h" ] || return 1
  version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$root/include/cuda.h")
  [ -n "$version" ] && [ "$version" -ge "$min_cuda_version" ]
}

# --target installs outside any Python environment, so Debian's PEP 668 guard does not apply.
# Staged: an interrupted download leaves nothing that looks complete.
install_wheels() {
  echo "setup: no NVRTC of CUDA >= 11.8 at $cuda_home; installing ${wheels[*]} into $wheel_dir" >&2
  python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip || true
  rm -rf "$wheel_dir" "$wheel_dir.partial"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
    --no-deps --only-binary=:all: --target "$wheel_dir.partial" "${wheels[@]}" &&
    mv "$wheel_dir.partial" "$wheel_dir" && has_nvrtc "$wheel_root"
}

# Open MPI is optional to the build (distributed/); installed so `mpirun -np N` works.
apt_install cmake g++ make libz3-dev libeigen3-dev libtbb-dev nlohmann-json3-dev libgtest-dev \
  libcli11-dev libssl-dev libonnx-dev libprotobuf-dev clang libclang-rt-dev \
  libopenmpi-dev openmpi-bin

if has_nvrtc "$cuda_home"; then
  cuda_root=$cuda_home
elif has_nvrtc "$wheel_root" || install_wheels; then
  cuda_root=$PWD/$wheel_root
else
  echo "setup: error: no NVRTC and cuda.h: install the CUDA toolkit (11.8 or later) at" \
    "$cuda_home (or point MUGRAPH_CUDA_HOME at one), or let pip install ${wheels[*]}" >&2
  exit 1
fi

# The Python package (python/mugraph: the torch.compile backend, editable, so it runs from the
# checkout) with torch, and transformers for the model architectures its tests trace.
install_python_package() {
  python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
  if python3 -c "import torch, transformers, mugraph.backend" 2>/dev/null &&
    [ "$(python3 -c 'import mugraph, os; print(os.path.realpath(mugraph.__path__[0]))')" = \
      "$(realpath python/mugraph)" ]; then
    return 0
  fi
  echo "setup: installing the Python package (python/) with torch and transformers" >&2
  PIP_ROOT_USER_ACTION=ignore PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet \
    --disable-pip-version-check torch transformers -e python
}
install_python_package

jobs=$(nproc 2>/dev/null || echo 2)
# The fuzz targets (fuzz/README.md): a clang build of the readers alone, whose targets the
# test suite runs for a few seconds each on the committed corpus (ctest -L fuzz).
fuzz_dir=${MUGRAPH_FUZZ_BUILD_DIR:-build-fuzz}
[[ $fuzz_dir = /* ]] || fuzz_dir=$PWD/$fuzz_dir
CC=clang CXX=clang++ cmake -S . -B "$fuzz_dir" -DMUGRAPH_FUZZ=ON -DCMAKE_BUILD_TYPE=None \
  -DMUGRAPH_CUDA_ROOT="$cuda_root" >/dev/null
cmake --build "$fuzz_dir" -j"$jobs" --target fuzzers
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" -DMUGRAPH_CUDA_ROOT="$cuda_root" \
  -DMUGRAPH_FUZZ_BUILD_DIR="$fuzz_dir" >/dev/null
cmake --build "$build_dir" -j"$jobs"
