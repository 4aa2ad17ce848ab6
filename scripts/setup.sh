#!/usr/bin/env bash
# Installs what mugraph needs (Debian packages; the CUDA toolkit is expected at
# /usr/local/cuda), then configures and builds into ./build. Idempotent: a second run with
# everything in place installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make libz3-dev libeigen3-dev libtbb-dev nlohmann-json3-dev libgtest-dev libcli11-dev libssl-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${missing[@]}"
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && [ ! -f /usr/local/cuda/lib64/libnvrtc.so ]; then
  echo "setup: note: no CUDA toolkit at /usr/local/cuda (code generation will be unavailable)" >&2
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
