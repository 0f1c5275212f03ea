#!/usr/bin/env bash
# Builds the kernel bench for a GPU host (README.md here). Bazel compiles kernel_bench.cu.cc
# and drift_walk_by_hand.cu.cc as it compiles the product's CUDA sources (same clang, flags
# and architectures); this links them with the CUDA 12 runtime linked in statically (PyPI's
# nvidia-cuda-runtime-cu12, fetched into the configure tools' cache), so OUTDIR runs on any
# GPU host whose driver runs CUDA 12, with nothing else installed.
#   benchmarks/kernel_bench/build.sh OUTDIR [BASELINE_REV]
# BASELINE_REV also builds OUTDIR/kernel_bench_baseline: the same bench, compiled by Bazel's
# own command against that revision's tf_ops/ headers (one whose SDK launch the bench
# compiles against), so before and after run on one machine in one command.
set -euo pipefail
out=${1:?usage: build.sh OUTDIR [BASELINE_REV]}
rev=${2:-}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
mkdir -p "$out"
out=$(cd "$out" && pwd)
bazel build //benchmarks/kernel_bench:all //tf_ops/drift_walk:drift_walk_cuda
bin=$(bazel info bazel-bin 2>/dev/null)
defs="$(bazel info output_base 2>/dev/null)/external/local_config_cuda/defs.bzl"
clang=$(sed -n 's/^CUDA_CLANG = "\(.*\)"$/\1/p' "$defs")
rt=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tf_onthefly/cudart-12.9.79
lib=$rt/nvidia/cuda_runtime/lib
if [[ ! -f $lib/libcudart_static.a ]]; then
  python3 -m pip install -q --disable-pip-version-check --no-deps --target "$rt" \
    nvidia-cuda-runtime-cu12==12.9.79
fi
link() {  # OUTPUT OBJECT...
  local o=$1
  shift
  "$clang" -o "$o" "$@" "$lib/libcudart_static.a" -ldl -lrt -lpthread
}
objs=$bin/benchmarks/kernel_bench/_cuda_objs
link "$out/kernel_bench" "$objs/kernel_bench/kernel_bench.pic.o"
link "$out/drift_walk_by_hand" "$objs/drift_walk_by_hand/drift_walk_by_hand.pic.o" \
  "$bin/tf_ops/drift_walk/_cuda_objs/drift_walk_cuda/drift_walk_kernels.pic.o"
if [[ -n $rev ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  git archive "$rev" tf_ops | tar -x -C "$tmp"
  # Bazel's compile command for kernel_bench.cu.cc, with the old headers found first.
  bazel aquery --output=jsonproto \
    'mnemonic("CudaCompile", //benchmarks/kernel_bench:kernel_bench)' >"$tmp/aquery.json"
  mapfile -t cmd < <(python3 - "$tmp/aquery.json" "$tmp" <<'PY'
import json, sys
args = json.load(open(sys.argv[1]))["actions"][0]["arguments"]
tmp = sys.argv[2]
i = args.index("-iquote")
args[i:i] = ["-iquote", tmp]
args[args.index("-o") + 1] = tmp + "/kernel_bench_baseline.o"
print("\n".join(args))
PY
  )
  (cd "$(bazel info execution_root 2>/dev/null)" && "${cmd[@]}")
  link "$out/kernel_bench_baseline" "$tmp/kernel_bench_baseline.o"
fi
echo "built $out: $(ls "$out" | tr '\n' ' ')"
