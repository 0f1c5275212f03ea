#!/bin/sh
echo "bazel coverage is not available offline: remote_coverage_tools is a stub (docs/build.md)" >&2
exit 1
