#!/usr/bin/env bash
# The libraries load where TensorFlow has no CUDA runtime (tensorflow-cpu): no
# built library may leave a CUDA runtime symbol (cuda*, __cuda*) for the dynamic loader to
# find. Every one the GPU kernels call must be in OTF_CUDA_RUNTIME_ENTRY_POINTS
# (tf_ops/common/cuda_runtime.h), whose forwarders find the runtime at load time; the
# forwarders must stay hidden (never stand in for TensorFlow's runtime).
#
# The core (--core LIB, libtf_onthefly_core.so) links no framework: no TensorFlow, Python,
# JAX or PyTorch library among its dependencies (readelf -d), and no undefined symbol
# (nm -D) but the C and C++ runtimes' (versioned GLIBC_*, GLIBCXX_*, CXXABI_*, GCC_*), so
# no TensorFlow, absl, XLA or protobuf symbol either.
#   cuda_runtime_symbols_test.sh HEADER [--core LIB] LIBRARY...
set -euo pipefail
header=$1
shift
listed=$(sed -n 's/^ *X(\([^,]*\), *\([A-Za-z_0-9]*\),.*/\2/p' "$header" | sort -u)
[ "$(echo "$listed" | wc -l)" -ge 10 ] || { echo "FAIL: cannot read the entry point list of $header"; exit 1; }
fail=0
core_checks() {
  local lib=$1 name
  name=$(basename "$lib")
  local needed
  needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for dep in $needed; do
    case $dep in
      libc.so.6 | libm.so.6 | libstdc++.so.6 | libgcc_s.so.1 | libdl.so.2 | libpthread.so.0 | ld-linux-x86-64.so.2) ;;
      *) echo "FAIL: $name needs $dep (the core links no framework: libc, libm, libdl, libstdc++ only)"; fail=1 ;;
    esac
  done
  local foreign
  foreign=$(nm -D --undefined-only "$lib" | awk '{print $2}' |
    grep -vE '@(GLIBC|GLIBCXX|CXXABI|GCC)_[0-9.]+$' | grep -vE '^(__gmon_start__|_ITM_(de)?registerTMCloneTable)$' || true)
  if [ -n "$foreign" ]; then
    echo "FAIL: $name leaves symbols for another library to define (none may come from TensorFlow):"
    echo "$foreign" | head -20
    fail=1
  fi
  echo "$name: needs only $(echo "$needed" | tr '\n' ' ')and no framework symbol"
}
for arg in "$@"; do
  if [ "$arg" = --core ]; then core_next=1; continue; fi
  lib=$arg
  name=$(basename "$lib")
  if [ "${core_next:-0}" = 1 ]; then core_checks "$lib"; core_next=0; fi
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
  echo "$name: $(nm -D --undefined-only "$lib" | wc -l) undefined symbols, none of the CUDA runtime"
done
[ "$fail" -eq 0 ] && echo "OK: $(echo "$listed" | wc -l) entry points listed; no library leaves one undefined"
exit "$fail"
