#!/usr/bin/env bash
# Builds and runs the normal_accuracy checks (README.md here) with plain g++ (no Bazel).
#   tests/normal_accuracy/run.sh [OUTDIR] [N]        components, bound, random_check (N pairs)
#   tests/normal_accuracy/run.sh gpu [OUTDIR]        builds gpu_check only (run it on a GPU host)
# For gpu: CUDA_CLANG (default clang++-16), CUDA_PATH (the CUDA tree the production build
# uses: $(bazel info output_base)/external/local_config_cuda/cuda), CUDA_SYSINC (its
# libcudacxx include dir, optional), CUDART_DIR (a dir with libcudart_static.a, default
# /usr/local/cuda/lib64), ARCH (default sm_90).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=tests/normal_accuracy
cd "$root"
if [[ ${1:-} == gpu ]]; then
  out=${2:-/tmp/normal_accuracy}
  mkdir -p "$out"
  : "${CUDA_PATH:?set CUDA_PATH (see the header of this script)}"
  sysinc=()
  [[ -n ${CUDA_SYSINC:-} ]] && sysinc=(-isystem "$CUDA_SYSINC")
  # The production CUDA flags (third_party/cuda/cuda.bzl), one architecture.
  "${CUDA_CLANG:-clang++-16}" -x cuda -std=c++17 -O3 -ffp-contract=off -Wno-unknown-cuda-version \
    --cuda-path="$CUDA_PATH" "${sysinc[@]}" --cuda-gpu-arch="${ARCH:-sm_90}" -iquote . \
    "$here/gpu_check.cu" -o "$out/gpu_check" -L"${CUDART_DIR:-/usr/local/cuda/lib64}" \
    -lcudart_static -ldl -lpthread -lrt
  echo "built $out/gpu_check: run it on a machine with a GPU (exit status 0: bit-identical)"
  exit 0
fi
out=${1:-/tmp/normal_accuracy}
n=${2:-2e8}
mkdir -p "$out"
flags=(-O2 -std=c++17 -march=x86-64-v3 -ffp-contract=off -fopenmp -iquote "$root")
g++ "${flags[@]}" "$here/components.cc" -o "$out/components"
g++ "${flags[@]}" "$here/bound.cc" -o "$out/bound"
# philox_cpu.cc with its production flags (OTF_COPTS: -O3 -ffp-contract=off, baseline x86-64;
# it picks its AVX2 + FMA path at run time).
g++ -O3 -std=c++17 -ffp-contract=off -iquote "$root" -c tf_ops/common/philox_cpu.cc \
  -o "$out/philox_cpu.o"
g++ "${flags[@]}" "$here/random_check.cc" "$out/philox_cpu.o" -o "$out/random_check"
rc=0
for p in components bound; do
  echo "== $p"
  "$out/$p" || rc=1
done
echo "== random_check $n"
"$out/random_check" "$n" || rc=1
if [[ $rc == 0 ]]; then echo "== all passed"; else echo "== FAILED"; fi
exit $rc
