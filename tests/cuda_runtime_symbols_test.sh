#!/usr/bin/env bash
# The libraries load where TensorFlow has no CUDA runtime (tensorflow-cpu): no
# built library may leave a CUDA runtime symbol (cuda*, __cuda*) for the dynamic loader to
# find. Every one the GPU kernels call must be in OTF_CUDA_RUNTIME_ENTRY_POINTS
# (tf_ops/common/cuda_runtime.h), whose forwarders find the runtime at load time; the
# forwarders must stay hidden (never stand in for TensorFlow's runtime), and the kernels
# library must not need TensorFlow's framework library.
#   cuda_runtime_symbols_test.sh HEADER LIBRARY...
set -euo pipefail
header=$1
shift
listed=$(sed -n 's/^ *X(\([^,]*\), *\([A-Za-z_0-9]*\),.*/\2/p' "$header" | sort -u)
[ "$(echo "$listed" | wc -l)" -ge 10 ] || { echo "FAIL: cannot read the entry point list of $header"; exit 1; }
fail=0
for lib in "$@"; do
  name=$(basename "$lib")
  undefined=$(nm -D --undefined-only "$lib" | awk '{print $2}' | sed 's/@.*//' | grep -E '^_*cuda' || true)
  for sym in $undefined; do
    if echo "$listed" | grep -qx "$sym"; then
      echo "FAIL: $name: $sym is listed but left undefined (is //tf_ops/common:cuda_runtime linked?)"
    else
      echo "FAIL: $name: calls $sym, which is not in OTF_CUDA_RUNTIME_ENTRY_POINTS ($header): add it there"
    fi
    fail=1
  done
  exported=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -E '^_*cuda' || true)
  [ -z "$exported" ] || { echo "FAIL: $name exports CUDA runtime symbols: $exported"; fail=1; }
  if readelf -d "$lib" | grep -E 'NEEDED.*libtensorflow_framework' >/dev/null && [[ $name == lib*kernels.so ]]; then
    echo "FAIL: $name needs libtensorflow_framework (the kernels library must load without it)"; fail=1
  fi
  echo "$name: $(nm -D --undefined-only "$lib" | wc -l) undefined symbols, none of the CUDA runtime"
done
[ "$fail" -eq 0 ] && echo "OK: $(echo "$listed" | wc -l) entry points listed; no library leaves one undefined"
exit "$fail"
