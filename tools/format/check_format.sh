#!/usr/bin/env bash
# Checks (default) or applies (--fix) the formatting of every C++/CUDA and Python source:
# clang-format-16 with .clang-format (*.h, *.cc, *.cu), ruff with ruff.toml; and lints the
# shell scripts with shellcheck (warnings and errors; configure.sh installs it). Run by
# .ci/run. BUILD files are not checked: buildifier is not packaged for this machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
cxx=$(git ls-files '*.h' '*.cc' '*.cu' | grep -v '^third_party/')
py=$(git ls-files '*.py')
RUFF="${PYTHON_BIN_PATH:-python3} -m ruff"
if [ "${1:-}" = "--fix" ]; then
  clang-format-16 -i $cxx
  $RUFF check --fix -q $py || true
  $RUFF format -q $py
  exit 0
fi
rc=0
clang-format-16 --dry-run -Werror $cxx || { echo "C++ not formatted: tools/format/check_format.sh --fix"; rc=1; }
$RUFF format --check -q $py || { echo "Python not formatted: tools/format/check_format.sh --fix"; rc=1; }
$RUFF check -q $py || rc=1
sh=$(git ls-files '*.sh' .ci/run)
if command -v shellcheck >/dev/null 2>&1; then
  shellcheck --severity=warning $sh || { echo "shell scripts: fix what shellcheck says"; rc=1; }
else
  echo "shellcheck not installed (./configure.sh installs it): shell scripts not checked"
fi
[ $rc = 0 ] && echo "format check: OK"
exit $rc
