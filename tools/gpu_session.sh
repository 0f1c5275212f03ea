#!/usr/bin/env bash
# Runs ON the lent GPU machine, after ../shared/device's install.sh (docs/benchmarks.md says
# how the session was staged). Everything runs from the installed wheel in
# .devtf/artifacts (tools/stage_device.sh); a baseline wheel there (baseline-*.whl, an
# older build) runs with today's Python package and its own op library, and baseline
# modules (baseline-NAME.py) run in today's wheel in place of its NAME.py, so before and
# after come from one session.
#   bash tools/gpu_session.sh tests [NAME...]   # test files (default: every one) with --test_device=gpu
#   bash tools/gpu_session.sh smoke      # the wheel's smoke test (tests/wheel_smoke.py)
#   bash tools/gpu_session.sh steps      # per-step cost, all three of:
#   bash tools/gpu_session.sh cost       #   op_cost (TF's ops and the placement rows; under XLA)
#   bash tools/gpu_session.sh bench      #   the bench's rows (3 rounds of 1 s)
#   bash tools/gpu_session.sh copies     #   PCIe traffic per step, one GPU and mirrored
#   bash tools/gpu_session.sh default N  # the bench's default run, as a user runs it (run N: 1, then 2)
#   bash tools/gpu_session.sh big        # wide and cnn at fit64 alone (5 rounds), and the wide step's trace
#   bash tools/gpu_session.sh trace      # where a step's time goes, path by path (step_timeline)
#   bash tools/gpu_session.sh mirrored [--attribute]  # PCIe traffic and copies under MirroredStrategy
#   bash tools/gpu_session.sh rates      # rates with peers, op timelines
#   bash tools/gpu_session.sh sanitize   # compute-sanitizer memcheck/racecheck, the demo
# Logs go to $OUT (the device tool brings them back).
set -uo pipefail
OUT=${OUT:-/tmp/otf-out}; mkdir -p "$OUT"
. .devtf/extras/env.sh
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
new=/tmp/otf old=/tmp/otf_old
if [ ! -d $new/tf_onthefly ]; then
  python3 -m pip install -q --no-index --no-deps --target $new $(ls .devtf/artifacts/tf_onthefly-*.whl | grep -v baseline)
fi
if [ ! -d $old/tf_onthefly ] && ls .devtf/artifacts/baseline-*.whl >/dev/null 2>&1; then
  # The baseline's op libraries under today's Python package: the two differ only there.
  # (pip refuses the renamed file; a wheel is a zip of what it installs)
  python3 -m zipfile -e .devtf/artifacts/baseline-*.whl $old
  cp $new/tf_onthefly/*.py $old/tf_onthefly/
elif [ ! -d $old/tf_onthefly ] && ls .devtf/artifacts/baseline-*.py >/dev/null 2>&1; then
  # A Python baseline: today's wheel with the modules baseline-NAME.py (an older commit's
  # NAME.py) in place of its own.
  cp -r $new $old
  for f in .devtf/artifacts/baseline-*.py; do cp "$f" "$old/tf_onthefly/${f##*/baseline-}"; done
fi
S=$OUT/summary.txt
with() { local pkg=$1; shift; PYTHONPATH=$pkg:$PYTHONPATH "$@"; }
bench_rows() { for f in "$@"; do grep -E "^\S+ +[0-9]+ (fit|loop)" "$OUT/$f.log" >> "$S"; done; }
case "${1:-tests}" in
  tests)
    (nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u; with $new python3 -m tf_onthefly.info) > "$OUT/gpu.txt" 2>&1
    shift || true
    for f in $([ $# -gt 0 ] && printf 'tests/%s_test.py ' "$@" || ls tests/*_test.py); do
      t=$(basename "$f" .py)
      [ "$t" = tutorial_test ] && continue  # reads the docs: no device involved
      echo "== $t" >> "$OUT/tests.log"
      timeout 900 env PYTHONPATH=$new:$PYTHONPATH python3 "$f" --test_device=gpu >> "$OUT/tests.log" 2>&1
      echo "$t gpu rc=$?" >> "$S"
    done
    grep -E "^== |CPU vs GPU|accuracy|teacher_task normal|fuzz outcomes|^Ran |^OK|^FAILED" "$OUT/tests.log" >> "$S"
    ;;
  cost|steps)
    # What one op adds in a graph loop, with TensorFlow's own ops and the placement rows
    for pkg in $old $new; do
      [ -d $pkg ] || continue
      with $pkg python3 tools/op_cost.py --label="$pkg" --placement >> "$OUT/op_cost.jsonl" 2>>"$OUT/steps.err"
    done
    with $new python3 tools/op_cost.py --label="$new" --jit >> "$OUT/op_cost.jsonl" 2>>"$OUT/steps.err"
    cat "$OUT/op_cost.jsonl" >> "$S"
    ;;&
  bench|steps)
    # The bench's rows (3 rounds of 1 s); wide and cnn without the host paths (minutes each)
    [ -d $old ] && with $old python3 -m tf_onthefly.bench --device=gpu --configs=seed --modes=fit64,loop64 \
      --jit=off,on --paths=constant,op-in-step,tf-stateless --seconds=1 --out="$OUT/bench_old" > "$OUT/bench_old.log" 2>&1
    with $new python3 -m tf_onthefly.bench --device=gpu --configs=seed --modes=fit1,fit64,loop64 --jit=off,on \
      --paths=constant,numpy,op-in-step,tf-stateless --seconds=1 --out="$OUT/bench_seed" > "$OUT/bench_seed.log" 2>&1
    with $new python3 -m tf_onthefly.bench --device=gpu --configs=wide,cnn --modes=fit64 --jit=off,on \
      --paths=constant,op-in-step,tf-stateless --seconds=1 --out="$OUT/bench_wide_cnn" > "$OUT/bench_wide_cnn.log" 2>&1
    bench_rows bench_old bench_seed bench_wide_cnn
    ;;&
  default)
    # The default run, as a user runs it: `default 1`, then `default 2` back to back (each
    # call within a device command's time; docs/bench.md: time and bound checked on both)
    shift || true
    for n in ${@:-1}; do
      with $new python3 -m tf_onthefly.bench --out="$OUT/bench_default$n" > "$OUT/bench_default$n.log" 2>&1
      echo "bench default run $n rc=$?" >> "$S"
      grep -E "^tf_onthefly .* bench on|the run took|measurement problem|^\S+ +[0-9]+ (fit|loop)" "$OUT/bench_default$n.log" >> "$S"
    done
    ;;
  big)
    # wide and cnn at steps_per_execution 64 (5 rounds), then where the wide step's time goes
    with $new python3 -m tf_onthefly.bench --device=gpu --configs=wide,cnn --modes=fit64 --jit=off,on \
      --paths=constant,op-in-step,tf-stateless --seconds=1 --rounds=5 --out="$OUT/bench_big" > "$OUT/bench_big.log" 2>&1
    bench_rows bench_big
    for spec in "--mode=fit64 --jit" "--mode=fit64"; do
      echo "== wide $spec" >> "$OUT/step_timeline.log"
      with $new timeout 150 python3 tools/step_timeline.py --config=wide $spec >> "$OUT/step_timeline.log" 2>>"$OUT/trace.err"
    done
    grep -E "^==|against" "$OUT/step_timeline.log" >> "$S"
    ;;
  copies|steps)
    # PCIe traffic per step beyond the constant batch (NVML), one GPU and MirroredStrategy
    with $new timeout 300 python3 tests/gpu_no_copy_profile.py > "$OUT/no_copy.log" 2>&1
    with $new timeout 200 python3 tests/gpu_no_copy_profile.py --mirrored > "$OUT/no_copy_mirrored.log" 2>&1
    grep -E "beyond|no batch bytes" "$OUT/no_copy.log" "$OUT/no_copy_mirrored.log" >> "$S"
    ;;
  trace)
    for pkg in $old $new; do
      [ -d $pkg ] || continue
      for spec in "--mode=fit64 --jit" "--mode=loop64 --jit" "--mode=loop64"; do
        echo "== $pkg $spec" >> "$OUT/step_timeline.log"
        with $pkg timeout 240 python3 tools/step_timeline.py $spec >> "$OUT/step_timeline.log" 2>>"$OUT/trace.err"
      done
    done
    grep -E "^==|against" "$OUT/step_timeline.log" >> "$S"
    ;;
  mirrored)
    shift || true  # further arguments go to the profile (--attribute, --spe=...)
    with $new timeout 400 python3 tests/gpu_no_copy_profile.py --mirrored --spe=1 "$@" > "$OUT/no_copy_mirrored.log" 2>&1
    grep -E "beyond|^\{" "$OUT/no_copy_mirrored.log" | cut -c1-400 >> "$S"
    ;;
  smoke)
    (cd /tmp && with $new python3 -m tf_onthefly.info && with $new python3 "$OLDPWD/tests/wheel_smoke.py" --any-location) \
      > "$OUT/smoke.log" 2>&1
    echo "wheel smoke rc=$?" >> "$S"
    grep -E "TensorFlow|GPU |XLA|smoke|op library" "$OUT/smoke.log" >> "$S"
    ;;
  rates)
    with $new python3 -m tf_onthefly.rates --mib=256,1024,4096 --repeats=5 --unroll=20 --json="$OUT/rates.json" \
      --only="random_batch uniform,random_batch normal,stateless,copy,torch,jax,cupy" > "$OUT/rates.log" 2>&1
    echo "rates rc=$?" >> "$S"
    for args in "--mib=256" "--mib=1024"; do
      echo "== op_timeline $args" >> "$OUT/timeline.log"
      with $new python3 tools/op_timeline.py $args >> "$OUT/timeline.log" 2>&1
    done
    grep -E "^==|call wall|GPU span|host:|no device events" "$OUT/timeline.log" >> "$S"
    ;;
  sanitize)
    shift || true
    for tool in ${@:-memcheck racecheck}; do
      timeout 240 env PYTHONPATH=$new:$PYTHONPATH compute-sanitizer --tool "$tool" python3 tests/gpu_sanitizer_smoke.py \
        > "$OUT/$tool.log" 2>&1
      echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)" >> "$S"
    done
    ;;
esac
cat "$S"
