#!/usr/bin/env bash
# Runs ON the lent GPU machine, after ../shared/device's install.sh (see docs/benchmarks.md):
#   bash tools/gpu_session.sh tests      # every GPU test, rates, the no-copy profile
#   bash tools/gpu_session.sh sanitize   # demo on the GPU, compute-sanitizer memcheck/racecheck
# Everything runs from the installed wheel (.devtf/artifacts, staged by tools/stage_device.sh).
# Logs go to $OUT (the device tool brings them back).
set -uo pipefail
OUT=${OUT:-/tmp/otf-out}; mkdir -p "$OUT"
. .devtf/extras/env.sh
[ -d /tmp/otf/tf_onthefly ] || python3 -m pip install -q --no-index --no-deps --target /tmp/otf .devtf/artifacts/*.whl
export PYTHONPATH=/tmp/otf:$PYTHONPATH PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
S=$OUT/summary.txt
case "${1:-tests}" in
  tests)
    (nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u; python3 -m tf_onthefly.info) > "$OUT/gpu.txt" 2>&1
    for t in random_batch teacher_task procedural_shapes random_walk data demo; do
      echo "== $t" >> "$OUT/tests.log"
      python3 "tests/${t}_test.py" --test_device=gpu >> "$OUT/tests.log" 2>&1
      echo "$t gpu rc=$?" >> "$S"
    done
    grep -E "^== |CPU vs GPU|accuracy|teacher_task normal|^Ran |^OK|^FAILED" "$OUT/tests.log" >> "$S"
    python3 -m tf_onthefly.rates --repeats=5 --unroll=5 --json="$OUT/rates.json" > "$OUT/rates.log" 2>&1
    echo "rates rc=$?" >> "$S"
    python3 tests/gpu_no_copy_profile.py > "$OUT/profile.log" 2>&1
    echo "profile rc=$?" >> "$S"
    ;;
  sanitize)
    python3 -m tf_onthefly.demo --device=gpu --steps=3000 >> "$S" 2>&1
    for tool in memcheck racecheck; do
      timeout 240 compute-sanitizer --tool "$tool" python3 tests/gpu_sanitizer_smoke.py > "$OUT/$tool.log" 2>&1
      echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)" >> "$S"
    done
    ;;
esac
cat "$S"
