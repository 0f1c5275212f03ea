#!/usr/bin/env bash
# Runs the whole CPU test suite (bazel test //..., GPU variants filtered out) against every
# supported TensorFlow (tf_ops/tf_versions.bzl), each in its own virtual environment
# (~/.cache/tf_onthefly/venvs/tf-<minor>, kept between runs), then configures back the
# default. Not in CI: about 20 minutes once the virtual environments exist (docs/packaging.md).
#   tools/testing/test_all_tf.sh [VERSION...]
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
versions=${*:-$(python3 -c "exec(open('tf_ops/tf_versions.bzl').read()); print(' '.join(TF_VERSIONS))")}
venvs=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/tf_onthefly/venvs
summary=$(mktemp)
for v in $versions; do
  venv="$venvs/tf-${v%.*}"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  start=$(date +%s)
  if ! PYTHON_BIN_PATH="$venv/bin/python" ./configure.sh --tf="$v" >/dev/null; then
    echo "TensorFlow $v: configure failed" >> "$summary"; continue
  fi
  log=$(mktemp)
  bazel test //... --test_tag_filters=-requires-gpu >"$log" 2>&1
  rc=$?
  passed=$(grep -cE '^//\S+\s+(\(cached\) )?PASSED' "$log")
  failed=$(grep -E '^//\S+\s+.*(FAILED|TIMEOUT|NO STATUS|INCOMPLETE)' "$log" | awk '{print $1}' | tr '\n' ' ')
  echo "TensorFlow $v: rc=$rc, $passed targets passed, failed: ${failed:-none} ($(( $(date +%s) - start )) s)" | tee -a "$summary"
done
./configure.sh >/dev/null  # back to the default TensorFlow
echo "== summary"; cat "$summary"
