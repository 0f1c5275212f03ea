#!/usr/bin/env bash
# Prints a folder holding what building an op library against TensorFlow VERSION needs:
# include/ and libtensorflow_{framework,cc}.so.2 from that release's wheel (downloaded once,
# cached; the wheel itself is not kept). Python-independent: only headers and libraries.
#   tools/build/tf_release.sh 2.18.1
set -euo pipefail
version=${1:?usage: tf_release.sh VERSION}
dir=${OTF_TF_RELEASES:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tf_onthefly/tf-versions}/$version
if [ ! -f "$dir/.complete" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  PYTHON=${PYTHON_BIN_PATH:-python3}
  "$PYTHON" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.11 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux_2_27_x86_64 -d "$tmp" "tensorflow==$version" >&2
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$tmp" && unzip -q tensorflow-*.whl 'tensorflow/include/*' 'tensorflow/libtensorflow_framework.so.2' \
    'tensorflow/libtensorflow_cc.so.2')
  mv "$tmp/tensorflow/include" "$tmp"/tensorflow/libtensorflow_*.so.2 "$dir/"
  touch "$dir/.complete"
fi
echo "$dir"
