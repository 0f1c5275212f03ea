#!/usr/bin/env bash
# Builds the kernel bench (README.md here): kernels.cubin from the working tree's headers,
# baseline.cubin from git revision BASELINE's (if given), the host harness, and
# drift_walk_by_hand (drift_walk's kernels launched outside TensorFlow; it links the CUDA 12
# runtime from PyPI's nvidia-cuda-runtime-cu12, fetched into the configure tools folder).
#   benchmarks/kernel_bench/build.sh OUTDIR [BASELINE_REV]
set -euo pipefail
out=${1:?usage: build.sh OUTDIR [BASELINE_REV]}
rev=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
mkdir -p "$out"
base=$(bazel info output_base 2>/dev/null)
defs="$base/external/local_config_cuda/defs.bzl"
[[ -f $defs ]] || { echo "run ./configure.sh and a bazel build first (no $defs)" >&2; exit 1; }
read -r clang cuda_path sysinc < <(python3 - "$defs" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
get = lambda k: re.search(k + r' = "([^"]+)"', s).group(1)
inc = re.findall(r'"([^"]+)"', re.search(r"CUDA_SYSTEM_INCLUDES = \[(.*?)\]", s, re.S).group(1))
print(get("CUDA_CLANG"), get("CUDA_PATH"), ":".join(inc))
PY
)
arch=${OTF_BENCH_ARCH:-sm_90}
# The production flags (third_party/cuda/cuda.bzl), one architecture, device code only.
cuda_flags=(-x cuda -std=c++17 -O3 -ffp-contract=off -Wno-unknown-cuda-version
            -Xclang -fcuda-allow-variadic-functions -DCCCL_IGNORE_DEPRECATED_API
            -include third_party/cuda/clang_cuda_prelude.h
            --cuda-path="$cuda_path" --cuda-gpu-arch="$arch")
for d in ${sysinc//:/ }; do cuda_flags+=(-isystem "$d"); done
"$clang" "${cuda_flags[@]}" --cuda-device-only -iquote . -c benchmarks/kernel_bench/kernels.cu.cc \
  -o "$out/kernels.cubin"
names() { readelf -sW "$1" 2>/dev/null | grep -o '_Z[A-Za-z0-9_]*Kernel[A-Za-z0-9_]*' | sort -u > "$1.names"; }
names "$out/kernels.cubin"
if [[ -n $rev ]]; then
  tmp=$(mktemp -d)
  git archive "$rev" tf_ops | tar -x -C "$tmp"
  "$clang" "${cuda_flags[@]}" --cuda-device-only -iquote "$tmp" -iquote . \
    -c benchmarks/kernel_bench/kernels.cu.cc \
    -o "$out/baseline.cubin"
  names "$out/baseline.cubin"
  rm -rf "$tmp"
fi
g++ -std=c++17 -O2 -iquote . -isystem "$cuda_path/include" benchmarks/kernel_bench/harness.cc -ldl \
  -o "$out/harness"
rt=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tf_onthefly/cudart-12.9.79
if [[ ! -f $rt/nvidia/cuda_runtime/lib/libcudart.so.12 ]]; then
  python3 -m pip install -q --disable-pip-version-check --no-deps --target "$rt" \
    nvidia-cuda-runtime-cu12==12.9.79
fi
"$clang" "${cuda_flags[@]}" -iquote . benchmarks/kernel_bench/drift_walk_by_hand.cu.cc \
  tf_ops/drift_walk/drift_walk_kernels.cu.cc -L"$rt/nvidia/cuda_runtime/lib" -l:libcudart.so.12 \
  -o "$out/drift_walk_by_hand"
echo "built $out: $(ls "$out" | tr '\n' ' ')"
